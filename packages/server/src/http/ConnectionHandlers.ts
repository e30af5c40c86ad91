/** The upstream connection and account discovery over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const ConnectionHandlers = HttpApiBuilder.group(Api, "connection", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("getConnection", operate.handler("getConnection"))
      .handle("updateConnection", operate.handler("updateConnection"))
      .handle("createConnectionKeyPair", operate.handler("createConnectionKeyPair"))
      .handle("discoverAccounts", operate.handler("discoverAccounts"))
  }))
