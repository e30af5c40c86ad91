/** The ledger, approvals, decisions, revert, the policy document and the target band over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const ActionsHandlers = HttpApiBuilder.group(Api, "actions", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      // The ledger answers its page already in the schema's encoded form (Ledger.list, toEncodedRecord): it is
      // written as it is, not walked through the schema's encoder again (docs/decisions/pipeline.md).
      .handle("listActions", (input) => Effect.map(operate.handler("listActions")(input), (page) => HttpServerResponse.unsafeJson(page)))
      .handle("getAction", operate.handler("getAction"))
      .handle("listApprovals", operate.handler("listApprovals"))
      .handle("approveAction", operate.handler("approveAction"))
      .handle("rejectAction", operate.handler("rejectAction"))
      .handle("revertAction", (input) =>
        Effect.gen(function*() {
          const { grant, success } = yield* operate.withGrant("revertAction", input)
          // A preview (nothing recorded): 200 as declared, no Location.
          if (!("actionId" in success)) return success
          yield* HttpApp.appendPreResponseHandler((_request, answer) =>
            Effect.succeed(HttpServerResponse.setHeader(
              answer,
              "location",
              `/api/v1/accounts/${grant.account.projectId}/actions/${success.actionId}`
            ))
          )
          return success
        }))
      .handle("getPolicy", operate.handler("getPolicy"))
      .handle("getTargets", operate.handler("getTargets"))
      .handle("updateTargets", operate.handler("updateTargets"))
  }))
