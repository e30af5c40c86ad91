/** The plan, audits and the brief over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const InsightsHandlers = HttpApiBuilder.group(Api, "insights", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("getPlan", operate.handler("getPlan"))
      .handle("runAudit", operate.handler("runAudit"))
      .handle("getAudit", operate.handler("getAudit"))
      .handle("getBrief", operate.handler("getBrief"))
      .handle("updateBrief", operate.handler("updateBrief"))
  }))
