/** The operator's brief per account (`GET/PUT /accounts/{projectId}/brief`): prose goals and constraints for agents. */
import type { Brief as BriefDocument } from "@acs/domain/Brief"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "./Granted.ts"

interface BriefRow {
  readonly text: string
  readonly updatedAt: string | Date
  readonly updatedBy: string
}

const empty: BriefDocument = { text: "", updatedAt: null, updatedBy: null }

const toBrief = (row: BriefRow | undefined): BriefDocument =>
  row === undefined ? empty : { text: row.text, updatedAt: new Date(row.updatedAt).toISOString(), updatedBy: row.updatedBy }

export class Brief extends Effect.Service<Brief>()("acs/Brief", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const get = (grant: Granted<"getBrief">) =>
      sql<BriefRow>`SELECT text, updated_at, updated_by FROM briefs WHERE project_id = ${grant.account.projectId}`.pipe(
        Effect.map((rows) => toBrief(rows[0])),
        Effect.orDie,
        Effect.withSpan("Brief.get")
      )

    const put = (grant: Granted<"updateBrief">, text: string) =>
      sql<BriefRow>`
        INSERT INTO briefs (project_id, text, updated_by)
        VALUES (${grant.account.projectId}, ${text}, ${`${grant.principal.kind}:${grant.principal.id}`})
        ON CONFLICT (project_id) DO UPDATE SET text = EXCLUDED.text, updated_at = now(), updated_by = EXCLUDED.updated_by
        RETURNING text, updated_at, updated_by`.pipe(
        Effect.map((rows) => toBrief(rows[0])),
        Effect.orDie,
        Effect.tap(() => Effect.logInfo("brief changed").pipe(Effect.annotateLogs({ projectId: grant.account.projectId }))),
        Effect.withSpan("Brief.put")
      )

    return { get, put } as const
  })
}) {}
