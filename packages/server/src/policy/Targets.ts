/** The operator's CPA target band per account (`GET/PUT /accounts/{projectId}/targets`), read by the budget rule. */
import { Targets as TargetsDocument } from "@acs/domain/Actions"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"
import { invalidateKey, invalidating } from "../db/Invalidation.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"

/** A `targets` row (its account and author aside) is the document itself; this module is the table's owner. */
export const TargetsRow = TargetsDocument
export const targetsColumns = columnsOf(TargetsRow)
export const decodeTargets = decodeRows(TargetsRow)

const empty: TargetsDocument = { cpaBand: null, campaigns: {} }

export class Targets extends Effect.Service<Targets>()("acs/Targets", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const get = (grant: Granted<"getTargets">) =>
      sql`SELECT ${sql.unsafe(targetsColumns)} FROM targets WHERE project_id = ${grant.account.projectId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeTargets),
        Effect.map((rows) => rows[0] ?? empty),
        Effect.withSpan("Targets.get")
      )

    const put = (grant: Granted<"updateTargets">, targets: TargetsDocument) =>
      invalidating(sql, "t", sql`
        INSERT INTO targets (project_id, cpa_band, campaigns, updated_by)
        VALUES (${grant.account.projectId}, ${targets.cpaBand === null ? null : JSON.stringify(targets.cpaBand)}::jsonb,
          ${JSON.stringify(targets.campaigns)}::jsonb, ${`${grant.principal.kind}:${grant.principal.id}`})
        ON CONFLICT (project_id) DO UPDATE SET cpa_band = EXCLUDED.cpa_band, campaigns = EXCLUDED.campaigns,
          updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
        RETURNING ${sql.unsafe(targetsColumns)}, ${invalidateKey(sql, sql`targets.project_id`)}`).pipe(
        Effect.orDie,
        Effect.flatMap(decodeTargets),
        Effect.map((rows) => rows[0] ?? empty),
        Effect.tap(() => Effect.logInfo("targets changed").pipe(Effect.annotateLogs({ projectId: grant.account.projectId }))),
        Effect.withSpan("Targets.put")
      )

    return { get, put } as const
  })
}) {}
