/** Plan rule (b): keywords far over the band are paused (never installed) or their bid cut toward it. */
import type { PlanItem } from "@acs/domain/Plan"
import { keywordBidChange, keywordStatus } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { groupBy, plural } from "../actions/kinds/KeywordSupport.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { decodeRows } from "../db/Rows.ts"
import { FACT_DAYS } from "./AccountFacts.ts"
import { type Context, baseEvidence, cpaOf, num, pathOf, planItem, sum } from "./PlanItems.ts"

/** A keyword is far over the band when its CPA (or its spend without installs) exceeds this multiple of the max. */
export const KEYWORD_OVER_BAND = 1.5
/** A bid cut brings the bid in proportion to max/CPA, but never below this share of the bid in one step. */
export const MIN_BID_FACTOR = 0.5

/** A keyword that spent, with its ad group's and campaign's bid settings and its sums (int8 and numeric as text). */
const SpentKeyword = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  adGroupName: Schema.String,
  text: Schema.String,
  bidMicros: Schema.NullOr(Schema.String),
  defaultBidMicros: Schema.String,
  bidStrategy: Schema.String,
  spend: Schema.String,
  taps: Schema.String,
  installs: Schema.String
})
const decodeSpentKeywords = decodeRows(SpentKeyword)

/** (b) Keywords far over the band: paused when they never installed, else their bid cut toward the band. */
export const keywordItems = (c: Context) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { account, window } = c
    const p = account.projectId
    const banded = [...c.bands].flatMap(([campaignId, band]) => (band === null ? [] : [{ campaignId, max: band.maxMicros }]))
    if (banded.length === 0) return []
    const rows = yield* sql`
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
      ORDER BY k.ad_group_id, s.spend DESC, k.keyword_id`.pipe(Effect.flatMap(decodeSpentKeywords))
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
