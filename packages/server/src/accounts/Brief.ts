/** The operator's brief per account (`GET/PUT /accounts/{projectId}/brief`): prose goals and constraints for agents. */
import type { Brief as BriefDocument } from "@acs/domain/Brief"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import type { Granted } from "./Granted.ts"

/** A `briefs` row (its account aside), this module being the table's owner. */
const BriefRow = Schema.Struct({ text: Schema.String, updatedAt: Schema.String, updatedBy: Schema.String })
type BriefRow = typeof BriefRow.Type

const briefColumns = columnsOf(BriefRow)
const decodeBriefs = decodeRows(BriefRow)

const empty: BriefDocument = { text: "", updatedAt: null, updatedBy: null }

const toBrief = (row: BriefRow | undefined): BriefDocument =>
  row === undefined ? empty : { text: row.text, updatedAt: new Date(row.updatedAt).toISOString(), updatedBy: row.updatedBy }

export class Brief extends Effect.Service<Brief>()("acs/Brief", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const get = (grant: Granted<"getBrief">) =>
      sql`SELECT ${sql.unsafe(briefColumns)} FROM briefs WHERE project_id = ${grant.account.projectId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeBriefs),
        Effect.map((rows) => toBrief(rows[0])),
        Effect.withSpan("Brief.get")
      )

    const put = (grant: Granted<"updateBrief">, text: string) =>
      sql`
        INSERT INTO briefs (project_id, text, updated_by)
        VALUES (${grant.account.projectId}, ${text}, ${`${grant.principal.kind}:${grant.principal.id}`})
        ON CONFLICT (project_id) DO UPDATE SET text = EXCLUDED.text, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
        RETURNING ${sql.unsafe(briefColumns)}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeBriefs),
        Effect.map((rows) => toBrief(rows[0])),
        Effect.tap(() => Effect.logInfo("brief changed").pipe(Effect.annotateLogs({ projectId: grant.account.projectId }))),
        Effect.withSpan("Brief.put")
      )

    return { get, put } as const
  })
}) {}
