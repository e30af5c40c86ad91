/**
 * The plan (`GET /accounts/{projectId}/plan`): suggested changes computed from the warehouse's 30-day window
 * and the operator's target band, each a proposal body that passes its kind's validation as is. Four rules:
 * negative keywords for search terms that spend without installs, keyword pauses and bid cuts where the CPA
 * is far over the band, budget raises for budget-limited campaigns inside the band, and CPA-goal steps toward
 * the band. Ranked by spend at stake, descending, ties by item id.
 */
import type { Band } from "@acs/domain/Actions"
import type { Plan as PlanDocument, PlanEvidence, PlanItem, PlanProposal } from "@acs/domain/Plan"
import { addNegativeKeywords, budgetChange, cpaGoalChange, keywordBidChange, keywordStatus } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { AccountRecord } from "../accounts/Accounts.ts"
import { MAX_AUTO_CPA_GOAL_STEP_PERCENT } from "../actions/kinds/CpaGoalChange.ts"
import { groupBy, MAX_KEYWORDS_PER_AD_GROUP, plural } from "../actions/kinds/KeywordSupport.ts"
import { money, withinPercent } from "../actions/kinds/KindSupport.ts"
import { microsPerMinorUnit } from "../actions/MinorUnits.ts"
import { policyFacts } from "../actions/WarehouseView.ts"
import type { Granted } from "../auth/Access.ts"
import { freshnessFor } from "../warehouse/Reads.ts"
import type { MetricWindow } from "../warehouse/Window.ts"
import { budgetLimited, type BudgetLimited, campaignTotals, FACT_DAYS, factWindow } from "./AccountFacts.ts"

/** A search term is waste once it spent this many times the account's 30-day CPA without an install. */
export const NEGATIVE_CPA_MULTIPLE = 2
/** Without any install in the account there is no CPA: a term is waste after this many average taps' worth. */
export const NEGATIVE_TAPS_FLOOR = 20
/** Terms per negative-keyword item: the costliest first. */
export const NEGATIVES_PER_ITEM = 100
/** A keyword is far over the band when its CPA (or its spend without installs) exceeds this multiple of the max. */
export const KEYWORD_OVER_BAND = 1.5
/** A bid cut brings the bid in proportion to max/CPA, but never below this share of the bid in one step. */
export const MIN_BID_FACTOR = 0.5
/** Budget raise in percent: inside the 30% auto-apply bound with room for rounding. */
export const BUDGET_RAISE_PERCENT = 20
/** The largest amount a proposal body takes (ProposalKinds `Micros`). */
const MAX_MICROS = 1_000_000_000_000

interface Totals {
  readonly spendMicros: number
  readonly taps: number
  readonly installs: number
}

const num = (value: string | number | null): number => (value === null ? 0 : Number(value))
const cpaOf = (t: Totals): number | null => (t.installs > 0 ? Math.round(t.spendMicros / t.installs) : null)

const baseEvidence = (t: Totals, band: Band | null): PlanEvidence => ({
  windowDays: FACT_DAYS,
  spendMicros: t.spendMicros,
  installs: t.installs,
  cpaMicros: cpaOf(t),
  band
})

const sum = (rows: ReadonlyArray<Totals>): Totals =>
  rows.reduce((a, r) => ({ spendMicros: a.spendMicros + r.spendMicros, taps: a.taps + r.taps, installs: a.installs + r.installs }), {
    spendMicros: 0,
    taps: 0,
    installs: 0
  })

const pathOf = (projectId: string, kindPath: string) => `/api/v1/accounts/${projectId}/actions/${kindPath}`

const bandText = (band: Band, currency: string) => `${money(band.minMicros, currency)}–${money(band.maxMicros, currency)}`

interface Context {
  readonly account: AccountRecord
  readonly window: MetricWindow
  readonly bands: ReadonlyMap<string, Band | null>
  /** Whole minor units of the account currency, in micros: every amount proposed is a multiple. */
  readonly unit: number
}

const planItem = (
  itemId: string,
  title: string,
  rationale: string,
  impactMicros: number,
  evidence: PlanEvidence,
  proposal: PlanProposal
): PlanItem => ({ itemId, title, rationale, impactMicros, evidence, proposal })

export class Plan extends Effect.Service<Plan>()("acs/Plan", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** (a) Search terms that spent without an install: EXACT negatives in their ad group, one item per ad group. */
    const negativeItems = (c: Context, threshold: number, reference: string) =>
      Effect.gen(function*() {
        const { account, window } = c
        const p = account.projectId
        const rows = yield* sql<{
          campaignId: string
          adGroupId: string
          adGroupName: string
          text: string
          spend: string
          taps: string
          held: number
        }>`
          WITH terms AS (
            SELECT st.campaign_id, st.ad_group_id, lower(btrim(st.text)) AS term, min(btrim(st.text)) AS text,
              sum(m.spend_micros) AS spend, sum(m.taps) AS taps, sum(m.installs) AS installs
            FROM search_terms st
            JOIN daily_metrics m ON m.project_id = st.project_id AND m.level = 'searchTerms' AND m.entity_key = st.entity_key
              AND m.day BETWEEN ${window.start}::date AND ${window.end}::date
            WHERE st.project_id = ${p} AND st.text IS NOT NULL AND length(btrim(st.text)) BETWEEN 1 AND 80
            GROUP BY st.campaign_id, st.ad_group_id, lower(btrim(st.text))
          ), waste AS (
            SELECT t.* FROM terms t
            WHERE t.installs = 0 AND t.spend >= ${threshold}
              -- Already excluded (at either level), or a keyword of its own: nothing to add.
              AND NOT EXISTS (
                SELECT 1 FROM negative_keywords n
                WHERE n.project_id = ${p} AND n.campaign_id = t.campaign_id
                  AND (n.ad_group_id IS NULL OR n.ad_group_id = t.ad_group_id) AND lower(btrim(n.text)) = t.term)
              AND NOT EXISTS (
                SELECT 1 FROM keywords k WHERE k.project_id = ${p} AND k.ad_group_id = t.ad_group_id AND lower(btrim(k.text)) = t.term)
          )
          SELECT w.campaign_id, w.ad_group_id, g.name AS ad_group_name, w.text, w.spend, w.taps,
            ((SELECT count(*) FROM negative_keywords n WHERE n.project_id = ${p} AND n.ad_group_id = w.ad_group_id)
              + (SELECT count(*) FROM keywords k WHERE k.project_id = ${p} AND k.ad_group_id = w.ad_group_id))::int AS held
          FROM waste w
          JOIN ad_groups g ON g.project_id = ${p} AND g.ad_group_id = w.ad_group_id AND g.status = 'ENABLED'
          JOIN campaigns c ON c.project_id = ${p} AND c.campaign_id = w.campaign_id AND c.status = 'ENABLED'
          ORDER BY w.ad_group_id, w.spend DESC, w.text`
        return [...groupBy(rows, (row) => row.adGroupId).values()].flatMap((all) => {
          const first = all[0]!
          // The platform counts an ad group's keywords and negatives together against one limit.
          const terms = all.slice(0, Math.max(0, Math.min(NEGATIVES_PER_ITEM, MAX_KEYWORDS_PER_AD_GROUP - first.held)))
          if (terms.length === 0) return []
          const spent = terms.map((t) => ({ text: t.text, id: null, spendMicros: num(t.spend), taps: num(t.taps), installs: 0 }))
          const totals = sum(spent)
          const title = `Add ${plural(terms.length, "negative keyword")} to ad group "${first.adGroupName}"`
          return [planItem(
            `negatives:${first.adGroupId}`,
            title,
            `${plural(terms.length, "search term")} spent ${money(totals.spendMicros, account.currency)} over ${FACT_DAYS} days without ` +
              `an install, each at least ${money(threshold, account.currency)} (${reference}). As EXACT negatives of the ad group ` +
              "they stop exactly these searches and nothing else.",
            totals.spendMicros,
            { ...baseEvidence(totals, c.bands.get(first.campaignId) ?? null), thresholdMicros: threshold, items: spent },
            {
              kind: addNegativeKeywords.kind,
              path: pathOf(account.projectId, addNegativeKeywords.path),
              body: {
                campaignId: first.campaignId,
                adGroupId: first.adGroupId,
                keywords: terms.map((t) => ({ text: t.text, matchType: "EXACT" as const })),
                reason: `acs plan: ${title}`
              }
            }
          )]
        })
      })

    /** (b) Keywords far over the band: paused when they never installed, else their bid cut toward the band. */
    const keywordItems = (c: Context) =>
      Effect.gen(function*() {
        const { account, window } = c
        const p = account.projectId
        const banded = [...c.bands].flatMap(([campaignId, band]) => (band === null ? [] : [{ campaignId, max: band.maxMicros }]))
        if (banded.length === 0) return []
        const rows = yield* sql<{
          keywordId: string
          adGroupId: string
          campaignId: string
          adGroupName: string
          text: string
          bidMicros: string | null
          defaultBidMicros: string
          bidStrategy: string
          spend: string
          taps: string
          installs: string
        }>`
          WITH bands AS (
            SELECT * FROM unnest(${banded.map((b) => b.campaignId)}::text[], ${banded.map((b) => b.max)}::int8[])
              AS b(campaign_id, max_micros)
          ), spent AS (
            SELECT entity_key, sum(spend_micros) AS spend, sum(taps) AS taps, sum(installs) AS installs
            FROM daily_metrics
            WHERE project_id = ${p} AND level = 'keywords' AND day BETWEEN ${window.start}::date AND ${window.end}::date
            GROUP BY entity_key
          )
          SELECT k.keyword_id, k.ad_group_id, k.campaign_id, g.name AS ad_group_name, k.text, k.bid_micros,
            g.default_bid_micros, c.bid_strategy, s.spend, s.taps, s.installs
          FROM spent s
          JOIN keywords k ON k.project_id = ${p} AND k.keyword_id = s.entity_key AND k.status = 'ACTIVE'
          JOIN ad_groups g ON g.project_id = ${p} AND g.ad_group_id = k.ad_group_id AND g.status = 'ENABLED'
          JOIN campaigns c ON c.project_id = ${p} AND c.campaign_id = k.campaign_id AND c.status = 'ENABLED'
          JOIN bands b ON b.campaign_id = k.campaign_id
          -- CPA over 1.5 × max, or (no install) spend over 1.5 × max: one test, with installs counted at least once.
          WHERE 2 * s.spend > 3 * b.max_micros * greatest(s.installs, 1)
          ORDER BY k.ad_group_id, s.spend DESC, k.keyword_id`
        const pauses = groupBy(rows.filter((row) => num(row.installs) === 0), (row) => row.adGroupId)
        const cuts: Array<PlanItem> = []
        for (const row of rows) {
          const band = c.bands.get(row.campaignId)!
          const totals = { spendMicros: num(row.spend), taps: num(row.taps), installs: num(row.installs) }
          if (totals.installs === 0) continue
          // MAX_CONVERSIONS campaigns take no keyword bids (422 bid_strategy_conflict).
          if (row.bidStrategy !== "MANUAL_CPT") continue
          const bid = num(row.bidMicros ?? row.defaultBidMicros)
          const cpa = cpaOf(totals)!
          const factor = Math.max(MIN_BID_FACTOR, band.maxMicros / cpa)
          const newBid = Math.floor((bid * factor) / c.unit) * c.unit
          if (newBid < c.unit || newBid >= bid) continue
          const title = `Cut the bid of keyword "${row.text}" from ${money(bid, account.currency)} to ${money(newBid, account.currency)}`
          cuts.push(planItem(
            `bid:${row.keywordId}`,
            title,
            `Its ${FACT_DAYS}-day CPA of ${money(cpa, account.currency)} is ${(cpa / band.maxMicros).toFixed(1)}× the band's maximum ` +
              `${money(band.maxMicros, account.currency)}; the bid is cut in proportion (by at most ${(1 - MIN_BID_FACTOR) * 100}% in one step).`,
            Math.max(0, totals.spendMicros - totals.installs * band.maxMicros),
            { ...baseEvidence(totals, band), bidMicros: bid, thresholdMicros: Math.round(KEYWORD_OVER_BAND * band.maxMicros) },
            {
              kind: keywordBidChange.kind,
              path: pathOf(account.projectId, keywordBidChange.path),
              body: { keywordIds: [row.keywordId], newBidMicros: newBid, reason: `acs plan: ${title}` }
            }
          ))
        }
        const paused = [...pauses.values()].map((all) => {
          const first = all[0]!
          const keywords = all.slice(0, 1000)
          const band = c.bands.get(first.campaignId)!
          const spent = keywords.map((k) => ({ text: k.text, id: k.keywordId, spendMicros: num(k.spend), taps: num(k.taps), installs: 0 }))
          const totals = sum(spent)
          const threshold = Math.round(KEYWORD_OVER_BAND * band.maxMicros)
          const title = `Pause ${plural(keywords.length, "keyword")} in ad group "${first.adGroupName}"`
          return planItem(
            `pause:${first.adGroupId}`,
            title,
            `Each spent more than ${money(threshold, account.currency)} (${KEYWORD_OVER_BAND}× the band's maximum CPA ` +
              `${money(band.maxMicros, account.currency)}) over ${FACT_DAYS} days without a single install.`,
            totals.spendMicros,
            { ...baseEvidence(totals, band), thresholdMicros: threshold, items: spent },
            {
              kind: keywordStatus.kind,
              path: pathOf(account.projectId, keywordStatus.path),
              body: { keywordIds: keywords.map((k) => k.keywordId), status: "PAUSED" as const, reason: `acs plan: ${title}` }
            }
          )
        })
        return [...paused, ...cuts]
      })

    /** (c) Budget-limited campaigns whose 30-day CPA (as the policy computes it) is inside the band: +20%. */
    const budgetItems = (c: Context, limited: ReadonlyArray<BudgetLimited>, campaignCpa: (id: string) => Effect.Effect<number | null>) =>
      Effect.forEach(limited, (campaign) =>
        Effect.gen(function*() {
          const { account } = c
          const band = c.bands.get(campaign.campaignId) ?? null
          if (band === null) return []
          const cpa = yield* campaignCpa(campaign.campaignId)
          if (cpa === null || cpa < band.minMicros || cpa > band.maxMicros) return []
          const budget = campaign.dailyBudgetMicros
          const raised = Math.floor((budget * (100 + BUDGET_RAISE_PERCENT)) / 100 / c.unit) * c.unit
          // The proposal schema caps amounts at 10^12 micros: past it there is nothing valid to propose.
          if (raised <= budget || raised > MAX_MICROS) return []
          const share = Math.round((campaign.avgDailySpendMicros / budget) * 100)
          const title = `Raise the daily budget of campaign "${campaign.name}" from ${money(budget, account.currency)} to ${
            money(raised, account.currency)
          }`
          return [planItem(
            `budget:${campaign.campaignId}`,
            title,
            `It spent on average ${money(campaign.avgDailySpendMicros, account.currency)} a day (${share}% of its budget) over ` +
              `${FACT_DAYS} days at a CPA of ${money(cpa, account.currency)}, inside the target band ${bandText(band, account.currency)}: ` +
              "the budget, not the bids, limits installs at an acceptable cost.",
            (raised - budget) * FACT_DAYS,
            { ...baseEvidence(campaign, band), dailyBudgetMicros: budget, avgDailySpendMicros: campaign.avgDailySpendMicros },
            {
              kind: budgetChange.kind,
              path: pathOf(account.projectId, budgetChange.path),
              body: { campaignId: campaign.campaignId, newDailyBudgetMicros: raised, reason: `acs plan: ${title}` }
            }
          )]
        })).pipe(Effect.map((items) => items.flat()))

    /** (d) Ad-group CPA goals outside the band: one step of at most 10% toward it. */
    const cpaGoalItems = (c: Context) =>
      Effect.gen(function*() {
        const { account, window } = c
        const p = account.projectId
        const rows = yield* sql<{
          adGroupId: string
          campaignId: string
          name: string
          cpaGoalMicros: string
          spend: string | null
          taps: string | null
          installs: string | null
        }>`
          SELECT g.ad_group_id, g.campaign_id, g.name, g.cpa_goal_micros, m.spend, m.taps, m.installs
          FROM ad_groups g
          JOIN campaigns c ON c.project_id = g.project_id AND c.campaign_id = g.campaign_id AND c.status = 'ENABLED'
          LEFT JOIN (
            SELECT entity_key, sum(spend_micros) AS spend, sum(taps) AS taps, sum(installs) AS installs
            FROM daily_metrics
            WHERE project_id = ${p} AND level = 'adGroups' AND day BETWEEN ${window.start}::date AND ${window.end}::date
            GROUP BY entity_key
          ) m ON m.entity_key = g.ad_group_id
          WHERE g.project_id = ${p} AND g.status = 'ENABLED' AND g.cpa_goal_micros IS NOT NULL
          ORDER BY g.ad_group_id`
        return rows.flatMap((row) => {
          const band = c.bands.get(row.campaignId) ?? null
          if (band === null) return []
          const goal = Number(row.cpaGoalMicros)
          const u = c.unit
          const bound = MAX_AUTO_CPA_GOAL_STEP_PERCENT
          // Integer arithmetic: the step lands on whole minor units and never beyond the 10% bound.
          const next = goal > band.maxMicros
            ? Math.max(Math.ceil(band.maxMicros / u) * u, Math.ceil((goal * (100 - bound)) / (100 * u)) * u)
            : goal < band.minMicros
            ? Math.min(Math.floor(band.minMicros / u) * u, Math.floor((goal * (100 + bound)) / (100 * u)) * u)
            : goal
          if (next === goal || next <= 0 || !withinPercent(goal, next, bound)) return []
          const totals = { spendMicros: num(row.spend), taps: num(row.taps), installs: num(row.installs) }
          const direction = next < goal ? "Lower" : "Raise"
          const title = `${direction} the CPA goal of ad group "${row.name}" from ${money(goal, account.currency)} to ${
            money(next, account.currency)
          }`
          return [planItem(
            `cpaGoal:${row.adGroupId}`,
            title,
            `The goal is ${next < goal ? "above" : "below"} the target band ${bandText(band, account.currency)}; one step of at most ` +
              `${bound}% moves it toward the band.`,
            Math.round((totals.spendMicros * Math.abs(goal - next)) / goal),
            { ...baseEvidence(totals, band), cpaGoalMicros: goal },
            {
              kind: cpaGoalChange.kind,
              path: pathOf(account.projectId, cpaGoalChange.path),
              body: { adGroupId: row.adGroupId, newCpaGoalMicros: next, reason: `acs plan: ${title}` }
            }
          )]
        })
      })

    const get = (grant: Granted<"getPlan">, limit: number) =>
      Effect.gen(function*() {
        const account = grant.account
        const now = yield* Clock.currentTimeMillis
        const window = factWindow(account, now)
        const facts = yield* policyFacts(account)
        const campaigns = yield* campaignTotals(account, window)
        const bands = new Map(
          yield* Effect.forEach(campaigns, (c) => facts.cpaBand(c.campaignId).pipe(Effect.map((band) => [c.campaignId, band] as const)))
        )
        const context: Context = {
          account,
          window,
          bands,
          unit: microsPerMinorUnit(account.currency)
        }
        const all = sum(campaigns)
        const accountCpa = cpaOf(all)
        const accountCpt = all.taps > 0 ? Math.round(all.spendMicros / all.taps) : null
        const negatives = accountCpa !== null
          ? negativeItems(context, NEGATIVE_CPA_MULTIPLE * accountCpa, `${NEGATIVE_CPA_MULTIPLE}× the account's ${FACT_DAYS}-day CPA of ${
            money(accountCpa, account.currency)
          }`)
          : accountCpt !== null
          ? negativeItems(context, NEGATIVE_TAPS_FLOOR * accountCpt, `the account has no install in ${FACT_DAYS} days: ` +
            `${NEGATIVE_TAPS_FLOOR} taps at its average cost per tap of ${money(accountCpt, account.currency)}`)
          : Effect.succeed([])
        const items = [
          ...(yield* negatives),
          ...(yield* keywordItems(context)),
          ...(yield* budgetItems(context, budgetLimited(account, window, campaigns), facts.campaignCpa30d)),
          ...(yield* cpaGoalItems(context))
        ].sort((a, b) => b.impactMicros - a.impactMicros || (a.itemId < b.itemId ? -1 : a.itemId > b.itemId ? 1 : 0))
        const slice = items.slice(0, limit)
        const plan: PlanDocument = {
          items: slice,
          total: items.length,
          truncated: slice.length < items.length,
          dataFreshness: freshnessFor(account, window, now)
        }
        return plan
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie, Effect.withSpan("Plan.get"))

    return { get } as const
  })
}) {}
