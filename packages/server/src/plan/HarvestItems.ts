/**
 * Plan rule (e): search terms that convert at or under the target CPA and are not yet keywords (nor negatives)
 * where they ran become EXACT keywords with their own bid, negated at their source so the two do not compete
 * (docs/decisions/warehouse-and-reads.md, "Harvest candidates"). One item per source ad group: the body of
 * `POST …/actions/harvest-search-terms`.
 */
import type { PlanItem } from "@acs/domain/Plan"
import { harvestSearchTerms } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { groupBy, MAX_KEYWORDS_PER_AD_GROUP, plural } from "../actions/kinds/KeywordSupport.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { decodeRows } from "../db/Rows.ts"
import { FACT_DAYS } from "./AccountFacts.ts"
import { bandText, baseEvidence, type Context, cpaOf, num, pathOf, planItem, searchTermTotals, sum, type Totals } from "./PlanItems.ts"

/** The least a term must have converted over the window to be worth its own keyword. */
export const HARVEST_MIN_INSTALLS = 3
/** Terms per harvest item: the most installs first. */
export const HARVEST_TERMS_PER_ITEM = 100

/** A converting search term of an ad group (summed over its sources there), with its campaign's bid strategy. */
const ConvertingTerm = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  bidStrategy: Schema.String,
  term: Schema.String,
  text: Schema.String,
  spend: Schema.String,
  taps: Schema.String,
  installs: Schema.String
})
const decodeConvertingTerms = decodeRows(ConvertingTerm)

/** An enabled exact-match ad group (every keyword EXACT, Search Match off), with what it holds. */
const ExactAdGroup = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.String,
  name: Schema.String,
  held: Schema.Number,
  texts: Schema.Array(Schema.String)
})
const decodeExactAdGroups = decodeRows(ExactAdGroup)

/** How many keywords and negatives an ad group holds. */
const decodeHeld = decodeRows(Schema.Struct({ adGroupId: Schema.String, n: Schema.Number }))

/** Where a term's keyword goes: the campaign's exact-match ad group when it has one, else the source itself. */
interface Target {
  readonly adGroupId: string
  readonly name: string
  readonly held: number
  readonly texts: ReadonlySet<string>
}

/**
 * (e) Harvest candidates. `accountCpa` is the target for a campaign with no band (the account's 30-day CPA, in whole
 * minor units as every amount the plan states); with neither there is nothing to compare a term's CPA with, and no
 * candidate.
 */
export const harvestItems = (c: Context, accountCpa: number | null) =>
  Effect.gen(function*() {
    const fallbackCpa = accountCpa === null ? null : Math.round(accountCpa / c.unit) * c.unit
    const sql = yield* SqlClient.SqlClient
    const { account } = c
    const p = account.projectId
    const rows = yield* sql`
      WITH terms AS (${searchTermTotals(sql, c)})
      SELECT t.campaign_id, t.ad_group_id, g.name AS ad_group_name, c.bid_strategy, t.term, t.text, t.spend, t.taps, t.installs
      FROM terms t
      JOIN ad_groups g ON g.project_id = ${p} AND g.ad_group_id = t.ad_group_id AND g.status = 'ENABLED'
      JOIN campaigns c ON c.project_id = ${p} AND c.campaign_id = t.campaign_id AND c.status = 'ENABLED'
      WHERE t.installs >= ${HARVEST_MIN_INSTALLS}
        -- Already a keyword where it ran (any match type), or negated there or campaign-wide: nothing to convert.
        AND NOT EXISTS (
          SELECT 1 FROM keywords k WHERE k.project_id = ${p} AND k.ad_group_id = t.ad_group_id AND lower(btrim(k.text)) = t.term)
        AND NOT EXISTS (
          SELECT 1 FROM negative_keywords n
          WHERE n.project_id = ${p} AND n.campaign_id = t.campaign_id
            AND (n.ad_group_id IS NULL OR n.ad_group_id = t.ad_group_id) AND lower(btrim(n.text)) = t.term)
      ORDER BY t.ad_group_id, t.installs DESC, t.spend, t.text`.pipe(Effect.flatMap(decodeConvertingTerms))
    const converting = rows.filter((row) => {
      const target = c.bands.get(row.campaignId)?.maxMicros ?? fallbackCpa
      return target !== null && num(row.spend) <= target * num(row.installs)
    })
    if (converting.length === 0) return []

    // Each campaign's exact-match ad group (the one holding most keywords, ties by id), with the texts it already
    // holds as keywords or negatives: a term already there is not proposed again.
    const campaignIds = [...new Set(converting.map((row) => row.campaignId))]
    const exact = yield* sql`
      SELECT g.campaign_id, g.ad_group_id, g.name,
        (count(k.keyword_id) + (SELECT count(*) FROM negative_keywords n WHERE n.project_id = ${p} AND n.ad_group_id = g.ad_group_id))::int AS held,
        array_agg(lower(btrim(k.text))) || coalesce((SELECT array_agg(lower(btrim(n.text))) FROM negative_keywords n
          WHERE n.project_id = ${p} AND n.ad_group_id = g.ad_group_id), '{}') AS texts
      FROM ad_groups g
      JOIN keywords k ON k.project_id = g.project_id AND k.ad_group_id = g.ad_group_id
      WHERE g.project_id = ${p} AND g.campaign_id = ANY(${campaignIds}::text[]) AND g.status = 'ENABLED' AND NOT g.search_match
      GROUP BY g.campaign_id, g.ad_group_id, g.name
      HAVING bool_and(k.match_type = 'EXACT')
      ORDER BY g.campaign_id, count(k.keyword_id) DESC, g.ad_group_id`.pipe(Effect.flatMap(decodeExactAdGroups))
    const exactOf = new Map<string, Target>()
    for (const g of exact) {
      if (!exactOf.has(g.campaignId)) exactOf.set(g.campaignId, { adGroupId: g.adGroupId, name: g.name, held: g.held, texts: new Set(g.texts) })
    }
    const sources = [...new Set(converting.map((row) => row.adGroupId))]
    const held = yield* sql`
      SELECT ad_group_id, count(*)::int AS n FROM (
        SELECT ad_group_id FROM keywords WHERE project_id = ${p} AND ad_group_id = ANY(${sources}::text[])
        UNION ALL
        SELECT ad_group_id FROM negative_keywords WHERE project_id = ${p} AND ad_group_id = ANY(${sources}::text[])
      ) x GROUP BY ad_group_id`.pipe(Effect.flatMap(decodeHeld))
    const heldBy = new Map(held.map((h) => [h.adGroupId, h.n]))

    const items: Array<PlanItem> = []
    for (const all of groupBy(converting, (row) => row.adGroupId).values()) {
      const first = all[0]!
      const source = { adGroupId: first.adGroupId, name: first.adGroupName, held: heldBy.get(first.adGroupId) ?? 0, texts: new Set<string>() }
      const target = exactOf.get(first.campaignId) ?? source
      // Negating the term where its keyword goes would block the keyword: only across ad groups.
      const negateAtSource = target.adGroupId !== source.adGroupId
      const fresh = all.filter((row) => !target.texts.has(row.term))
      // The platform counts an ad group's keywords and negatives together against one limit, at either end.
      const room = Math.min(
        HARVEST_TERMS_PER_ITEM,
        MAX_KEYWORDS_PER_AD_GROUP - target.held,
        negateAtSource ? MAX_KEYWORDS_PER_AD_GROUP - source.held : HARVEST_TERMS_PER_ITEM
      )
      const terms = fresh.slice(0, Math.max(0, room))
      if (terms.length === 0) continue
      const manualBids = first.bidStrategy === "MANUAL_CPT"
      const spent = terms.map((t) => ({ text: t.text, id: null, spendMicros: num(t.spend), taps: num(t.taps), installs: num(t.installs) }))
      const totals: Totals = sum(spent)
      const band = c.bands.get(first.campaignId) ?? null
      const targetCpa = band?.maxMicros ?? fallbackCpa!
      const reference = band !== null
        ? `the band ${bandText(band, account.currency)}`
        : `the account's ${FACT_DAYS}-day CPA of ${money(targetCpa, account.currency)} (no band is set)`
      const into = target.adGroupId === source.adGroupId ? `ad group "${source.name}"` : `the exact-match ad group "${target.name}"`
      const title = `Harvest ${plural(terms.length, "search term")} of ad group "${source.name}" as EXACT keywords`
      const cpa = cpaOf(totals)
      items.push(planItem(
        `harvest:${source.adGroupId}`,
        title,
        `${plural(terms.length, "search term")} that are not keywords yet brought ${totals.installs} installs for ` +
          `${money(totals.spendMicros, account.currency)} over ${FACT_DAYS} days, each at least ${HARVEST_MIN_INSTALLS} installs at a CPA ` +
          `at or under ${reference}. As EXACT keywords in ${into}${manualBids ? ", each bid at its average cost per tap," : ""} they are ` +
          `targeted and bid on their own` +
          (negateAtSource ? `; EXACT negatives in "${source.name}" keep the two from competing.` : "."),
        totals.spendMicros,
        {
          ...baseEvidence(totals, band),
          targetCpaMicros: targetCpa,
          minInstalls: HARVEST_MIN_INSTALLS,
          items: spent,
          expectedEffect: {
            windowDays: FACT_DAYS,
            installs: totals.installs,
            spendMicros: totals.spendMicros,
            cpaMicros: cpa,
            summary: `About ${totals.installs} installs and ${money(totals.spendMicros, account.currency)} every ${FACT_DAYS} days at a CPA of ` +
              `${cpa === null ? "n/a" : money(cpa, account.currency)} move onto EXACT keywords of their own, if the terms keep converting as they did` +
              (negateAtSource ? `; the same searches no longer reach "${source.name}".` : ".")
          }
        },
        {
          kind: harvestSearchTerms.kind,
          path: pathOf(account.projectId, harvestSearchTerms.path),
          body: {
            terms: terms.map((t) => {
              const cpt = num(t.taps) > 0 ? Math.floor(num(t.spend) / num(t.taps) / c.unit) * c.unit : 0
              return {
                text: t.text,
                sourceAdGroupId: source.adGroupId,
                targetAdGroupId: target.adGroupId,
                ...(manualBids && cpt >= c.unit ? { bidMicros: cpt } : {})
              }
            }),
            negateAtSource,
            reason: `acs plan: ${title}`
          }
        }
      ))
    }
    return items
  })
