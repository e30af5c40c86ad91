/**
 * What an apply starts from, as one query: the action and its run, the org's kill switch, the account's circuit
 * breaker, the steps this run
 * recorded already (empty for a run not yet begun), its account, its org's connection and the campaign its
 * payload names. The claim carries it (ClaimStatement.ts), so claiming a job and reading what it needs is one
 * round trip (docs/decisions/pipeline.md "One read to start an apply, carried by the claim").
 */
import { AutoApplyPause } from "@acs/domain/Guardrails"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { AccountRow } from "../accounts/AccountRecord.ts"
import { SavedConnection } from "../accounts/Connections.ts"
import { campaignJson, toCampaign } from "../actions/kinds/WarehouseView.ts"
import { ACTION_COLUMNS, actionRowWith, toRecord } from "../actions/pipeline/ActionRow.ts"
import { jsonRow } from "../db/Rows.ts"
import { CampaignRow } from "../warehouse/EntityRows.ts"
import { RecordedStep, recordedSteps } from "./ActionSteps.ts"


/** The query's row: the action's columns and what it starts from beside them. */
export const StartingRow = actionRowWith({
  /** Always true: tells a row found from the nulls of a claim that carried none. */
  found: Schema.Literal(true),
  applyRun: Schema.Number,
  platformAutoApply: Schema.Boolean,
  autoApplyPaused: Schema.NullOr(AutoApplyPause),
  recordedSteps: Schema.Array(RecordedStep),
  /** Null when the account is gone. */
  account: Schema.NullOr(AccountRow),
  /** Null when the org has no connection. */
  connection: Schema.NullOr(SavedConnection),
  /** The campaign the payload names (`campaignId`), null when it names none; `namedCampaign` null when there is no such row. */
  namedCampaignId: Schema.NullOr(Schema.String),
  namedCampaign: Schema.NullOr(CampaignRow)
})
export type StartingRow = typeof StartingRow.Type

export const decodeStartingRow = Schema.decodeUnknown(StartingRow)

/** Both as JSON values (null when absent), keyed by their fields. */
const ACCOUNT_JSON = jsonRow("acc", AccountRow.fields, "project_id", {
  // Text, as the driver answers these columns (a JSON value would be in another format).
  lastSyncedAt: "acc.last_synced_at::text",
  firstSyncedDay: "acc.first_synced_day::text",
  lastSyncedDay: "acc.last_synced_day::text"
})
const CONNECTION_JSON = jsonRow("c", SavedConnection.fields, "org_id")

/** The account's circuit breaker when it is open (docs/contract.md 3.3), as JSON; null when closed. */
const pausedJson = (sql: SqlClient.SqlClient, projectId: string | Statement.Fragment) =>
  sql`(SELECT json_build_object('reason', g.paused_reason, 'since',
      to_char(g.paused_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    FROM guardrails g WHERE g.project_id = ${projectId} AND g.paused_since IS NOT NULL)`

/** The query, with `projectId` and `actionId` values or the claim's columns. */
export const startingPoint = (sql: SqlClient.SqlClient, projectId: string | Statement.Fragment, actionId: string | Statement.Fragment) =>
  sql`SELECT true AS found, a.*, ${sql.unsafe(ACCOUNT_JSON)} AS account,
      ${sql.unsafe(CONNECTION_JSON)} AS connection,
      a.payload->>'campaignId' AS named_campaign_id, ${campaignJson(sql, "cmp")} AS named_campaign
    FROM (
      SELECT ${sql.unsafe(ACTION_COLUMNS)}, apply_run,
        (SELECT platform_auto_apply FROM orgs WHERE orgs.org_id = actions.org_id) AS platform_auto_apply,
        ${pausedJson(sql, projectId)} AS auto_apply_paused,
        ${recordedSteps(sql, projectId)} AS recorded_steps
      FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId}
    ) a LEFT JOIN accounts acc ON acc.project_id = a.project_id
    LEFT JOIN connections c ON c.org_id = acc.org_id
    LEFT JOIN campaigns cmp ON cmp.project_id = a.project_id AND cmp.campaign_id = a.payload->>'campaignId'`

/** The query on its own (the claim's carried row was not enough: Apply.ts). */
export const readStartingPoint = (sql: SqlClient.SqlClient, projectId: string, actionId: string) =>
  sql`/* prepared */ ${startingPoint(sql, projectId, actionId)}`.pipe(
    Effect.flatMap((rows) => rows[0] === undefined ? Effect.succeed(undefined) : decodeStartingRow(rows[0])),
    Effect.orDie
  )

/** The warehouse's row of the campaign an action's payload names, read with the action (undefined: no such row). */
export interface NamedCampaign {
  readonly campaignId: string
  readonly campaign: UpstreamCampaign | undefined
}

/** The starting point as the apply uses it. */
export const startFrom = (row: StartingRow) => ({
  action: toRecord(row),
  run: row.applyRun,
  killSwitchOn: row.platformAutoApply,
  autoApplyPaused: row.autoApplyPaused,
  before: row.recordedSteps,
  account: row.account ?? undefined,
  namedCampaign: row.namedCampaignId === null
    ? undefined
    : { campaignId: row.namedCampaignId, campaign: row.namedCampaign === null ? undefined : toCampaign(row.namedCampaign) },
  connection: row.connection ?? undefined
})
export type Starting = ReturnType<typeof startFrom>

/** A member's run as a bulk call starts it: its status now, its run and the steps the run recorded. */
const MemberRun = Schema.Struct({
  actionId: Schema.String,
  status: Schema.String,
  applyRun: Schema.Number,
  recordedSteps: Schema.Array(RecordedStep)
})

/** What the members of one bulk call start from (MemberBulk.ts): the account, its org's connection and kill switch once, each member's run. */
const MembersStart = Schema.Struct({
  account: Schema.NullOr(AccountRow),
  connection: Schema.NullOr(SavedConnection),
  platformAutoApply: Schema.Boolean,
  autoApplyPaused: Schema.NullOr(AutoApplyPause),
  runs: Schema.Array(MemberRun)
})

/**
 * One read for the members of a bulk call, all of one account: what `startingPoint` reads for one action, without
 * the actions' rows (the changeset's run holds them).
 */
export const readMembersStart = (sql: SqlClient.SqlClient, projectId: string, actionIds: ReadonlyArray<string>) =>
  sql`SELECT ${sql.unsafe(ACCOUNT_JSON)} AS account, ${sql.unsafe(CONNECTION_JSON)} AS connection,
      coalesce((SELECT platform_auto_apply FROM orgs WHERE orgs.org_id = acc.org_id), false) AS platform_auto_apply,
      ${pausedJson(sql, projectId)} AS auto_apply_paused,
      (SELECT coalesce(json_agg(json_build_object('actionId', actions.action_id, 'status', actions.status, 'applyRun', actions.apply_run,
        'recordedSteps', ${recordedSteps(sql, projectId)})), '[]'::json)
        FROM actions WHERE actions.project_id = ${projectId} AND actions.action_id = ANY(${actionIds}::text[])) AS runs
    FROM (SELECT ${projectId}::text AS project_id) p LEFT JOIN accounts acc ON acc.project_id = p.project_id
    LEFT JOIN connections c ON c.org_id = acc.org_id`.pipe(
    Effect.flatMap((rows) => Schema.decodeUnknown(MembersStart)(rows[0])),
    Effect.orDie
  )
export type MembersStart = typeof MembersStart.Type
