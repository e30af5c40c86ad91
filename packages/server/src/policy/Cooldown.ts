/**
 * Cooldowns (docs/contract.md 3.3): after a change of an entity's budget, bid or status, another change of the same
 * family on the same entity that raises spend does not auto-apply until the family's cooldown has passed, so a bid
 * raised on Monday is not compounded on Tuesday. Outside changes count: `actions.cooldown_keys` covers them, and
 * every action marks its keys in `cooldown_marks` when approved and when applied (the statement that records it does:
 * actions/pipeline/Transitions.ts `markCooldowns`), so a change on its way counts too. A change that lowers spend (a cut, a pause) never waits: undoing is never blocked.
 * The rule is pure (`raisesSpend`, `cooldownReason`); `acs_recent_change` reads the marks.
 */
import type { CooldownHours } from "@acs/domain/Guardrails"
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"

export type CooldownFamily = keyof CooldownHours

/** The family of each kind a cooldown applies to. */
export const COOLDOWN_FAMILIES: Readonly<Record<string, CooldownFamily>> = {
  budget_change: "budget",
  // A daily cap's apply is a budget change; a target CPA's has no budget fields, so it never raises spend here.
  apply_recommendation: "budget",
  keyword_bid_change: "bid",
  default_bid_change: "bid",
  campaign_status: "status",
  ad_group_status: "status",
  ad_status: "status",
  keyword_status: "status"
}

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const num = (u: unknown): number | null => (typeof u === "number" ? u : null)
const ENABLED: ReadonlySet<unknown> = new Set(["ENABLED", "ACTIVE"])

/** Whether a prepared payload moves spend up: a higher budget or bid (a keyword bid on the default counts), an entity enabled. */
export const raisesSpend = (kind: string, payload: unknown): boolean => {
  if (!isObject(payload)) return false
  switch (COOLDOWN_FAMILIES[kind]) {
    case "budget":
      return (num(payload["newDailyBudgetMicros"]) ?? 0) > (num(payload["priorDailyBudgetMicros"]) ?? 0)
    case "bid": {
      if (kind === "default_bid_change") return (num(payload["newDefaultBidMicros"]) ?? 0) > (num(payload["priorDefaultBidMicros"]) ?? 0)
      const keywords = Array.isArray(payload["keywords"]) ? payload["keywords"] : []
      return keywords.some((k) => isObject(k) && (num(k["newBidMicros"]) ?? 0) > (num(k["priorBidMicros"]) ?? 0))
    }
    case "status": {
      if (kind === "keyword_status") return ENABLED.has(payload["status"])
      return ENABLED.has(payload["status"]) && !ENABLED.has(payload["priorStatus"])
    }
    default:
      return false
  }
}

/** What a change's cooldown reads: its family and hours; none for a change that does not raise spend, or a family at 0 hours. */
export interface CooldownCheck {
  readonly family: CooldownFamily
  readonly hours: number
}

export const cooldownCheckOf = (kind: string, payload: unknown, hours: CooldownHours): CooldownCheck | undefined => {
  const family = COOLDOWN_FAMILIES[kind]
  if (family === undefined || hours[family] === 0 || !raisesSpend(kind, payload)) return undefined
  return { family, hours: hours[family] }
}

/** The latest change of the same family on one of the same entities within the cooldown: applied, or on its way. */
export interface EarlierChange {
  readonly actionId: string
  readonly kind: string
  /** When it was applied, or approved while it is on its way. */
  readonly at: string
  readonly endsAt: string
  readonly applied: boolean
}

export const cooldownReason = (family: CooldownFamily, hours: number, earlier: EarlierChange): string => {
  const who = `${earlier.kind === "external_change" ? "an outside change" : "action"} ${earlier.actionId}`
  const what = earlier.applied
    ? `${who} changed the ${family} of the same entity at ${earlier.at}`
    : `${who}, approved at ${earlier.at}, is changing the ${family} of the same entity`
  return `cooldown: ${what}; another ${family} raise auto-applies only after ${earlier.endsAt} (${hours}-hour cooldown)`
}

/** A timestamp as the reasons word it. */
const isoTime = (sql: SqlClient.SqlClient, at: Statement.Fragment) => sql`to_char((${at}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`

/**
 * The latest change sharing a cooldown key with the change (`acs_recent_change`, db/functions/): its action, kind,
 * whether applied, and the times as the reason words them; `lastChangeWithin` reads it for a preview, a plan or a
 * changeset's member.
 */
const recentChange = (sql: SqlClient.SqlClient, projectId: string, kind: string, payload: unknown, hours: number) =>
  sql`SELECT c.action_id, c.kind, c.applied, ${isoTime(sql, sql`c.marked_at`)} AS at,
      ${isoTime(sql, sql`c.marked_at + make_interval(hours => ${hours})`)} AS ends_at
    FROM acs_recent_change(${projectId}, acs_cooldown_keys(${kind}, ${JSON.stringify(payload)}::jsonb), ${hours}) c`

/**
 * The cooldown's reason as a SQL expression over the columns where a statement read the earlier change (the
 * proposal statement reads it after the account's lock, actions/pipeline/ProposalStatement.ts), worded by
 * `cooldownReason` itself.
 */
export const cooldownReasonSql = (
  sql: SqlClient.SqlClient,
  check: CooldownCheck,
  earlier: { readonly actionId: Statement.Fragment; readonly kind: Statement.Fragment; readonly at: Statement.Fragment; readonly applied: Statement.Fragment }
) => {
  const template = (outside: boolean, applied: boolean) =>
    cooldownReason(check.family, check.hours, { actionId: "%1$s", kind: outside ? "external_change" : "", at: "%2$s", endsAt: "%3$s", applied })
  return sql`format(CASE WHEN ${earlier.kind} = 'external_change'
      THEN CASE WHEN ${earlier.applied} THEN ${template(true, true)} ELSE ${template(true, false)} END
      ELSE CASE WHEN ${earlier.applied} THEN ${template(false, true)} ELSE ${template(false, false)} END END,
    ${earlier.actionId}, ${isoTime(sql, earlier.at)}, ${isoTime(sql, sql`${earlier.at} + make_interval(hours => ${check.hours})`)})`
}

const EarlierRow = Schema.Struct({ actionId: Schema.String, kind: Schema.String, applied: Schema.Boolean, at: Schema.String, endsAt: Schema.String })
const decodeEarlier = decodeRows(EarlierRow)

/** The latest change of the account sharing a cooldown key with the change within `hours`; undefined when none. */
export const lastChangeWithin = (projectId: string, kind: string, payload: unknown, hours: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`/* prepared */ ${recentChange(sql, projectId, kind, payload, hours)}`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeEarlier),
      Effect.map((rows) => rows[0])
    ))
