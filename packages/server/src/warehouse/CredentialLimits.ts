/**
 * Per upstream credential, until when the platform said its request budget is spent (the `credential_limits`
 * table's owner). The upstream clients report an exhausted budget (a 429's `Retry-After`, a `RateLimit-Remaining`
 * of 0 with its `RateLimit-Reset`: @acs/upstream/UpstreamRateLimits); it is written here for every instance's sync
 * scheduler, which starts no sync on the credential until then. A credential is named by a hash of its API client
 * id, never the id itself (connections keep it sealed).
 */
import { type RateLimitObservation, RateLimitObserver } from "@acs/upstream/UpstreamRateLimits"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Schema } from "effect"
import { credentialKeyOf } from "../accounts/CredentialKey.ts"
import { decodeRows } from "../db/Rows.ts"

const LimitRow = Schema.Struct({ credentialKey: Schema.String, limitedUntil: Schema.Union(Schema.DateFromSelf, Schema.DateFromString) })
const decodeLimits = decodeRows(LimitRow)

/** Observations closer than this to the one written last change nothing worth a write. */
const WRITE_GRANULARITY_MS = 1_000

export class CredentialLimits extends Effect.Service<CredentialLimits>()("acs/CredentialLimits", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // What this instance wrote last per credential: a sync spending its last requests hears "0 left" on each.
    const written = new Map<string, number>()

    const record = (observation: RateLimitObservation) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const key = credentialKeyOf(observation.clientId)
        const until = now + observation.limitedForMs
        const last = written.get(key)
        if (last !== undefined && Math.abs(last - until) < WRITE_GRANULARITY_MS) return
        written.set(key, until)
        yield* sql`
          INSERT INTO credential_limits (credential_key, limited_until, status, observed_at)
          VALUES (${key}, ${new Date(until)}, ${observation.status}, ${new Date(now)})
          ON CONFLICT (credential_key) DO UPDATE SET limited_until = excluded.limited_until, status = excluded.status,
            observed_at = excluded.observed_at`
        yield* Effect.logInfo("upstream credential rate-limited").pipe(
          Effect.annotateLogs({ credential: key, until: new Date(until).toISOString(), status: observation.status })
        )
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("recording a credential's rate limit failed", cause)))

    /** Every credential still limited at `now`, with the time its budget resets. */
    const limitedAt = (now: number) =>
      sql`SELECT credential_key, limited_until FROM credential_limits WHERE limited_until > ${new Date(now)}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeLimits),
        Effect.map((rows) => new Map(rows.map((row) => [row.credentialKey, row.limitedUntil.getTime()])))
      )

    return { record, limitedAt } as const
  })
}) {}

/** The upstream clients' observer (UpstreamLive provides it to every client it makes), recording here. */
export const RateLimitObserverLive = Layer.effect(
  RateLimitObserver,
  Effect.map(CredentialLimits, (limits) => RateLimitObserver.of({ observe: limits.record }))
).pipe(Layer.provide(CredentialLimits.Default))
