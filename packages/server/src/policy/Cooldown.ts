/**
 * Cooldowns (docs/contract.md 3.3): after a change of an entity's budget, bid or status, another change of the same
 * family on the same entity that raises spend does not auto-apply until the family's cooldown has passed, so a bid
 * raised on Monday is not compounded on Tuesday. Outside changes count (`actions.cooldown_keys` covers them); a
 * change that lowers spend (a cut, a pause) never waits: undoing is never blocked. The rule is pure
 * (`raisesSpend`, `cooldownReason`); `lastChangeWithin` reads the ledger.
 */
import type { CooldownHours } from "@acs/domain/Guardrails"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"

export type CooldownFamily = keyof CooldownHours

/** The family of each kind a cooldown applies to. */
export const COOLDOWN_FAMILIES: Readonly<Record<string, CooldownFamily>> = {
  budget_change: "budget",
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

/** The latest applied change of the same family on one of the same entities, within the cooldown. */
export interface EarlierChange {
  readonly actionId: string
  readonly kind: string
  readonly appliedAt: string
  readonly endsAt: string
}

export const cooldownReason = (family: CooldownFamily, hours: number, earlier: EarlierChange): string =>
  `cooldown: ${earlier.kind === "external_change" ? "an outside change" : "action"} ${earlier.actionId} changed the ${family} of ` +
  `the same entity at ${earlier.appliedAt}; another ${family} raise auto-applies only after ${earlier.endsAt} (${hours}-hour cooldown)`

const EarlierRow = Schema.Struct({ actionId: Schema.String, kind: Schema.String, appliedAt: Schema.String, endsAt: Schema.String })
const decodeEarlier = decodeRows(EarlierRow)

/** The latest applied action of the account sharing a cooldown key with the change, applied within `hours`; undefined when none. */
export const lastChangeWithin = (projectId: string, kind: string, payload: unknown, hours: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      SELECT action_id, kind, to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS applied_at,
        to_char((applied_at + make_interval(hours => ${hours})) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS ends_at
      FROM actions
      WHERE project_id = ${projectId} AND cardinality(cooldown_keys) > 0 AND applied_at IS NOT NULL
        AND cooldown_keys && acs_cooldown_keys(${kind}, ${JSON.stringify(payload)}::jsonb)
        AND applied_at > clock_timestamp() - make_interval(hours => ${hours})
      ORDER BY applied_at DESC LIMIT 1`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeEarlier),
      Effect.map((rows) => rows[0])
    ))
