/**
 * What a `slack_app` message shows that its event does not carry (webhooks/SlackAppMessage.ts): the account's name
 * and currency, and when a waiting change expires (its org's approvalTtlHours after it was queued, or after a
 * changeset was submitted: actions/pipeline/ApprovalExpiry.ts, actions/changesets/ChangesetExpiry.ts). Read
 * with two statements for a whole group of deliveries, and only for `slack_app` endpoints: the other formats'
 * deliveries cost nothing more.
 */
import { SqlClient } from "@effect/sql"
import { Config, Effect, Option, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"
import type { SlackAppFacts as Facts } from "./SlackAppMessage.ts"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const text = (u: unknown): string => (typeof u === "string" ? u : "")

const decodeAccounts = decodeRows(Schema.Struct({
  projectId: Schema.String,
  name: Schema.String,
  currency: Schema.String,
  approvalTtlHours: Schema.Int
}))
const decodeExpiries = decodeRows(Schema.Struct({ actionId: Schema.String, expiresAt: Schema.String }))

export class SlackAppFacts extends Effect.Service<SlackAppFacts>()("acs/SlackAppFacts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const configured = yield* Config.string("PUBLIC_URL").pipe(Config.option)
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    /** The console's address in links: PUBLIC_URL, else this instance's own (as the webhook worker's). */
    const publicUrl = Option.getOrElse(configured, () => `http://127.0.0.1:${port}`)

    /** The facts of each event body (the same order). */
    const forBodies = (bodies: ReadonlyArray<Readonly<Record<string, unknown>>>) =>
      Effect.gen(function*() {
        const projectIds = [...new Set(bodies.map((b) => text(b["projectId"])).filter((p) => p !== ""))]
        const actionIds = [
          ...new Set(bodies.map((b) => (isObject(b["data"]) && isObject(b["data"]["action"]) ? text(b["data"]["action"]["actionId"]) : "")).filter((a) => a !== ""))
        ]
        const accounts = projectIds.length === 0 ? [] : yield* sql`
          SELECT a.project_id, a.name, a.currency, o.approval_ttl_hours
          FROM accounts a JOIN orgs o ON o.org_id = a.org_id WHERE a.project_id = ANY(${projectIds}::text[])`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeAccounts)
        )
        const expiries = actionIds.length === 0 ? [] : yield* sql`
          SELECT x.action_id, to_char((COALESCE(x.queued_at, x.created_at) + make_interval(hours => o.approval_ttl_hours)) AT TIME ZONE 'UTC',
            'YYYY-MM-DD"T"HH24:MI"Z"') AS expires_at
          FROM actions x JOIN orgs o ON o.org_id = x.org_id
          WHERE x.action_id = ANY(${actionIds}::text[]) AND x.status = 'proposed'`.pipe(Effect.orDie, Effect.flatMap(decodeExpiries))
        const account = new Map(accounts.map((a) => [a.projectId, a]))
        const expiry = new Map(expiries.map((e) => [e.actionId, e.expiresAt]))
        return bodies.map((body): Facts => {
          const known = account.get(text(body["projectId"]))
          const data = isObject(body["data"]) ? body["data"] : {}
          const action = isObject(data["action"]) ? data["action"] : undefined
          const changeset = isObject(data["changeset"]) ? data["changeset"] : undefined
          const submittedAt = changeset === undefined ? "" : text(changeset["submittedAt"])
          const expiresAt = action !== undefined
            ? expiry.get(text(action["actionId"])) ?? null
            : changeset !== undefined && submittedAt !== "" && known !== undefined && text(changeset["status"]) === "queued"
            ? new Date(Date.parse(submittedAt) + known.approvalTtlHours * 3_600_000).toISOString().slice(0, 16) + "Z"
            : null
          return { accountName: known?.name ?? null, currency: known?.currency ?? null, expiresAt }
        })
      }).pipe(Effect.withSpan("SlackAppFacts.forBodies"))

    return { publicUrl, forBodies } as const
  })
}) {}
