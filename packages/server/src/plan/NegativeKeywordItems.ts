/** Plan rule (a): search terms that spend without installs become EXACT negatives of their ad group. */
import { addNegativeKeywords } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { groupBy, MAX_KEYWORDS_PER_AD_GROUP, plural } from "../actions/kinds/KeywordSupport.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { decodeRows } from "../db/Rows.ts"
import { FACT_DAYS } from "./AccountFacts.ts"
import { type Context, baseEvidence, num, pathOf, planItem, searchTermTotals, sum } from "./PlanItems.ts"

/** A search term is waste once it spent this many times the account's 30-day CPA without an install. */
export const NEGATIVE_CPA_MULTIPLE = 2
/** Without any install in the account there is no CPA: a term is waste after this many average taps' worth. */
export const NEGATIVE_TAPS_FLOOR = 20
/** Terms per negative-keyword item: the costliest first. */
export const NEGATIVES_PER_ITEM = 100

/** A wasted search term of an ad group, with its sums (numeric as text) and how many keywords and negatives the ad group `held`. */
const WastedTerm = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  text: Schema.String,
  spend: Schema.String,
  taps: Schema.String,
  held: Schema.Number
})
const decodeWastedTerms = decodeRows(WastedTerm)

/** (a) Search terms that spent without an install: EXACT negatives in their ad group, one item per ad group. */
export const negativeItems = (c: Context, threshold: number, reference: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { account } = c
    const p = account.projectId
    const rows = yield* sql`
      WITH terms AS (${searchTermTotals(sql, c)}), waste AS (
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
      ORDER BY w.ad_group_id, w.spend DESC, w.text`.pipe(Effect.flatMap(decodeWastedTerms))
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
