/** What the sync endpoint adds to its operation over REST: the new sync's `Location`. */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"
import type { RestExtras } from "./RestExtras.ts"

export const WarehouseExtras = Effect.map(makeOperate, (operate): RestExtras => ({
  startSync: (input) =>
    Effect.gen(function*() {
      const { grant, success } = yield* operate.withGrant("startSync", input)
      yield* HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeader(
          response,
          "location",
          `/api/v1/accounts/${grant.account.projectId}/syncs/${success.syncId}`
        ))
      )
      return success
    })
}))
