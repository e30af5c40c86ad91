/**
 * `Idempotency-Key` (docs/contract.md 4): scoped to (principal, key), kept 24 hours. The key's row, with the
 * request's answer (the action's id is chosen before anything is written), is inserted first inside the
 * proposal transaction, so a concurrent twin blocks on the unique index until the first commits and then
 * replays the stored answer; if the first rolls back, the twin proceeds as the first.
 */
import { Conflict } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import * as Crypto from "node:crypto"
import { HOT_SPAN } from "../../db/HotSpan.ts"

export const IDEMPOTENCY_TTL_HOURS = 24

/** The stored answer of a finished request: a proposal (201) or a validation failure with its ledger row (422). */
export const StoredAnswer = Schema.Union(
  Schema.Struct({ status: Schema.Literal(201), actionId: Schema.String }),
  Schema.Struct({ status: Schema.Literal(422), actionId: Schema.String, validationErrors: Schema.Array(Schema.String), message: Schema.String })
)
export type StoredAnswer = typeof StoredAnswer.Type

/** A key's row as a twin reads it; every committed row has its answer. */
const decodeStored = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  requestHash: Schema.String,
  response: Schema.NullOr(StoredAnswer)
})))

export type Claim = { readonly _tag: "Fresh" } | { readonly _tag: "Replay"; readonly answer: StoredAnswer }

/** What makes two requests "the same": method, path and body. */
export const requestHash = (method: string, path: string, body: unknown): string =>
  Crypto.createHash("sha256").update(`${method} ${path}\n${JSON.stringify(body)}`).digest("hex")

export class Idempotency extends Effect.Service<Idempotency>()("acs/Idempotency", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Must run inside the proposal transaction, which commits `answer` with the key unless it rolls back. An
     * expired row is taken over as if absent.
     */
    const claim = (principal: string, key: string, hash: string, answer: StoredAnswer) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // The update takes only the inserted row's values and constants (a cluster refuses a function there).
        const inserted = yield* sql`/* prepared */
          INSERT INTO idempotency_keys (principal, idempotency_key, request_hash, status, response, action_id, created_at)
          VALUES (${principal}, ${key}, ${hash}, ${answer.status}, ${JSON.stringify(answer)}::jsonb, ${answer.actionId}, ${new Date(now)})
          ON CONFLICT (principal, idempotency_key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, response = EXCLUDED.response,
              action_id = EXCLUDED.action_id, created_at = EXCLUDED.created_at
            WHERE idempotency_keys.created_at < ${new Date(now - IDEMPOTENCY_TTL_HOURS * 3_600_000)}
          RETURNING principal`
        if (inserted.length > 0) return { _tag: "Fresh" } as Claim
        const stored = yield* sql`
          SELECT request_hash, response FROM idempotency_keys
          WHERE principal = ${principal} AND idempotency_key = ${key}`.pipe(Effect.flatMap(decodeStored), Effect.orDie)
        const row = stored[0]
        if (row === undefined || row.response === null) {
          // Only a committed row is visible here, and every committed row has its answer.
          return yield* Effect.dieMessage("idempotency row without an answer")
        }
        if (row.requestHash !== hash) {
          return yield* new Conflict({
            message: "this Idempotency-Key was already used for another request (a different method, path or body); use a new key"
          })
        }
        return { _tag: "Replay", answer: row.response } as Claim
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Idempotency.claim", HOT_SPAN))

    /** Drops expired keys (run by the worker's housekeeping). */
    const purgeExpired = sql`DELETE FROM idempotency_keys
      WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`.pipe(Effect.asVoid, Effect.orDie)

    return { claim, purgeExpired } as const
  })
}) {}
