/** API key administration over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const KeysHandlers = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("createKey", operate.handler("createKey"))
      .handle("listKeys", operate.handler("listKeys"))
      .handle("revokeKey", operate.handler("revokeKey"))
      .handle("createAccountKey", operate.handler("createAccountKey"))
  }))
