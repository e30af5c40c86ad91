/**
 * The proposal endpoints over REST, one per kind of the catalog: the operation (access, then the
 * proposal); 201 + `Location`, or 200 + `Idempotency-Replay: true` on a replay; 200 with nothing recorded
 * for `?preview=true`.
 */
import { Api } from "@acs/domain/Api"
import type { ProposalKind, ProposalOperationName } from "@acs/domain/ProposalKinds"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { catalog } from "../actions/kinds/Catalog.ts"
import { makeOperate } from "../operations/Operate.ts"
import type { Input } from "../operations/OperationTypes.ts"

export const ProposalsHandlers = HttpApiBuilder.group(Api, "proposals", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate

    const handlerFor = <Op extends ProposalOperationName>(operation: Op) => (input: Input<Op>) =>
      Effect.gen(function*() {
        const { grant, success } = yield* operate.withGrant(operation, input)
        // A preview (no action): 200 as declared, no Location.
        if (!("actionId" in success)) return success
        const replayed = success.replayed === true
        yield* HttpApp.appendPreResponseHandler((_request, answer) =>
          Effect.succeed(
            HttpServerResponse.setHeaders(replayed ? HttpServerResponse.setStatus(answer, 200) : answer, {
              location: `/api/v1/accounts/${grant.account.projectId}/actions/${success.actionId}`,
              ...(replayed ? { "idempotency-replay": "true" } : {})
            })
          )
        )
        return success
      })

    let result = handlers
    for (const kind of catalog) {
      if (kind.declaration === undefined) continue
      // The group's endpoints are generated from the same catalog, so each iteration handles one of them;
      // the compiler cannot follow a loop over a tuple, hence the widening back to the group's handler type.
      result = result.handle(kind.declaration.operation, handlerFor(kind.declaration.operation)) as unknown as typeof handlers
    }
    return result as unknown as ReturnType<typeof handlers.handle<ProposalKind["operation"], never>>
  }))
