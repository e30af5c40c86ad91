/**
 * Where each table lives on a Citus cluster (docs/scale.md), and the statements that put it there on the
 * coordinator of a migrated database. acs's data is mostly per account, so account-scoped tables are
 * distributed by `project_id` and co-located with `campaigns` (one account's rows on one shard, so its
 * statements stay on one worker); org-scoped tables by `org_id`, co-located with `events`; small,
 * read-mostly tables, `accounts` among them, become reference tables (a copy on every node, so any shard can
 * join them); and the few tables no tenant owns stay plain tables on the coordinator.
 *
 * The plan is applied table by table, in an order Citus accepts: reference tables in foreign-key order, then
 * each group's anchor, then the tables co-located with it. Citus distributes a table only when no still-local
 * table references it, and only when every table it references is distributed, so a group whose tables reference
 * each other cannot be placed one table at a time: the foreign keys between a group's own tables are dropped
 * before the group is placed and created again after it (they name the distribution column, migrations 0043 and
 * 0044, so Citus keeps them on the shards). A table Citus refuses is recorded with Citus's words, and nothing that
 * depends on it is tried: a table that references a table left behind, or that a table left behind references,
 * would drag it (and every table joined to it by foreign keys) into Citus's metadata as a coordinator-local
 * table, which later `colocate_with` refuses.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, type ParseResult, Schema } from "effect"

/** Small, read-mostly tables, in foreign-key order (a table after every table it references). */
export const REFERENCE_TABLES = [
  "orgs",
  // The tenants' directory: read by nearly every request, written at an import and a sync's end, and unique per
  // org by the upstream account, which only a table on every node can check.
  "accounts",
  "people",
  "api_keys",
  "sessions",
  "connections",
  "connection_key_pairs",
  "slack_signing_secrets",
  "oauth_clients",
  "oauth_codes",
  "oauth_refresh_tokens",
  "credential_limits"
] as const

/** Account-scoped tables, by `project_id`; the first is the anchor the others are co-located with. */
export const ACCOUNT_TABLES = [
  "campaigns",
  "ad_groups",
  "ads",
  "keywords",
  "negative_keywords",
  "daily_metrics",
  "search_terms",
  "spend_suffixes",
  "metric_generations",
  "syncs",
  "briefs",
  "audits",
  "targets",
  "guardrails",
  "watches",
  "recommendations",
  "change_history_marks",
  "cooldown_marks",
  "changesets",
  "actions",
  "change_places",
  "jobs",
  "action_steps"
] as const

/** Org-scoped tables, by `org_id`; the first is the anchor the others are co-located with. */
export const ORG_TABLES = ["events", "webhooks", "webhook_deliveries", "webhook_delivered_batches", "webhook_batches"] as const

/** Tables no tenant owns: plain tables on the coordinator, and why. */
export const COORDINATOR_TABLES = {
  effect_sql_migrations: "the migrator's own bookkeeping: migrations run on the coordinator",
  event_sequencer: "the one counter that orders events across every org",
  slack_seen_signatures: "a short-lived replay guard for Slack's requests, checked before the request names an org",
  idempotency_keys: "keyed by the caller, not by a tenant, and written by a statement of its own"
} as const

export type Placement = "reference" | "account" | "org" | "coordinator"

/**
 * The foreign keys between two tables of one co-located group, as the migrations make them: dropped before the
 * group is placed and created again after. Self-references (`actions.superseded_by`, …) stay: a table's key to
 * itself never names a still-local table.
 */
export interface GroupKey {
  readonly table: string
  readonly name: string
  readonly references: string
  /** As pg_get_constraintdef gives it. */
  readonly definition: string
}

const accountKey = (table: string, name: string, column: string, references: string, key: string): GroupKey => ({
  table,
  name,
  references,
  definition: `FOREIGN KEY (${column}, project_id) REFERENCES ${references}(${key}, project_id)`
})
const orgKey = (table: string, name: string): GroupKey => ({
  table,
  name,
  references: "webhooks",
  definition: "FOREIGN KEY (webhook_id, org_id) REFERENCES webhooks(webhook_id, org_id)"
})

export const ACCOUNT_GROUP_KEYS: ReadonlyArray<GroupKey> = [
  accountKey("actions", "actions_changeset_id_fkey", "changeset_id", "changesets", "changeset_id"),
  accountKey("jobs", "jobs_action_id_fkey", "action_id", "actions", "action_id"),
  accountKey("jobs", "jobs_changeset_id_fkey", "changeset_id", "changesets", "changeset_id"),
  accountKey("action_steps", "action_steps_action_id_fkey", "action_id", "actions", "action_id")
]

export const ORG_GROUP_KEYS: ReadonlyArray<GroupKey> = [
  orgKey("webhook_deliveries", "webhook_deliveries_webhook_id_fkey"),
  orgKey("webhook_delivered_batches", "webhook_delivered_batches_webhook_id_org_id_fkey"),
  orgKey("webhook_batches", "webhook_batches_webhook_id_fkey")
]

/** A statement of the plan: placing a table, or dropping or re-creating a group's key around the group's placement. */
export type DistributionStep =
  | {
    readonly kind: "place"
    readonly table: string
    readonly placement: Exclude<Placement, "coordinator">
    /** The statement that places the table, run on the coordinator. */
    readonly statement: string
  }
  | { readonly kind: "drop key" | "add key"; readonly table: string; readonly key: GroupKey; readonly statement: string }

export type PlacementStep = Extract<DistributionStep, { readonly kind: "place" }>

const ACCOUNT_ANCHOR = ACCOUNT_TABLES[0]
const ORG_ANCHOR = ORG_TABLES[0]

const distribute = (table: string, column: string, anchor: string) =>
  table === anchor
    ? `SELECT create_distributed_table('${table}', '${column}', colocate_with => 'none')`
    : `SELECT create_distributed_table('${table}', '${column}', colocate_with => '${anchor}')`

const dropKeys = (keys: ReadonlyArray<GroupKey>): Array<DistributionStep> =>
  keys.map((key) => ({ kind: "drop key", table: key.table, key, statement: `ALTER TABLE ${key.table} DROP CONSTRAINT ${key.name}` }))
const addKeys = (keys: ReadonlyArray<GroupKey>): Array<DistributionStep> =>
  keys.map((key) => ({ kind: "add key", table: key.table, key, statement: `ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition}` }))

/** The plan's statements in the order they run: this is the SQL docs/scale.md gives. */
export const DISTRIBUTION_STEPS: ReadonlyArray<DistributionStep> = [
  ...REFERENCE_TABLES.map((table): DistributionStep => ({ kind: "place", table, placement: "reference", statement: `SELECT create_reference_table('${table}')` })),
  ...dropKeys(ACCOUNT_GROUP_KEYS),
  ...ACCOUNT_TABLES.map((table): DistributionStep => ({ kind: "place", table, placement: "account", statement: distribute(table, "project_id", ACCOUNT_ANCHOR) })),
  ...addKeys(ACCOUNT_GROUP_KEYS),
  ...dropKeys(ORG_GROUP_KEYS),
  ...ORG_TABLES.map((table): DistributionStep => ({ kind: "place", table, placement: "org", statement: distribute(table, "org_id", ORG_ANCHOR) })),
  ...addKeys(ORG_GROUP_KEYS)
]

/** The steps that place a table, one per table of the plan but the coordinator's. */
export const PLACEMENT_STEPS: ReadonlyArray<PlacementStep> = DISTRIBUTION_STEPS.filter((step): step is PlacementStep => step.kind === "place")

/** Every table the plan names, with its placement. */
export const PLACEMENTS: ReadonlyMap<string, Placement> = new Map<string, Placement>([
  ...PLACEMENT_STEPS.map((step) => [step.table, step.placement] as const),
  ...Object.keys(COORDINATOR_TABLES).map((table) => [table, "coordinator"] as const)
])

export interface Refusal {
  readonly table: string
  readonly placement: Exclude<Placement, "coordinator">
  /** Citus's error (message, then detail), or the table left behind this one waits for. */
  readonly reason: string
}

/** A group's key not dropped or not created again, with Citus's words or the table placement left behind. */
export interface KeyRefusal {
  readonly table: string
  readonly key: string
  readonly reason: string
}

export interface DistributionOutcome {
  readonly placed: ReadonlyArray<string>
  readonly refused: ReadonlyArray<Refusal>
  /** The group keys standing again after their group was placed. */
  readonly keys: ReadonlyArray<string>
  readonly keysRefused: ReadonlyArray<KeyRefusal>
}

const ForeignKeys = Schema.Array(Schema.Struct({ referencing: Schema.String, referenced: Schema.String, name: Schema.String }))

/** Citus's words for a refused statement: the server's message, and its detail when it gives one. */
const citusReason = (error: SqlError.SqlError): string => {
  const cause: unknown = error.cause
  if (typeof cause === "object" && cause !== null && "message" in cause && typeof cause.message === "string") {
    const detail = "detail" in cause && typeof cause.detail === "string" ? ` (${cause.detail})` : ""
    return `${cause.message}${detail}`
  }
  return error.message
}

/**
 * Applies the plan on the coordinator of a migrated database whose nodes all have the citus extension. Each
 * table is placed by its own statement; the outcome lists the tables placed and, for every other table of the
 * plan, why it was not, and the group keys created again and, for any other, why not.
 */
export const applyDistribution: Effect.Effect<DistributionOutcome, SqlError.SqlError | ParseResult.ParseError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A partition's copy of its parent's key goes with the parent's.
  let keys = yield* sql`
    SELECT conrelid::regclass::text AS referencing, confrelid::regclass::text AS referenced, conname AS name
    FROM pg_constraint
    WHERE contype = 'f' AND conrelid <> confrelid AND connamespace = 'public'::regnamespace AND conparentid = 0`.pipe(
    Effect.flatMap(Schema.decodeUnknown(ForeignKeys))
  )
  const placed: Array<string> = []
  const recreated: Array<string> = []
  const keysRefused: Array<KeyRefusal> = []
  /** Tables left behind, and why: Citus's words, or the table left behind they wait for. */
  const behind = new Map<string, string>()
  /** Leaves `table` behind, and with it every table that references it or is co-located with it, at once. */
  const leaveBehind = (table: string, reason: string) => {
    if (behind.has(table) || placed.includes(table)) return
    behind.set(table, reason)
    for (const key of keys) if (key.referenced === table) leaveBehind(key.referencing, `waits for ${table}, which it references`)
    const group = table === ACCOUNT_ANCHOR ? ACCOUNT_TABLES : table === ORG_ANCHOR ? ORG_TABLES : []
    for (const member of group) leaveBehind(member, `waits for ${table}, which it is co-located with`)
  }
  for (const step of DISTRIBUTION_STEPS) {
    if (step.kind === "drop key") {
      const dropped = yield* sql.unsafe(step.statement).pipe(Effect.either)
      // A key Citus would not drop is reported in the outcome, and still joins its two tables' fates below.
      if (dropped._tag === "Right") keys = keys.filter((key) => !(key.referencing === step.table && key.name === step.key.name))
      else keysRefused.push({ table: step.table, key: step.key.name, reason: citusReason(dropped.left) })
      continue
    }
    if (step.kind === "add key") {
      if (keys.some((key) => key.referencing === step.table && key.name === step.key.name)) continue
      // Both placed, or both still plain tables: either way Citus takes the key; one of each it refuses.
      if (placed.includes(step.table) !== placed.includes(step.key.references)) {
        const [left] = [step.table, step.key.references].filter((table) => !placed.includes(table))
        keysRefused.push({ table: step.table, key: step.key.name, reason: `not created again: ${left} was not placed` })
        continue
      }
      const added = yield* sql.unsafe(step.statement).pipe(Effect.either)
      if (added._tag === "Right") recreated.push(step.key.name)
      else keysRefused.push({ table: step.table, key: step.key.name, reason: citusReason(added.left) })
      continue
    }
    if (behind.has(step.table)) continue
    // Placed now, it would drag a table left behind that references it into Citus's metadata.
    const dragged = keys.find((key) => key.referenced === step.table && behind.has(key.referencing))
    if (dragged !== undefined) {
      leaveBehind(step.table, `waits for ${dragged.referencing}, which references it`)
      continue
    }
    const outcome = yield* sql.unsafe(step.statement).pipe(Effect.either)
    if (outcome._tag === "Right") placed.push(step.table)
    else leaveBehind(step.table, citusReason(outcome.left))
  }
  const refused = PLACEMENT_STEPS.flatMap((step) => {
    const reason = behind.get(step.table)
    return reason === undefined ? [] : [{ table: step.table, placement: step.placement, reason }]
  })
  return { placed, refused, keys: recreated, keysRefused }
}).pipe(Effect.withSpan("Distribution.apply"))
