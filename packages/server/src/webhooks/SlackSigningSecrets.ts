/**
 * Each org's Slack signing secret, sealed at rest (db/SecretBox.ts, as the upstream credentials are), and the
 * check of a Slack request against it (docs/contract.md 6.1): `X-Slack-Signature` is `v0=` + HMAC-SHA256 of
 * `v0:<X-Slack-Request-Timestamp>:<raw body>`, compared in constant time; the timestamp within 5 minutes of now;
 * a signature seen before refused (a replay), remembered in PostgreSQL for the window so every instance refuses it.
 * The request URL names no org: the org is the one whose secret the signature verifies under
 * (docs/decisions/events-and-webhooks.md "Slack approvals: one request URL for every org").
 */
import { SLACK_INTERACTIONS_PATH, type SlackIntegration } from "@acs/domain/Slack"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import type { Granted } from "../accounts/Granted.ts"
import { decodeRows } from "../db/Rows.ts"
import { SecretBox } from "../db/SecretBox.ts"

/** A `slack_signing_secrets` row, this module being the table's owner (and `slack_seen_signatures`'). */
export const SlackSigningSecretRow = Schema.Struct({
  orgId: Schema.String,
  secretSealed: Schema.String,
  setBy: Schema.String,
  setAt: Schema.String
})
const decodeSecrets = decodeRows(SlackSigningSecretRow)

/** How far a request's timestamp may be from now, either way: Slack's own advice. */
export const SLACK_WINDOW_SECONDS = 5 * 60

/** `v0=` + the hex HMAC-SHA256 of `v0:<timestamp>:<body>` with `secret`: what Slack sends. */
export const slackSignature = (secret: string, timestamp: string, body: string): string =>
  `v0=${Crypto.createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && Crypto.timingSafeEqual(left, right)
}

/** Why a request is refused, in words for the Slack app's admin (never which org was tried). */
export type SlackRefusal = "missing" | "stale" | "bad_signature" | "replayed"

export class SlackSigningSecrets extends Effect.Service<SlackSigningSecrets>()("acs/SlackSigningSecrets", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox

    const integration = (orgId: string): Effect.Effect<SlackIntegration> =>
      sql`SELECT org_id, secret_sealed, set_by, set_at FROM slack_signing_secrets WHERE org_id = ${orgId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeSecrets),
        Effect.map((rows) => ({
          signingSecretSet: rows[0] !== undefined,
          setAt: rows[0] === undefined ? null : new Date(rows[0].setAt).toISOString(),
          interactionsPath: SLACK_INTERACTIONS_PATH
        }))
      )

    const get = (grant: Granted<"getSlackIntegration">) => integration(grant.orgId)

    const set = (grant: Granted<"setSlackSigningSecret">, signingSecret: string) =>
      Effect.gen(function*() {
        yield* sql`
          INSERT INTO slack_signing_secrets (org_id, secret_sealed, set_by, set_at)
          VALUES (${grant.orgId}, ${box.seal(signingSecret)}, ${grant.principal.id}, now())
          ON CONFLICT (org_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`.pipe(
          Effect.orDie
        )
        yield* Effect.logInfo("Slack signing secret set").pipe(Effect.annotateLogs({ orgId: grant.orgId, by: grant.principal.id }))
        return yield* integration(grant.orgId)
      }).pipe(Effect.withSpan("SlackSigningSecrets.set"))

    /**
     * The org whose secret signed `body`, or why the request is refused. Checked in this order, before anything
     * reads the body: the headers present, the timestamp in the window, the signature under some org's secret,
     * then the signature never seen before (remembered now, for the window).
     */
    const verify = (body: string, timestamp: string | undefined, signature: string | undefined) =>
      Effect.gen(function*() {
        if (timestamp === undefined || signature === undefined || !/^\d{1,12}$/.test(timestamp)) {
          return yield* Effect.fail<SlackRefusal>("missing")
        }
        const now = yield* Clock.currentTimeMillis
        if (Math.abs(now / 1000 - Number(timestamp)) > SLACK_WINDOW_SECONDS) return yield* Effect.fail<SlackRefusal>("stale")
        const secrets = yield* sql`SELECT org_id, secret_sealed, set_by, set_at FROM slack_signing_secrets`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeSecrets)
        )
        // Every org's secret is tried (no early exit), so the time taken says nothing of which one matched.
        let orgId: string | undefined
        for (const row of secrets) {
          const secret = box.open(row.secretSealed)
          if (Option.isSome(secret) && sameText(slackSignature(secret.value, timestamp, body), signature)) orgId ??= row.orgId
        }
        if (orgId === undefined) return yield* Effect.fail<SlackRefusal>("bad_signature")
        const cutoff = new Date(now - 2 * SLACK_WINDOW_SECONDS * 1000)
        // Kept past the window on either side of now, so no timestamp the window admits finds its signature forgotten.
        yield* sql`DELETE FROM slack_seen_signatures WHERE seen_at < ${cutoff}`.pipe(Effect.orDie)
        const fresh = yield* sql`
          INSERT INTO slack_seen_signatures (signature, seen_at) VALUES (${signature}, ${new Date(now)})
          ON CONFLICT (signature) DO NOTHING RETURNING 1 AS n`.pipe(Effect.orDie)
        if (fresh.length === 0) return yield* Effect.fail<SlackRefusal>("replayed")
        return orgId
      }).pipe(Effect.withSpan("SlackSigningSecrets.verify"))

    return { get, set, verify } as const
  }),
  dependencies: [SecretBox.Default]
}) {}
