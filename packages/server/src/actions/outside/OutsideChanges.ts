/**
 * Outside changes in the ledger (docs/contract.md 4.2): reads an account's change history since its mark, leaves out
 * acs's own writes (userType CUSTOMER_API with acs's OAuth client id), fetches the detail of every other
 * change and records it once as an applied `external_change` row; an applied acs action whose entity it
 * changed afterwards is marked `supersededBy` it. The mark is re-read with an overlap (a change can show up
 * in the history a little after its event time); the per-account unique detail id makes a change read twice,
 * by two polls or two instances, one row.
 */
import type { ExternalChangePayload } from "@acs/domain/Actions"
import type { UpstreamChange, UpstreamChangeDetail, UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { lockAccount } from "../../policy/AutoApplyWindow.ts"
import { Ledger } from "../pipeline/Ledger.ts"
import { Transitions } from "../pipeline/Transitions.ts"
import { acsChanges, entityKindOf } from "./OutsideChangeFields.ts"
import { throughWhat } from "./OutsideChangeText.ts"
import { type EntityRef, touchedEntities, touches } from "./TouchedEntities.ts"

/** How far before the mark each read starts again, for changes the platform lists late. */
const OVERLAP_MS = 10 * 60_000

/** acs's own write: made through the API with the connection's client id. */
export const isOwnWrite = (change: Pick<UpstreamChange, "userType" | "modifiedBy">, clientId: string): boolean =>
  change.userType === "CUSTOMER_API" && change.modifiedBy === clientId

/**
 * Who changed these entities outside acs since `sinceIso`, newest first: what the apply worker names when it
 * finds drift. Empty without a change history (v5).
 */
export const outsideChangesTo = (
  client: UpstreamClient,
  upstreamAccountId: string,
  sinceIso: string,
  entities: ReadonlyArray<EntityRef>
) =>
  client.changeHistory === undefined
    ? Effect.succeed<ReadonlyArray<UpstreamChange>>([])
    : client.changeHistory(upstreamAccountId, sinceIso).pipe(
      Effect.map((entries): ReadonlyArray<UpstreamChange> =>
        entries
          .filter((entry) => !isOwnWrite(entry, client.clientId) && touches(entities, entry.entityType, entry.entityId))
          .sort((a, b) => Date.parse(b.eventTime) - Date.parse(a.eventTime))
      ),
      Effect.withSpan("OutsideChanges.changesTo")
    )

const MarkRow = Schema.Struct({ markIso: Schema.String })

const show = (value: unknown): string => value === null ? "none" : typeof value === "string" ? value : JSON.stringify(value)

const summaryOf = (detail: UpstreamChangeDetail, payload: ExternalChangePayload): string => {
  const what = `${detail.entityType} ${detail.entityName === null ? detail.entityId : `"${detail.entityName}" (${detail.entityId})`}`
  const fields = payload.changes.slice(0, 5).map((c) => `${c.field} ${show(c.oldValue)} → ${show(c.newValue)}`).join(", ")
  const more = payload.changes.length > 5 ? `, and ${payload.changes.length - 5} more` : ""
  return `${detail.eventType.toLowerCase()} ${what} outside acs, by ${detail.modifiedBy} (${throughWhat(detail.userType)})` +
    (fields === "" ? "" : `: ${fields}${more}`)
}

const payloadOf = (detail: UpstreamChangeDetail): ExternalChangePayload => ({
  entity: {
    type: entityKindOf(detail.entityType),
    platformType: detail.entityType,
    id: detail.entityId,
    campaignId: detail.campaignId,
    adGroupId: detail.adGroupId,
    name: detail.entityName
  },
  eventType: detail.eventType,
  changes: acsChanges(detail),
  upstream: {
    detailId: detail.detailId,
    transactionId: detail.transactionId,
    eventTime: detail.eventTime,
    userType: detail.userType,
    modifiedBy: detail.modifiedBy
  }
})

export class OutsideChanges extends Effect.Service<OutsideChanges>()("acs/OutsideChanges", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const transitions = yield* Transitions

    /** The mark, or the account's import when its history was never read: what happened before is not acs's to show. */
    const markOf = (projectId: string) =>
      sql`
        SELECT to_char(COALESCE(m.marked_at, a.created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS mark_iso
        FROM accounts a LEFT JOIN change_history_marks m ON m.project_id = a.project_id
        WHERE a.project_id = ${projectId}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(MarkRow))),
        Effect.map((rows) => rows[0]?.markIso),
        Effect.orDie
      )

    /** Moves the mark forward only (a slower concurrent poll must not move it back). */
    const advance = (account: AccountRecord, markIso: string, now: number) =>
      sql`
        INSERT INTO change_history_marks (project_id, org_id, marked_at, polled_at)
        VALUES (${account.projectId}, ${account.orgId}, ${markIso}::timestamptz, ${new Date(now).toISOString()}::timestamptz)
        ON CONFLICT (project_id) DO UPDATE SET marked_at = GREATEST(change_history_marks.marked_at, excluded.marked_at),
          polled_at = excluded.polled_at`.pipe(Effect.asVoid, Effect.orDie)

    /** One outside change into the ledger (once), superseding the applied acs actions on its entity. */
    const recordOne = (account: AccountRecord, detail: UpstreamChangeDetail) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* lockAccount(account.projectId)
        const payload = payloadOf(detail)
        const external = yield* transitions.appendOutsideChange({
          orgId: account.orgId,
          projectId: account.projectId,
          summary: summaryOf(detail, payload),
          proposedBy: { kind: "external", id: detail.modifiedBy, name: `${detail.modifiedBy} (${throughWhat(detail.userType)})` },
          payload
        })
        if (external === undefined) return 0
        const earlier = yield* ledger.appliedBefore(account.projectId, detail.eventTime)
        const overwritten = earlier.filter((action) => touches(touchedEntities(action), detail.entityType, detail.entityId))
        yield* transitions.supersede(account.projectId, overwritten.map((action) => action.actionId), external.actionId)
        return 1
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    /**
     * Reads the account's change history since its mark and records what was changed outside acs. A client
     * without a change history (v5) records nothing. Answers how many outside changes were new.
     */
    const record = (client: UpstreamClient, account: AccountRecord) =>
      Effect.gen(function*() {
        const { changeDetail, changeHistory } = client
        if (changeHistory === undefined || changeDetail === undefined) return 0
        const now = yield* Clock.currentTimeMillis
        const mark = (yield* markOf(account.projectId)) ?? new Date(now).toISOString()
        const since = new Date(Date.parse(mark) - OVERLAP_MS).toISOString()
        const entries = yield* changeHistory(account.upstreamAccountId, since)
        const outside = entries.filter((entry) => !isOwnWrite(entry, client.clientId))
        const known = yield* ledger.recordedOutsideChanges(account.projectId, outside.map((entry) => entry.detailId))
        const fresh = [...outside.filter((entry) => !known.has(entry.detailId))]
          .sort((a, b) => Date.parse(a.eventTime) - Date.parse(b.eventTime))
        let recorded = 0
        for (const entry of fresh) {
          const detail = yield* changeDetail(account.upstreamAccountId, entry.detailId)
          recorded += yield* recordOne(account, detail)
        }
        const latest = entries.reduce((max, entry) => Math.max(max, Date.parse(entry.eventTime)), Date.parse(mark))
        yield* advance(account, new Date(latest).toISOString(), now)
        if (recorded > 0) {
          yield* Effect.logInfo("outside changes recorded").pipe(Effect.annotateLogs({ projectId: account.projectId, recorded }))
        }
        return recorded
      }).pipe(Effect.withSpan("OutsideChanges.record", { attributes: { projectId: account.projectId } }))

    return { record } as const
  }),
  dependencies: [Ledger.Default, Transitions.Default]
}) {}
