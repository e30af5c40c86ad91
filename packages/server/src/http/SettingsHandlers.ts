/** The org settings (kill switch) over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const SettingsHandlers = HttpApiBuilder.group(Api, "settings", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("getSettings", operate.handler("getSettings"))
      .handle("updateSettings", operate.handler("updateSettings"))
  }))
