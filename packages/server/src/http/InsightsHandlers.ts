/** The plan, audits and the brief over REST. */
import { Api } from "@acs/domain/Api"
import { clampLimit } from "@acs/domain/Warehouse"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Brief } from "../accounts/Brief.ts"
import { Access } from "../auth/Access.ts"
import { Audits } from "../plan/Audits.ts"
import { Plan } from "../plan/Plan.ts"

export const InsightsHandlers = HttpApiBuilder.group(Api, "insights", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const plan = yield* Plan
    const audits = yield* Audits
    const brief = yield* Brief
    return handlers
      .handle("getPlan", ({ path, urlParams }) =>
        access.check("getPlan", path.projectId).pipe(Effect.flatMap((grant) => plan.get(grant, clampLimit(urlParams.limit)))))
      .handle("runAudit", ({ path }) => access.check("runAudit", path.projectId).pipe(Effect.flatMap(audits.run)))
      .handle("getAudit", ({ path }) =>
        access.check("getAudit", path.projectId).pipe(Effect.flatMap((grant) => audits.get(grant, path.auditId))))
      .handle("getBrief", ({ path }) => access.check("getBrief", path.projectId).pipe(Effect.flatMap(brief.get)))
      .handle("updateBrief", ({ path, payload }) =>
        access.check("updateBrief", path.projectId).pipe(Effect.flatMap((grant) => brief.put(grant, payload.text))))
  }))
