/**
 * Apple's recommendations in the simulator (v1 only, as the platform has them): daily budget ("DAILYCAP") and target
 * CPA ("TCPA") recommendations scoped by the promoted app (`promotedObjectId`, required) and optionally a campaign,
 * each with an expiry and a seven-day expected effect, applied (with an optional override) or dismissed once.
 * `POST /v1/recommendations/{daily-budgets|target-cpas}/{query|apply|dismiss}`. A few are seeded per account, the
 * first time the account's recommendations are read, from the campaigns' last seven complete days: a daily budget
 * raise for the two biggest spenders, a target CPA near the 7-day CPA of a MAX_CONVERSIONS campaign, and one that
 * expired an hour before (so an expired one is answered as Apple keeps it: `AVAILABLE` with an `expirationTime`
 * passed). Applying writes the campaign through the same v5 handler a `PUT` uses (`write`), so it appears in the
 * change history as the caller's API write.
 */
import { Schema } from "effect"
import { decimalFromMicros, microsFromDecimal } from "../../Money.ts"
import { V1Filter, V1Money } from "../../v1/WireV1.ts"
import { type Answer, decodeInput, failure, invalid } from "../SimulatorHttp.ts"
import { INSTALLS, METRIC_COUNT, SPEND_MICROS } from "../SimulatorMetrics.ts"
import type { SimAccount, SimCampaign, SimWorld } from "../SimulatorModel.ts"
import type { HttpMethod, OrgRequest } from "../SimulatorRouter.ts"
import type { SimulatorState } from "../SimulatorState.ts"
import { money, type WireObject } from "../SimulatorWire.ts"
import { v1Ok } from "./SimulatorV1Http.ts"

export type RecommendationType = "DAILYCAP" | "TCPA"
type RecommendationState = "AVAILABLE" | "APPLIED" | "DISMISSED"

interface SimRecommendation {
  readonly id: string
  readonly type: RecommendationType
  readonly campaign: SimCampaign
  state: RecommendationState
  /** The campaign's daily budget or target CPA when the recommendation was made. */
  readonly currentMicros: number
  readonly recommendedMicros: number
  readonly installs7d: number
  readonly spend7dMicros: number
  readonly expectedInstalls: number
  readonly expectedSpendMicros: number
  readonly creationMs: number
  readonly expirationMs: number
  appliedMicros: number | null
}

const DAY_MS = 86_400_000
const EXPIRY_DAYS = 7
const DAILY_CAP_RAISE = 1.5
const TCPA_STEP = 1.15
/** Diminishing returns: installs grow as spend^0.8 when a budget cap is lifted. */
const INSTALL_ELASTICITY = 0.8

/** Per state: the world the recommendations were seeded for (a reset makes a new one) and each org's list. */
const seeded = new WeakMap<SimulatorState, { readonly world: SimWorld; readonly byOrg: Map<number, Array<SimRecommendation>> }>()

/** Rounded to the account's smallest currency unit, as the platform states amounts. */
const roundMinor = (micros: number, account: SimAccount) => Math.max(account.minorUnitMicros, Math.round(micros / account.minorUnitMicros) * account.minorUnitMicros)

const sevenDays = (state: SimulatorState, account: SimAccount, campaign: SimCampaign) => {
  const today = state.now(account).day
  const out = new Float64Array(7 * METRIC_COUNT)
  state.metrics(account).addCampaign(campaign, { from: today - 7, to: today - 1 }, out)
  let installs = 0
  let spend = 0
  for (let day = 0; day < 7; day++) {
    installs += out[day * METRIC_COUNT + INSTALLS]!
    spend += out[day * METRIC_COUNT + SPEND_MICROS]!
  }
  return { installs: Math.round(installs), spend: Math.round(spend) }
}

const seed = (state: SimulatorState, account: SimAccount): Array<SimRecommendation> => {
  const now = state.nowMs()
  const live = account.campaigns.filter((c) => !c.deleted && c.status === "ENABLED")
  const withMetrics = live.map((campaign) => ({ campaign, ...sevenDays(state, account, campaign) }))
    .filter((c) => c.spend > 0)
    .sort((a, b) => b.spend - a.spend || a.campaign.id - b.campaign.id)
  const out: Array<SimRecommendation> = []
  const make = (
    c: (typeof withMetrics)[number],
    type: RecommendationType,
    current: number,
    recommended: number,
    expirationMs: number
  ): SimRecommendation => {
    // Spend scales with the lifted cap (never past 7 days of the new one); installs with diminishing returns.
    const ratio = recommended / Math.max(1, current)
    const expectedSpend = type === "DAILYCAP" ? Math.min(c.spend * ratio, 7 * recommended) : c.spend * Math.pow(ratio, 0.5)
    const expectedInstalls = c.spend === 0 ? 0 : Math.round(c.installs * Math.pow(expectedSpend / c.spend, INSTALL_ELASTICITY))
    return {
      id: `rec-${type === "DAILYCAP" ? "budget" : "tcpa"}-${c.campaign.id}`,
      type,
      campaign: c.campaign,
      state: "AVAILABLE",
      currentMicros: current,
      recommendedMicros: recommended,
      installs7d: c.installs,
      spend7dMicros: c.spend,
      expectedInstalls,
      expectedSpendMicros: roundMinor(expectedSpend, account),
      creationMs: now - DAY_MS,
      expirationMs,
      appliedMicros: null
    }
  }
  const budgeted = withMetrics.filter((c) => c.campaign.dailyBudgetMicros > 0)
  for (const c of budgeted.slice(0, 2)) {
    out.push(make(c, "DAILYCAP", c.campaign.dailyBudgetMicros, roundMinor(c.campaign.dailyBudgetMicros * DAILY_CAP_RAISE, account), now + EXPIRY_DAYS * DAY_MS))
  }
  const expired = budgeted[2]
  if (expired !== undefined) {
    const rec = make(expired, "DAILYCAP", expired.campaign.dailyBudgetMicros, roundMinor(expired.campaign.dailyBudgetMicros * DAILY_CAP_RAISE, account), now - DAY_MS / 24)
    out.push({ ...rec, creationMs: now - EXPIRY_DAYS * DAY_MS - DAY_MS / 24 })
  }
  const maxConversions = withMetrics.find((c) => c.campaign.biddingStrategy === "MAX_CONVERSIONS" && c.campaign.targetCpaMicros !== null && c.installs > 0)
  if (maxConversions !== undefined && maxConversions.campaign.targetCpaMicros !== null) {
    const cpa7d = maxConversions.spend / maxConversions.installs
    out.push(make(maxConversions, "TCPA", maxConversions.campaign.targetCpaMicros, roundMinor(cpa7d * TCPA_STEP, account), now + EXPIRY_DAYS * DAY_MS))
  }
  return out
}

/** The account's recommendations, seeded on first read (and again after a reset). */
const recommendationsOf = (state: SimulatorState, account: SimAccount): Array<SimRecommendation> => {
  let held = seeded.get(state)
  if (held === undefined || held.world !== state.world) {
    held = { world: state.world, byOrg: new Map() }
    seeded.set(state, held)
  }
  const known = held.byOrg.get(account.orgId)
  if (known !== undefined) return known
  const fresh = seed(state, account)
  held.byOrg.set(account.orgId, fresh)
  return fresh
}

const iso = (ms: number) => new Date(ms).toISOString()

const toWire = (account: SimAccount, r: SimRecommendation): WireObject => {
  const m = (micros: number) => money(micros, account.currency)
  const common = {
    id: r.id,
    recommendationType: r.type,
    promotedObjectId: String(r.campaign.adamId),
    promotedObjectType: "APPSTORE_APP",
    campaignId: r.campaign.id,
    campaignName: r.campaign.name,
    state: r.state,
    status: r.campaign.status,
    installs: r.installs7d,
    spend: m(r.spend7dMicros),
    averageCPA: r.installs7d === 0 ? null : m(Math.round(r.spend7dMicros / r.installs7d)),
    expectedInstalls: r.expectedInstalls,
    expectedSpend: m(r.expectedSpendMicros),
    expectedCpa: r.expectedInstalls === 0 ? null : m(Math.round(r.expectedSpendMicros / r.expectedInstalls)),
    creationTime: iso(r.creationMs),
    expirationTime: iso(r.expirationMs)
  }
  return r.type === "DAILYCAP"
    ? { ...common, suggestedDailyBudgetAmount: m(r.recommendedMicros), dailyBudget: m(r.currentMicros) }
    : {
      ...common,
      recommendedTargetCPA: m(r.recommendedMicros),
      bidStrategy: { bidStrategyType: "MAX_CONVERSIONS", bidStrategyGoal: "INSTALL", bidAmount: m(r.currentMicros) }
    }
}

/** The history record an apply or a dismiss answers with. */
const historyOf = (account: SimAccount, r: SimRecommendation): WireObject => {
  const m = (micros: number) => money(micros, account.currency)
  const { id, ...rest } = toWire(account, r)
  return {
    ...rest,
    recommendationId: id,
    ...(r.appliedMicros === null ? {} : r.type === "DAILYCAP"
      ? { appliedDailyBudgetAmount: m(r.appliedMicros) }
      : { appliedTargetCPA: m(r.appliedMicros) })
  }
}

const Query = Schema.Struct({
  filters: Schema.optional(Schema.Array(V1Filter)),
  pagination: Schema.optional(Schema.Struct({ offset: Schema.Int, pageSize: Schema.Int }))
})

const query = (type: RecommendationType) => (request: OrgRequest): Answer => {
  const body = decodeInput(Query, request.body ?? {})
  const filters = body.filters ?? []
  const byApp = filters.findIndex((f) => f.field === "promotedObjectId")
  const app = filters[byApp]
  if (app === undefined) throw invalid("recommendations are scoped by promotedObjectId: the filter is required", "filters")
  if (app.operator !== "EQUALS") throw invalid("the promotedObjectId filter takes EQUALS", `filters[${byApp}].operator`)
  const campaign = filters.find((f) => f.field === "campaignId")
  const rows = recommendationsOf(request.state, request.account)
    .filter((r) => r.type === type && String(r.campaign.adamId) === String(app.value))
    .filter((r) => campaign === undefined || String(r.campaign.id) === String(campaign.value))
  const offset = body.pagination?.offset ?? 0
  const pageSize = body.pagination?.pageSize ?? 20
  if (pageSize < 1 || pageSize > 1000) throw invalid("pageSize must be between 1 and 1000", "pagination.pageSize")
  const page = rows.slice(offset, offset + pageSize).map((r) => toWire(request.account, r))
  return v1Ok(page, { offset, pageSize, totalCount: rows.length })
}

const Action = Schema.Struct({
  id: Schema.String,
  promotedObjectId: Schema.String,
  promotedObjectType: Schema.optional(Schema.String),
  appliedDailyBudget: Schema.optional(V1Money),
  appliedTargetCPA: Schema.optional(V1Money)
})

/** Writes a campaign through the v5 handler, recorded in the change history as the caller's (SimulatorV1Routes). */
export type CampaignWrite = (request: OrgRequest, method: HttpMethod, path: string, body: unknown) => Answer

/** The recommendation an apply or dismiss names, still actionable: known, in the app, AVAILABLE and not expired. */
const actionable = (request: OrgRequest, type: RecommendationType, item: typeof Action.Type, index: number): SimRecommendation => {
  const found = recommendationsOf(request.state, request.account).find((r) => r.id === item.id && r.type === type)
  if (found === undefined || String(found.campaign.adamId) !== item.promotedObjectId) {
    throw failure(404, "NOT_FOUND", `recommendation ${item.id} not found for promoted object ${item.promotedObjectId}`, `[${index}].id`)
  }
  if (found.state !== "AVAILABLE") throw failure(400, "INVALID_STATE", `recommendation ${item.id} is already ${found.state}`, `[${index}].id`)
  if (found.expirationMs <= request.state.nowMs()) {
    throw failure(400, "RECOMMENDATION_EXPIRED", `recommendation ${item.id} expired at ${iso(found.expirationMs)}`, `[${index}].id`)
  }
  if (found.campaign.deleted) throw failure(400, "INVALID_STATE", `campaign ${found.campaign.id} is deleted`, `[${index}].id`)
  return found
}

const items = (request: OrgRequest) => {
  const list = decodeInput(Schema.Array(Action), request.body)
  if (list.length === 0) throw invalid("at least one recommendation is named", null)
  return list
}

const apply = (type: RecommendationType, write: CampaignWrite) => (request: OrgRequest): Answer => {
  const list = items(request)
  // Checked whole before any write: one bad item refuses the call.
  const found = list.map((item, index) => actionable(request, type, item, index))
  const result = found.map((r, index) => {
    const item = list[index]!
    const override = type === "DAILYCAP" ? item.appliedDailyBudget : item.appliedTargetCPA
    if (override !== undefined && override.currency !== request.account.currency) {
      throw invalid(`the amount is in ${request.account.currency}`, `[${index}].${type === "DAILYCAP" ? "appliedDailyBudget" : "appliedTargetCPA"}.currency`)
    }
    const micros = override === undefined ? r.recommendedMicros : microsFromDecimal(override.amount)
    const amount = { amount: decimalFromMicros(micros), currency: request.account.currency }
    write(request, "PUT", `/campaigns/${r.campaign.id}`, {
      campaign: type === "DAILYCAP" ? { dailyBudgetAmount: amount } : { targetCpa: amount }
    })
    r.state = "APPLIED"
    r.appliedMicros = micros
    return historyOf(request.account, r)
  })
  return v1Ok(result)
}

const dismiss = (type: RecommendationType) => (request: OrgRequest): Answer => {
  const list = items(request)
  const found = list.map((item, index) => actionable(request, type, item, index))
  return v1Ok(found.map((r) => {
    r.state = "DISMISSED"
    return historyOf(request.account, r)
  }))
}

const PATHS: Readonly<Record<RecommendationType, string>> = { DAILYCAP: "daily-budgets", TCPA: "target-cpas" }

/** The routes, as (method, path, write?, handler) for the v1 route table to wrap. */
export const recommendationRoutes = (write: CampaignWrite) =>
  (["DAILYCAP", "TCPA"] as const).flatMap((type) => [
    { path: `/recommendations/${PATHS[type]}/query`, write: false, handle: query(type) },
    { path: `/recommendations/${PATHS[type]}/apply`, write: true, handle: apply(type, write) },
    { path: `/recommendations/${PATHS[type]}/dismiss`, write: true, handle: dismiss(type) }
  ])
