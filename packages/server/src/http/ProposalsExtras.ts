/**
 * What the proposal endpoints (one per kind of the catalog) add to their operation over REST: 201 +
 * `Location`, or 200 + `Idempotency-Replay: true` on a replay; 200 with nothing recorded for `?preview=true`.
 */
import type { ProposalOperationName } from "@acs/domain/ProposalKinds"
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { catalog } from "../actions/kinds/Catalog.ts"
import { makeOperate } from "../operations/Operate.ts"
import type { Input } from "../operations/OperationTypes.ts"
import type { RestExtras } from "./RestExtras.ts"

export const ProposalsExtras = Effect.map(makeOperate, (operate): RestExtras => {
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
  // The group's endpoints are generated from the same catalog, so each entry is its own endpoint's handler;
  // the compiler cannot follow the loop to each operation's name, hence the one assertion.
  return Object.fromEntries(
    catalog.flatMap((kind) => kind.declaration === undefined ? [] : [[kind.declaration.operation, handlerFor(kind.declaration.operation)] as const])
  ) as RestExtras
})
