/**
 * The `sessions` table's owner (docs/decisions/architecture.md "One owner per table"): a session starts and ends
 * here, whoever ends it (sign-out and a password change in Sessions.ts, a person disabled in People.ts). The
 * lookup of a live session, a read joined with the person, stays with Sessions.ts and its cache.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { invalidateKey, invalidating } from "../db/Invalidation.ts"
import { decodeRows } from "../db/Rows.ts"

/** What a started session answers: when it expires. */
const StartedRow = Schema.Struct({ expiresAt: Schema.String })
const decodeStarted = decodeRows(StartedRow)

/** For the `RETURNING` of a statement that changes sessions: the changed session, which every instance drops at commit. */
const changedSession = (sql: SqlClient.SqlClient) => invalidateKey(sql, sql`token_hash`)

export const sessionStatements = (sql: SqlClient.SqlClient) => ({
  /** A new session of the person, stored by its token's hash; answers its expiry. */
  start: (tokenHash: string, personId: string, orgId: string, ttlSeconds: number) =>
    sql`
      INSERT INTO sessions (token_hash, person_id, org_id, expires_at)
      VALUES (${tokenHash}, ${personId}, ${orgId}, now() + make_interval(secs => ${ttlSeconds}))
      RETURNING expires_at`.pipe(Effect.orDie, Effect.flatMap(decodeStarted), Effect.map((rows) => rows[0]!.expiresAt)),

  /** Every live session of the person ends (a changed password, a disabled person). */
  endAllOf: (personId: string) =>
    invalidating(sql, "s", sql`UPDATE sessions SET ended_at = now() WHERE person_id = ${personId} AND ended_at IS NULL RETURNING ${changedSession(sql)}`).pipe(
      Effect.asVoid,
      Effect.orDie
    ),

  /** One session ends (sign-out). */
  end: (tokenHash: string) =>
    invalidating(sql, "s", sql`UPDATE sessions SET ended_at = now() WHERE token_hash = ${tokenHash} AND ended_at IS NULL RETURNING ${changedSession(sql)}`).pipe(
      Effect.asVoid,
      Effect.orDie
    )
})
