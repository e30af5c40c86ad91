/**
 * Audits (`POST /accounts/{projectId}/audits`): checks of an account's set-up over the warehouse copy, kept
 * with their findings so an agent or a person can come back to one (`GET …/audits/{auditId}`). Checks: stale
 * data, budget-capped campaigns, Search Match without negatives, ad groups without negatives, keywords
 * duplicated across ad groups of a campaign, and ad groups whose active keywords are all BROAD.
 */
import { type Audit, Finding, type Severity } from "@acs/domain/Audits"
import { NotFound } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { listed, plural } from "../actions/kinds/KeywordSupport.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import type { Granted } from "../auth/Access.ts"
import { newId } from "../db/Ids.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import { budgetLimited, campaignTotals, FACT_DAYS, factWindow } from "./AccountFacts.ts"

/** Data older than this is stale (the same bound as dataFreshness's warning). */
export const STALE_AFTER_HOURS = 24
/** Findings per check; past it one more finding says how many were left out, so an audit stays readable. */
export const FINDINGS_PER_CHECK = 100

const severityRank: Record<Severity, number> = { high: 0, medium: 1, low: 2 }

const capped = (findings: ReadonlyArray<Finding>, what: string): ReadonlyArray<Finding> =>
  findings.length <= FINDINGS_PER_CHECK
    ? findings
    : [
      ...findings.slice(0, FINDINGS_PER_CHECK),
      {
        severity: findings[FINDINGS_PER_CHECK]!.severity,
        title: `${findings.length - FINDINGS_PER_CHECK} more ${what}`,
        detail: `Only the first ${FINDINGS_PER_CHECK} are listed one by one.`,
        entity: null
      }
    ]

/** An `audits` row as it is shown (its org, account and author aside), this module being the table's owner. */
const AuditRow = Schema.Struct({ auditId: Schema.String, createdAt: Schema.String, findings: Schema.Array(Finding) })
type AuditRow = typeof AuditRow.Type

const auditColumns = columnsOf(AuditRow)
const decodeAudits = decodeRows(AuditRow)

/** An enabled ad group no negative reaches, with its campaign's name. */
const UnguardedAdGroup = Schema.Struct({ adGroupId: Schema.String, name: Schema.String, searchMatch: Schema.Boolean, campaignName: Schema.String })
const decodeUnguarded = decodeRows(UnguardedAdGroup)

/** One text and match type active in several ad groups of a campaign. */
const DuplicatedKeyword = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  text: Schema.String,
  matchType: Schema.String,
  keywordIds: Schema.Array(Schema.String),
  adGroupNames: Schema.Array(Schema.String)
})
const decodeDuplicated = decodeRows(DuplicatedKeyword)

/** An ad group whose `active` keywords are all BROAD. */
const BroadOnlyAdGroup = Schema.Struct({ adGroupId: Schema.String, name: Schema.String, campaignName: Schema.String, active: Schema.Number })
const decodeBroadOnly = decodeRows(BroadOnlyAdGroup)

const toAudit = (row: AuditRow): Audit => ({
  auditId: row.auditId,
  createdAt: new Date(row.createdAt).toISOString(),
  findings: row.findings
})

export class Audits extends Effect.Service<Audits>()("acs/Audits", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const staleness = (account: AccountRecord, now: number): ReadonlyArray<Finding> => {
      if (account.lastSyncedAt === null) {
        return [{
          severity: "high",
          title: "The account was never synced",
          detail: "acs holds no copy of the account yet: reads, the plan and this audit see nothing until a sync succeeds " +
            "(POST /accounts/{projectId}/syncs).",
          entity: null
        }]
      }
      const hours = (now - Date.parse(account.lastSyncedAt)) / 3_600_000
      return hours > STALE_AFTER_HOURS
        ? [{
          severity: "medium",
          title: "The account's data is stale",
          detail: `The last successful sync was ${Math.round(hours)} hours ago (${new Date(account.lastSyncedAt).toISOString()}); ` +
            "the numbers behind this audit and the plan may no longer hold. Sync before acting on them.",
          entity: null
        }]
        : []
    }

    const budgetCapped = (account: AccountRecord, now: number) =>
      Effect.gen(function*() {
        const window = factWindow(account, now)
        const limited = budgetLimited(account, window, yield* campaignTotals(account, window))
        return limited.map((c): Finding => ({
          severity: "medium",
          title: `Campaign "${c.name}" is limited by its budget`,
          detail: `Over ${FACT_DAYS} days it spent on average ${money(c.avgDailySpendMicros, account.currency)} a day against a daily ` +
            `budget of ${money(c.dailyBudgetMicros, account.currency)} (${Math.round((c.avgDailySpendMicros / c.dailyBudgetMicros) * 100)}%)` +
            `${c.installs > 0 ? ` at a CPA of ${money(Math.round(c.spendMicros / c.installs), account.currency)}` : " without an install"}; ` +
            "it stops serving before the day ends. The plan suggests a raise when the CPA is inside the target band.",
          entity: { type: "campaign", id: c.campaignId, name: c.name }
        }))
      })

    /** Enabled ad groups that no negative reaches, neither their own nor their campaign's. */
    const withoutNegatives = (account: AccountRecord) =>
      Effect.gen(function*() {
        const p = account.projectId
        const rows = yield* sql`
          SELECT g.ad_group_id, g.name, g.search_match, c.name AS campaign_name
          FROM ad_groups g
          JOIN campaigns c ON c.project_id = g.project_id AND c.campaign_id = g.campaign_id AND c.status = 'ENABLED'
          WHERE g.project_id = ${p} AND g.status = 'ENABLED'
            AND NOT EXISTS (
              SELECT 1 FROM negative_keywords n
              WHERE n.project_id = ${p} AND n.campaign_id = g.campaign_id AND (n.ad_group_id IS NULL OR n.ad_group_id = g.ad_group_id))
          ORDER BY g.ad_group_id`.pipe(Effect.flatMap(decodeUnguarded))
        // Search Match without negatives is the costlier case: it is reported on its own, not twice.
        const searchMatch = rows.filter((r) => r.searchMatch).map((r): Finding => ({
          severity: "high",
          title: `Search Match is on in ad group "${r.name}" with no negative keyword`,
          detail: `Campaign "${r.campaignName}": Search Match picks searches on its own and nothing excludes any of them, at the ad ` +
            "group or the campaign level. Add negatives for the terms that spend without installs (the plan lists them).",
          entity: { type: "adGroup", id: r.adGroupId, name: r.name }
        }))
        const plain = rows.filter((r) => !r.searchMatch).map((r): Finding => ({
          severity: "low",
          title: `Ad group "${r.name}" has no negative keyword`,
          detail: `Campaign "${r.campaignName}": no negative keyword reaches the ad group, at its own level or the campaign's; ` +
            "its BROAD keywords match any related search.",
          entity: { type: "adGroup", id: r.adGroupId, name: r.name }
        }))
        return [...capped(searchMatch, "ad groups with Search Match on and no negatives"), ...capped(plain, "ad groups without negatives")]
      })

    /**
     * The same text and match type active in several enabled ad groups of one campaign: they bid against each
     * other. Texts compare as the platform does (case and outer spaces ignored) and are shown that way.
     */
    const duplicates = (account: AccountRecord) =>
      Effect.gen(function*() {
        const p = account.projectId
        const rows = yield* sql`
          SELECT k.campaign_id, c.name AS campaign_name, lower(btrim(k.text)) AS text, k.match_type,
            array_agg(k.keyword_id ORDER BY k.keyword_id) AS keyword_ids, array_agg(DISTINCT g.name) AS ad_group_names
          FROM keywords k
          JOIN ad_groups g ON g.project_id = k.project_id AND g.ad_group_id = k.ad_group_id AND g.status = 'ENABLED'
          JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id
          WHERE k.project_id = ${p} AND k.status = 'ACTIVE'
          GROUP BY k.campaign_id, c.name, lower(btrim(k.text)), k.match_type
          HAVING count(DISTINCT k.ad_group_id) > 1
          ORDER BY count(DISTINCT k.ad_group_id) DESC, k.campaign_id, lower(btrim(k.text)), k.match_type`.pipe(Effect.flatMap(decodeDuplicated))
        return capped(
          rows.map((r): Finding => ({
            severity: "medium",
            title: `Keyword "${r.text}" (${r.matchType}) is in ${r.adGroupNames.length} ad groups of campaign "${r.campaignName}"`,
            detail: `Ad groups ${listed(r.adGroupNames.map((name) => `"${name}"`))} (keywords ${listed([...r.keywordIds])}) compete for ` +
              "the same searches; keep it in one ad group and pause or remove the others.",
            entity: { type: "campaign", id: r.campaignId, name: r.campaignName }
          })),
          "duplicated keywords"
        )
      })

    const broadOnly = (account: AccountRecord) =>
      Effect.gen(function*() {
        const p = account.projectId
        const rows = yield* sql`
          SELECT g.ad_group_id, g.name, c.name AS campaign_name, count(*)::int AS active
          FROM keywords k
          JOIN ad_groups g ON g.project_id = k.project_id AND g.ad_group_id = k.ad_group_id AND g.status = 'ENABLED'
          JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id AND c.status = 'ENABLED'
          WHERE k.project_id = ${p} AND k.status = 'ACTIVE'
          GROUP BY g.ad_group_id, g.name, c.name
          HAVING bool_and(k.match_type = 'BROAD')
          ORDER BY g.ad_group_id`.pipe(Effect.flatMap(decodeBroadOnly))
        return capped(
          rows.map((r): Finding => ({
            severity: "low",
            title: `Ad group "${r.name}" has only BROAD keywords`,
            detail: `Campaign "${r.campaignName}": all ${plural(r.active, "active keyword")} are BROAD, so no bid is tied to an exact ` +
              "search; add the terms that convert as EXACT keywords (the keyword ideas research finds them).",
            entity: { type: "adGroup", id: r.adGroupId, name: r.name }
          })),
          "ad groups with only BROAD keywords"
        )
      })

    const run = (grant: Granted<"runAudit">) =>
      Effect.gen(function*() {
        const account = grant.account
        const now = yield* Clock.currentTimeMillis
        const checks = yield* Effect.all([budgetCapped(account, now), withoutNegatives(account), duplicates(account), broadOnly(account)])
        const findings = [...staleness(account, now), ...checks.flat()]
          .map((finding, order) => ({ finding, order }))
          .sort((a, b) => severityRank[a.finding.severity] - severityRank[b.finding.severity] || a.order - b.order)
          .map(({ finding }) => finding)
        const rows = yield* sql`
          INSERT INTO audits (audit_id, org_id, project_id, findings, created_by)
          VALUES (${newId("aud")}, ${grant.orgId}, ${account.projectId}, ${JSON.stringify(findings)}::jsonb,
            ${`${grant.principal.kind}:${grant.principal.id}`})
          RETURNING ${sql.unsafe(auditColumns)}`.pipe(Effect.flatMap(decodeAudits))
        yield* Effect.logInfo("audit run").pipe(Effect.annotateLogs({ projectId: account.projectId, findings: findings.length }))
        return toAudit(rows[0]!)
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie, Effect.withSpan("Audits.run"))

    const get = (grant: Granted<"getAudit">, auditId: string) =>
      Effect.gen(function*() {
        const rows = yield* sql`
          SELECT ${sql.unsafe(auditColumns)} FROM audits
          WHERE project_id = ${grant.account.projectId} AND audit_id = ${auditId}`.pipe(Effect.orDie, Effect.flatMap(decodeAudits))
        const row = rows[0]
        if (row === undefined) return yield* new NotFound({ message: `no audit ${auditId} in this account` })
        return toAudit(row)
      }).pipe(Effect.withSpan("Audits.get"))

    return { run, get } as const
  })
}) {}
