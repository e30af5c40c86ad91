/** Plan rule (d): ad-group CPA goals outside the band take one bounded step toward it. */
import { cpaGoalChange } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { MAX_AUTO_CPA_GOAL_STEP_PERCENT } from "../actions/kinds/CpaGoalChange.ts"
import { money, withinPercent } from "../actions/kinds/KindSupport.ts"
import { decodeRows } from "../db/Rows.ts"
import { type Context, baseEvidence, bandText, num, pathOf, planItem } from "./PlanItems.ts"

/** An ad group with a CPA goal beside its sums over the window (int8 and numeric as text; null when it did not spend). */
const GoalSums = Schema.Struct({
  adGroupId: Schema.String,
  campaignId: Schema.String,
  name: Schema.String,
  cpaGoalMicros: Schema.String,
  spend: Schema.NullOr(Schema.String),
  taps: Schema.NullOr(Schema.String),
  installs: Schema.NullOr(Schema.String)
})
const decodeGoalSums = decodeRows(GoalSums)

/** (d) Ad-group CPA goals outside the band: one step of at most 10% toward it. */
export const cpaGoalItems = (c: Context) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { account, window } = c
    const p = account.projectId
    const rows = yield* sql`
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
      ORDER BY g.ad_group_id`.pipe(Effect.flatMap(decodeGoalSums))
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
