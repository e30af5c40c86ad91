/**
 * The guard's track record of an account (docs/contract.md 3.4, `GET …/verdicts`): its watches whose applied day
 * falls in the window, counted by their verdict (the latest review's, `pending` before the first), in total, by kind
 * and by proposer, in one statement over `watches` and the actions they judge (docs/decisions/guard.md). A changeset's
 * watch counts once: as kind `changeset`, under the person or key that opened it.
 */
import { type VerdictCounts, VerdictsByKind, VerdictsByProposer, type VerdictSummary } from "@acs/domain/Guard"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { Granted } from "../auth/Access.ts"
import { decodeRows } from "../db/Rows.ts"
import { addDays, dateIn } from "../warehouse/Window.ts"

const Bucket = Schema.Struct({
  bucket: Schema.Literal("total", "kind", "proposer"),
  kind: Schema.NullOr(VerdictsByKind.fields.kind),
  proposerKind: Schema.NullOr(VerdictsByProposer.fields.proposedBy.fields.kind),
  proposerId: Schema.NullOr(Schema.String),
  proposerName: Schema.NullOr(Schema.String),
  passed: Schema.Int,
  failed: Schema.Int,
  inconclusive: Schema.Int,
  pending: Schema.Int
})
const decodeBuckets = decodeRows(Bucket)

const countsOf = ({ failed, inconclusive, passed, pending }: typeof Bucket.Type): VerdictCounts => ({ passed, failed, inconclusive, pending })

export class Verdicts extends Effect.Service<Verdicts>()("acs/Verdicts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The account's watched changes applied in the last `days` days (today included, its time zone), by verdict. */
    const summary = ({ account }: Granted<"getVerdicts">, days: number) =>
      Effect.gen(function*() {
        const since = addDays(dateIn(yield* Clock.currentTimeMillis, account.timeZone), -(days - 1))
        const rows = yield* sql`
          WITH counted AS (
            SELECT w.verdict,
              CASE WHEN w.changeset_id IS NULL THEN a.kind ELSE 'changeset' END AS kind,
              p.proposer ->> 'kind' AS proposer_kind, p.proposer ->> 'id' AS proposer_id, p.proposer ->> 'name' AS proposer_name,
              a.created_at
            FROM watches w
            JOIN actions a ON a.project_id = w.project_id AND a.action_id = w.action_ids[1]
            LEFT JOIN changesets c ON c.project_id = w.project_id AND c.changeset_id = w.changeset_id
            CROSS JOIN LATERAL (SELECT CASE WHEN w.changeset_id IS NULL THEN a.proposed_by ELSE c.opened_by END AS proposer) p
            WHERE w.project_id = ${account.projectId} AND w.applied_day >= ${since}::date)
          SELECT CASE WHEN GROUPING(kind) = 0 THEN 'kind' WHEN GROUPING(proposer_id) = 0 THEN 'proposer' ELSE 'total' END AS bucket,
            kind, proposer_kind, proposer_id,
            -- A key or person renamed since: the name on its latest change.
            (array_agg(proposer_name ORDER BY created_at DESC))[1] AS proposer_name,
            count(*) FILTER (WHERE verdict = 'passed')::int AS passed,
            count(*) FILTER (WHERE verdict = 'failed')::int AS failed,
            count(*) FILTER (WHERE verdict = 'inconclusive')::int AS inconclusive,
            count(*) FILTER (WHERE verdict = 'pending')::int AS pending
          FROM counted
          GROUP BY GROUPING SETS ((), (kind), (proposer_kind, proposer_id))
          ORDER BY bucket, count(*) DESC, kind, proposer_id`.pipe(Effect.flatMap(decodeBuckets))
        const total = rows.find((row) => row.bucket === "total")
        return {
          days,
          since,
          total: total === undefined ? { passed: 0, failed: 0, inconclusive: 0, pending: 0 } : countsOf(total),
          byKind: rows.flatMap((row) => row.bucket === "kind" && row.kind !== null ? [{ kind: row.kind, ...countsOf(row) }] : []),
          byProposer: rows.flatMap((row) =>
            row.bucket === "proposer" && row.proposerKind !== null && row.proposerId !== null
              ? [{ proposedBy: { kind: row.proposerKind, id: row.proposerId, name: row.proposerName ?? "" }, ...countsOf(row) }]
              : []
          )
        } satisfies VerdictSummary
      }).pipe(Effect.orDie, Effect.withSpan("Verdicts.summary"))

    return { summary } as const
  })
}) {}
