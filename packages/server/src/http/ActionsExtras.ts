/** What the ledger's REST endpoints add to their operations: the page as already encoded, a revert's `Location`. */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"
import type { RestExtras } from "./RestExtras.ts"

export const ActionsExtras = Effect.map(makeOperate, (operate): RestExtras => ({
  // The ledger answers its page already in the schema's encoded form (Ledger.list, toEncodedRecord): it is
  // written as it is, not walked through the schema's encoder again (docs/decisions/pipeline.md).
  listActions: (input) => Effect.map(operate.handler("listActions")(input), (page) => HttpServerResponse.unsafeJson(page)),
  revertAction: (input) =>
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
    })
}))
