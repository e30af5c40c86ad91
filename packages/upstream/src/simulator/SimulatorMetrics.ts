/**
 * Deterministic daily metrics. The finest grain is a "source" × day: a keyword, or an ad group's
 * Search Match. Its values are a pure function of (seed, source id, day) through the integer hash, so
 * nothing is stored, even for 100,000 keywords. Every coarser level is a sum of sources; search terms
 * and ads are exact integer splits of a source's (or an ad group's) day, so totals agree to the micro
 * at every level.
 *
 * A metrics vector is six numbers, all integers: impressions, taps, tap installs, new downloads (of the
 * tap installs), view installs, spend in micros. installs ≤ taps ≤ impressions always, and spend is a
 * whole number of the currency's smallest unit (cents; yen).
 *
 * Hours: a source-day's vector is spread over the day's 24 hours by one fixed curve (HOUR_WEIGHTS) with
 * nested cumulative floors (addPrefix), so the hours of a day add up to it exactly and each hour keeps
 * installs ≤ taps ≤ impressions. Today has only its elapsed hours.
 *
 * The numbers respond to changes from the hour of the change on (a change is stamped with its moment,
 * see SimulatorModel; earlier hours keep their values). A day in which something of a campaign changed
 * is cut into stretches of unchanged inputs: each stretch takes its hours from the whole-day vector its
 * inputs give, so the day is the sum of those hours:
 * - bid: with r = (the source's bid that day) / (its first bid), clamped to [0.1, 10], impressions
 *   (so taps) scale by r^0.6 and the cost per tap by r^0.4, so spend scales by about r^1.0. A keyword
 *   without its own bid, and Search Match, follow the ad group's default bid;
 * - scenario: installs per tap × (1 + installsPerTapPercent / 100), cost per tap × (1 + cptPercent / 100);
 * - daily budget: when a campaign's sources would spend more than its budget on a day, every source's
 *   vector is scaled by budget / demand and floored, metric by metric, so the campaign never spends
 *   past its budget; as hours follow the curve, by hour h it has spent at most the budget × the curve's
 *   share of hours before h (elapsedShare). On a day the budget changed, the hours before the change
 *   spend at the old budget's pace and those after at the new one's;
 * - pause: a paused entity's sources have nothing from the day of the pause on (SimulatorModel).
 */
import { hourOfMoment } from "./SimulatorCalendar.ts"
import { THEMES } from "./SimulatorCatalog.ts"
import { hash32, mix32 } from "./SimulatorHash.ts"
import { firstValue, type PastValue, type Serving, servesOn, type SimAd, type SimAdGroup, type SimCampaign, type SimKeyword, valueOn } from "./SimulatorModel.ts"
import type { Scenario } from "./SimulatorScenarios.ts"

export const IMPRESSIONS = 0
export const TAPS = 1
export const INSTALLS = 2
export const NEW_DOWNLOADS = 3
export const VIEW_INSTALLS = 4
export const SPEND_MICROS = 5
export const METRIC_COUNT = 6

/** A ratio as reports give it: four decimals, 0 without a denominator. */
export const ratio = (numerator: number, denominator: number): number =>
  denominator === 0 ? 0 : Math.round((numerator / denominator) * 10_000) / 10_000

/** An average money amount, rounded to the currency's smallest unit. */
export const average = (micros: number, count: number, unitMicros: number): number =>
  count === 0 ? 0 : Math.round(micros / count / unitMicros) * unitMicros

/**
 * A day's traffic by hour (0–23), as weights: low at night, highest in the evening. Every source follows
 * this one curve, so a budget paced by it holds for the campaign as a whole.
 */
export const HOUR_WEIGHTS: ReadonlyArray<number> = [3, 2, 1, 1, 1, 2, 3, 4, 5, 5, 5, 5, 6, 6, 5, 5, 5, 6, 6, 7, 7, 7, 6, 4]
const HOUR_WEIGHT_TOTAL = HOUR_WEIGHTS.reduce((sum, weight) => sum + weight, 0)
/** Σ of the weights of the hours before h, for h = 0…24. */
const CUMULATIVE_WEIGHTS: ReadonlyArray<number> = HOUR_WEIGHTS.reduce((sums: Array<number>, weight) => [...sums, sums[sums.length - 1]! + weight], [0])

/** The share of a day's traffic in its hours before `hour` (0–24). */
export const elapsedShare = (hour: number): number => CUMULATIVE_WEIGHTS[hour]! / HOUR_WEIGHT_TOTAL

export const HOURS_PER_DAY = 24

/**
 * Adds `sign` × the part of the day vector `v[vo..]` in its hours before `hour` into `out[oo..]`. Installs,
 * taps above them and impressions above taps are each floored at the curve's cumulative share, so every
 * hour's part (the difference of two prefixes) is non-negative and keeps installs ≤ taps ≤ impressions;
 * new downloads follow installs, view installs impressions and spend (in smallest units) taps, so an hour
 * without taps has no spend. Hour 24 gives the day exactly.
 */
export const addPrefix = (v: Float64Array, vo: number, hour: number, unit: number, out: Float64Array, oo: number, sign: number): void => {
  if (hour === 0) return
  const weight = CUMULATIVE_WEIGHTS[hour]!
  const installs = v[vo + INSTALLS]!
  const taps = v[vo + TAPS]!
  const impressions = v[vo + IMPRESSIONS]!
  const partInstalls = Math.floor((installs * weight) / HOUR_WEIGHT_TOTAL)
  const partTaps = partInstalls + Math.floor(((taps - installs) * weight) / HOUR_WEIGHT_TOTAL)
  const partImpressions = partTaps + Math.floor(((impressions - taps) * weight) / HOUR_WEIGHT_TOTAL)
  out[oo + INSTALLS]! += sign * partInstalls
  out[oo + TAPS]! += sign * partTaps
  out[oo + IMPRESSIONS]! += sign * partImpressions
  out[oo + NEW_DOWNLOADS]! += installs === 0 ? 0 : sign * Math.floor((v[vo + NEW_DOWNLOADS]! * partInstalls) / installs)
  out[oo + VIEW_INSTALLS]! += impressions === 0 ? 0 : sign * Math.floor((v[vo + VIEW_INSTALLS]! * partImpressions) / impressions)
  out[oo + SPEND_MICROS]! += taps === 0 ? 0 : sign * Math.floor(((v[vo + SPEND_MICROS]! / unit) * partTaps) / taps) * unit
}

/** Days of data kept behind today (today itself is partial). */
export const HISTORY_DAYS = 120
/** The last complete days that a restatement may change. */
export const RESTATED_DAYS = 3

export interface MetricsContext {
  readonly seed: number
  /** The account's current day and hour (its time zone): today has its hours before `todayHour`. */
  readonly today: number
  readonly todayHour: number
  /** Bumped through the control endpoint: the last RESTATED_DAYS complete days change slightly. */
  readonly restatement: number
  readonly minorUnitMicros: number
  /** A typical cost per tap, in the currency's smallest units. */
  readonly typicalCptMinor: number
  /** Scenarios by entity id (see SimulatorScenarios). */
  readonly scenarios: (entityId: number) => ReadonlyArray<Scenario> | undefined
}

/** Bid elasticity: impressions (so taps) follow r^TAP_ELASTICITY, the cost per tap r^CPT_ELASTICITY. */
export const TAP_ELASTICITY = 0.6
export const CPT_ELASTICITY = 0.4

/** Multipliers of one source-day, from its bid and its scenarios (1 each when nothing changed). */
interface Adjustment {
  reach: number
  installRate: number
  cpt: number
  /** A scenario keeps the source serving every day. */
  everyDay: boolean
}

const KEYWORD_SOURCE = 1
const SEARCH_MATCH_SOURCE = 2

interface SourceProfile {
  /** The source's own hash; each day's draws are one mix of it with the day. */
  readonly base: number
  /** Chance (of 65,536) that the source has impressions on a given day. */
  readonly activity: number
  readonly impressions: number
  readonly ttr: number
  readonly installRate: number
  readonly newShare: number
  readonly cptMinor: number
}

/**
 * Most keywords are long tail (active on a few days, a handful of impressions); a few are "whales"
 * that serve every day and carry most of the spend, as in real accounts.
 */
const profileOf = (seed: number, id: number, kind: number, typicalCptMinor: number): SourceProfile => {
  const h = hash32(seed, id, 0x51ed, kind)
  const h2 = mix32(h + 1)
  const tierRoll = h % 1000
  const spread = ((h >>> 10) & 0x3ff) / 1024
  let activity: number
  let impressions: number
  if (kind === SEARCH_MATCH_SOURCE) {
    activity = tierRoll < 150 ? 0.9 : tierRoll < 600 ? 0.6 : 0.25
    impressions = tierRoll < 150 ? 400 + 3_000 * spread : tierRoll < 600 ? 50 + 400 * spread : 5 + 40 * spread
  } else if (tierRoll < 3) {
    activity = 0.97
    impressions = 1_000 + 7_000 * spread
  } else if (tierRoll < 20) {
    activity = 0.85
    impressions = 150 + 850 * spread
  } else if (tierRoll < 150) {
    activity = 0.4
    impressions = 20 + 180 * spread
  } else {
    activity = 0.05
    impressions = 1 + 25 * spread
  }
  return {
    base: h,
    activity: Math.floor(activity * 65_536),
    impressions,
    ttr: 0.02 + 0.1 * ((h2 & 0xff) / 256),
    installRate: 0.3 + 0.4 * (((h2 >>> 8) & 0xff) / 256),
    newShare: 0.75 + 0.2 * (((h2 >>> 16) & 0xff) / 256),
    cptMinor: typicalCptMinor * (0.5 + 1.5 * ((h2 >>> 24) / 256))
  }
}

/**
 * Writes one source's metrics for the whole of `day` at `out[offset..offset+5]`; false (and `out`
 * untouched) when it had none. The caller has already checked that the source served that day.
 */
const sourceDay = (
  context: MetricsContext,
  profile: SourceProfile,
  id: number,
  kind: number,
  day: number,
  adjustment: Adjustment,
  out: Float64Array,
  offset: number
): boolean => {
  // One mix per source-day decides activity: most days of most sources stop here, so it must be cheap.
  const activityHash = mix32(profile.base ^ Math.imul(day, 0x9e3779b1))
  if ((activityHash & 0xffff) >= profile.activity && !adjustment.everyDay) return false
  let volume = (activityHash >>> 16) / 65_536
  if (context.restatement > 0 && day < context.today && day >= context.today - RESTATED_DAYS) {
    // A late correction moves the day's volume by up to ±3 %; which days were active stays put.
    const nudge = (hash32(context.seed, id, day, context.restatement * 8 + kind) & 0xff) / 255 - 0.5
    volume = Math.min(0.9999, Math.max(0, volume + nudge * 0.06))
  }
  const valueHash = mix32(activityHash + 0x6a09e667)
  const u2 = (valueHash & 0xff) / 256
  const u3 = ((valueHash >>> 8) & 0xff) / 256
  const u4 = ((valueHash >>> 16) & 0xff) / 256
  const u5 = (valueHash >>> 24) / 256
  const weekday = (day + 3) % 7
  const seasonality = weekday >= 5 ? 1.15 : 1
  const impressions = Math.floor(profile.impressions * (0.3 + 1.4 * volume) * seasonality * adjustment.reach + u2)
  if (impressions <= 0) return false
  const taps = Math.min(impressions, Math.floor(impressions * profile.ttr * (0.7 + 0.6 * u3) + u4))
  const installs = Math.min(taps, Math.floor(taps * profile.installRate * (0.7 + 0.6 * u5) * adjustment.installRate + u2))
  const newDownloads = Math.min(installs, Math.floor(installs * profile.newShare + u3))
  const viewInstalls = Math.min(impressions, Math.floor(impressions * 0.002 * u4 + u5 * 0.6))
  // At least one smallest unit per tap; no taps, no spend (the platform charges per tap).
  const spendMinor = taps === 0 ? 0 : Math.max(taps, Math.round(taps * profile.cptMinor * (0.85 + 0.3 * u3) * adjustment.cpt))
  out[offset + IMPRESSIONS] = impressions
  out[offset + TAPS] = taps
  out[offset + INSTALLS] = installs
  out[offset + NEW_DOWNLOADS] = newDownloads
  out[offset + VIEW_INSTALLS] = viewInstalls
  out[offset + SPEND_MICROS] = spendMinor * context.minorUnitMicros
  return true
}

/**
 * Splits `total` into parts proportional to integer `weights` (largest remainder, ties to the lower
 * index). Each part is the floor or ceiling of its exact share, so with total ≤ Σweights no part
 * exceeds its weight: that is what keeps installs ≤ taps ≤ impressions inside every split.
 */
const proportional = (total: number, weights: Float64Array, n: number, parts: Float64Array, remainders: Float64Array): void => {
  let weightSum = 0
  for (let i = 0; i < n; i++) weightSum += weights[i]!
  if (total === 0 || weightSum === 0) {
    parts.fill(0, 0, n)
    if (total !== 0) parts[0] = total
    return
  }
  let assigned = 0
  for (let i = 0; i < n; i++) {
    const exact = total * weights[i]!
    const base = Math.floor(exact / weightSum)
    parts[i] = base
    remainders[i] = exact - base * weightSum
    assigned += base
  }
  for (let left = total - assigned; left > 0; left--) {
    let best = 0
    for (let i = 1; i < n; i++) if (remainders[i]! > remainders[best]!) best = i
    parts[best]! += 1
    remainders[best] = -1
  }
}

/** Reusable buffers for one split of a vector into up to `capacity` parts. */
class Splitter {
  private capacity = 0
  private weights = new Float64Array(0)
  private basis = new Float64Array(0)
  private parts = new Float64Array(0)
  private remainders = new Float64Array(0)
  /** parts × METRIC_COUNT: the result of the last split. */
  result = new Float64Array(0)

  ensure(n: number): Float64Array {
    if (n > this.capacity) {
      this.capacity = Math.max(n, 2 * this.capacity, 4)
      this.weights = new Float64Array(this.capacity)
      this.basis = new Float64Array(this.capacity)
      this.parts = new Float64Array(this.capacity)
      this.remainders = new Float64Array(this.capacity)
      this.result = new Float64Array(this.capacity * METRIC_COUNT)
    }
    return this.weights
  }

  /**
   * Splits the vector at `source[offset..]` into n parts by the weights set through `ensure`:
   * installs first, then taps on top of them, then impressions on top of taps; new downloads follow
   * installs, view installs follow impressions and spend (in smallest units) follows taps.
   */
  split(source: Float64Array, offset: number, n: number, minorUnitMicros: number): void {
    const { parts, remainders, result, weights } = this
    const installs = source[offset + INSTALLS]!
    const taps = source[offset + TAPS]!
    proportional(installs, weights, n, parts, remainders)
    for (let i = 0; i < n; i++) {
      result[i * METRIC_COUNT + INSTALLS] = parts[i]!
      result[i * METRIC_COUNT + TAPS] = parts[i]!
    }
    proportional(taps - installs, weights, n, parts, remainders)
    for (let i = 0; i < n; i++) {
      const splitTaps = result[i * METRIC_COUNT + TAPS]! + parts[i]!
      result[i * METRIC_COUNT + TAPS] = splitTaps
      result[i * METRIC_COUNT + IMPRESSIONS] = splitTaps
    }
    proportional(source[offset + IMPRESSIONS]! - taps, weights, n, parts, remainders)
    for (let i = 0; i < n; i++) result[i * METRIC_COUNT + IMPRESSIONS]! += parts[i]!
    this.splitBy(INSTALLS, source[offset + NEW_DOWNLOADS]!, NEW_DOWNLOADS, n, 1)
    this.splitBy(IMPRESSIONS, source[offset + VIEW_INSTALLS]!, VIEW_INSTALLS, n, 1)
    this.splitBy(TAPS, source[offset + SPEND_MICROS]! / minorUnitMicros, SPEND_MICROS, n, minorUnitMicros)
  }

  /** Splits `total` in proportion to the parts' `basisField` into `field`, scaled by `unit`. */
  private splitBy(basisField: number, total: number, field: number, n: number, unit: number): void {
    const { basis, parts, remainders, result } = this
    for (let i = 0; i < n; i++) basis[i] = result[i * METRIC_COUNT + basisField]!
    proportional(total, basis, n, parts, remainders)
    for (let i = 0; i < n; i++) result[i * METRIC_COUNT + field] = parts[i]! * unit
  }
}

/**
 * Scales a day vector by a campaign's budget factor (< 1: the budget binds) and floors it, metric by
 * metric: floors keep installs ≤ taps ≤ impressions, and the campaign's sum within its budget (the
 * factor was chosen for exactly these floors).
 */
const capDay = (day: Float64Array, factor: number, unit: number): void => {
  if (factor >= 1) return
  for (let m = 0; m < SPEND_MICROS; m++) day[m] = Math.floor(day[m]! * factor)
  day[SPEND_MICROS] = day[TAPS] === 0 ? 0 : Math.floor((day[SPEND_MICROS]! / unit) * factor) * unit
}

/** A span of days [from, to], both included. */
export interface DayRange {
  readonly from: number
  readonly to: number
}

export const dayCount = (range: DayRange): number => range.to - range.from + 1

export const newDailyBuffer = (range: DayRange): Float64Array => new Float64Array(dayCount(range) * METRIC_COUNT)

/** A search term row's identity inside its source: the term text (null: too rare to show). */
export interface SearchTerm {
  readonly text: string | null
  readonly index: number
  /** How many terms the source has (the split's part count). */
  readonly of: number
}

/** What a split was computed for: the source (or ad group), its part count and the range. */
interface SplitKey {
  readonly kind: number
  readonly id: number
  readonly parts: number
  readonly from: number
  readonly to: number
}

const SPLIT_TERMS = 1
const SPLIT_ADS = 2

/**
 * Metrics of one account's entities. All `add*` methods add daily vectors for the days of `range`
 * into `out` (day d at (d - range.from) × METRIC_COUNT), so callers can sum without allocating.
 */
export class AccountMetrics {
  private readonly termSplitter = new Splitter()
  private readonly adSplitter = new Splitter()
  private readonly day = new Float64Array(METRIC_COUNT)
  /**
   * The last split computed: a source's search terms or an ad group's ads, all parts at once. The
   * rows of one source come one after another, so each source is computed and split only once.
   */
  private lastSplit: { readonly key: SplitKey; readonly parts: Float64Array } | null = null
  // Buffers of the last split (reused: only the last split is ever read).
  private whole: Float64Array = new Float64Array(0)
  private parts: Float64Array = new Float64Array(0)
  /**
   * The last parent mask: rows of one ad group come one after another. The world cannot change while
   * one instance computes (a report is computed synchronously), so the ad group's mask stays valid.
   */
  private lastMask: { readonly campaign: SimCampaign; readonly adGroup: SimAdGroup; readonly from: number; readonly to: number; readonly mask: Uint8Array } | null = null

  constructor(readonly context: MetricsContext) {}

  /** 1 for each day of the range on which the campaign and the ad group both served. */
  private parentMask(campaign: SimCampaign, adGroup: SimAdGroup, range: DayRange): Uint8Array {
    const last = this.lastMask
    if (last !== null && last.campaign === campaign && last.adGroup === adGroup && last.from === range.from && last.to === range.to) return last.mask
    const mask = new Uint8Array(dayCount(range))
    const simple = campaign.offPeriods === null && adGroup.offPeriods === null &&
      campaign.createdDay <= range.from && adGroup.createdDay <= range.from
    for (let day = range.from; day <= range.to; day++) {
      mask[day - range.from] = simple || (servesOn(campaign, day) && servesOn(adGroup, day)) ? 1 : 0
    }
    this.lastMask = { campaign, adGroup, from: range.from, to: range.to, mask }
    return mask
  }

  /** Whether the source (a keyword, or for null the ad group's Search Match) serves on `day` by itself. */
  private static servingOf(adGroup: SimAdGroup, keyword: SimKeyword | null): Serving {
    return keyword === null ? adGroup.searchMatchServing : keyword
  }

  /** The scenarios on a source and its parents, or null when there are none (the common case). */
  private scenariosOf(campaign: SimCampaign, adGroup: SimAdGroup, keyword: SimKeyword | null): ReadonlyArray<Scenario> | null {
    const lookup = this.context.scenarios
    const own = keyword === null ? undefined : lookup(keyword.id)
    const group = lookup(adGroup.id)
    const parent = lookup(campaign.id)
    if (own === undefined && group === undefined && parent === undefined) return null
    return [...(own ?? []), ...(group ?? []), ...(parent ?? [])]
  }

  /** Sets `adjustment` for the source on `day`: its bid against its first bid, then its scenarios. */
  private adjust(adGroup: SimAdGroup, keyword: SimKeyword | null, scenarios: ReadonlyArray<Scenario> | null, day: number, adjustment: Adjustment): void {
    adjustment.reach = 1
    adjustment.installRate = 1
    adjustment.cpt = 1
    adjustment.everyDay = false
    const ownBids = keyword?.pastBids
    if (ownBids !== undefined || adGroup.pastDefaultBids !== undefined) {
      const groupBid = valueOn(adGroup.defaultBidMicros, adGroup.pastDefaultBids, day)
      const bid = keyword === null ? groupBid : valueOn(keyword.bidMicros, ownBids, day) ?? groupBid
      const firstGroupBid = firstValue(adGroup.defaultBidMicros, adGroup.pastDefaultBids)
      const reference = keyword === null ? firstGroupBid : firstValue(keyword.bidMicros, ownBids) ?? firstGroupBid
      if (bid !== reference && reference > 0) {
        const r = Math.min(10, Math.max(0.1, bid / reference))
        adjustment.reach = Math.pow(r, TAP_ELASTICITY)
        adjustment.cpt = Math.pow(r, CPT_ELASTICITY)
      }
    }
    if (scenarios === null) return
    for (const scenario of scenarios) {
      if (day < scenario.from) continue
      adjustment.installRate *= Math.max(0, 1 + scenario.installsPerTapPercent / 100)
      adjustment.cpt *= Math.max(0.01, 1 + scenario.cptPercent / 100)
      if (scenario.everyDay) adjustment.everyDay = true
    }
  }

  private readonly adjustment: Adjustment = { reach: 1, installRate: 1, cpt: 1, everyDay: false }
  /** Budget factors already computed: campaign id → moment (a day, or a day + hour / 24) → factor (≤ 1). */
  private readonly budgetFactors = new Map<number, Map<number, number>>()
  /** Hours at which something of a campaign changed inside a day: campaign id → day → hours (1–23), ascending. */
  private readonly changeHours = new Map<number, Map<number, Array<number>>>()

  /**
   * The hours inside days at which any input of the campaign's sources changed (a budget, a bid, a
   * status, a creation, a scenario). A day without any is computed whole; one with some is cut there,
   * for every source of the campaign, since the budget's factor is the campaign's.
   */
  private changeHoursOf(campaign: SimCampaign): Map<number, Array<number>> {
    const known = this.changeHours.get(campaign.id)
    if (known !== undefined) return known
    const byDay = new Map<number, Array<number>>()
    const add = (moment: number | null): void => {
      if (moment === null) return
      const day = Math.floor(moment)
      if (day === moment) return
      const hour = hourOfMoment(moment)
      const hours = byDay.get(day)
      if (hours === undefined) byDay.set(day, [hour])
      else if (!hours.includes(hour)) hours.push(hour)
    }
    const serving = (entity: Serving): void => {
      add(entity.createdDay)
      if (entity.offPeriods !== null) {
        for (const period of entity.offPeriods) {
          add(period.from)
          add(period.until)
        }
      }
    }
    const past = <T>(values: ReadonlyArray<PastValue<T>> | undefined): void => {
      if (values !== undefined) for (const value of values) add(value.until)
    }
    const scenarios = (id: number): void => {
      const list = this.context.scenarios(id)
      if (list !== undefined) for (const scenario of list) add(scenario.from)
    }
    serving(campaign)
    past(campaign.pastBudgets)
    scenarios(campaign.id)
    for (const adGroup of campaign.adGroups) {
      serving(adGroup)
      serving(adGroup.searchMatchServing)
      past(adGroup.pastDefaultBids)
      scenarios(adGroup.id)
      for (const keyword of adGroup.keywords) {
        serving(keyword)
        past(keyword.pastBids)
        scenarios(keyword.id)
      }
    }
    for (const hours of byDay.values()) hours.sort((a, b) => a - b)
    this.changeHours.set(campaign.id, byDay)
    return byDay
  }

  /** The factors of every serving day of [first, last] (whole days: their hour 0). */
  private budgetFactorsOf(campaign: SimCampaign, first: number, last: number): Map<number, number> {
    const days = this.budgetFactors.get(campaign.id)
    const missing: Array<number> = []
    for (let d = first; d <= last; d++) if ((days === undefined || !days.has(d)) && servesOn(campaign, d)) missing.push(d)
    return this.computeBudgetFactors(campaign, missing)
  }

  /** The factor at one moment (1 when the campaign does not serve then). */
  private budgetFactorAt(campaign: SimCampaign, moment: number): number {
    const known = this.budgetFactors.get(campaign.id)?.get(moment)
    if (known !== undefined) return known
    return this.computeBudgetFactors(campaign, servesOn(campaign, moment) ? [moment] : []).get(moment) ?? 1
  }

  /**
   * The share of its demand a campaign may spend with the inputs in force at each of `missing` (moments):
   * the largest factor at which its sources' whole-day spend, each scaled and floored as addSource does,
   * stays within the budget then; 1 when the budget does not bind. All are computed in one pass over
   * the campaign's sources (one profile each).
   */
  private computeBudgetFactors(campaign: SimCampaign, missing: ReadonlyArray<number>): Map<number, number> {
    let days = this.budgetFactors.get(campaign.id)
    if (days === undefined) {
      days = new Map()
      this.budgetFactors.set(campaign.id, days)
    }
    if (missing.length === 0) return days
    const context = this.context
    const unit = context.minorUnitMicros
    const vector = new Float64Array(METRIC_COUNT)
    const adjustment: Adjustment = { reach: 1, installRate: 1, cpt: 1, everyDay: false }
    // Per missing moment: each serving source's taps and spend (smallest units), uncapped.
    const taps = missing.map((): Array<number> => [])
    const spend = missing.map((): Array<number> => [])
    const collect = (adGroup: SimAdGroup, keyword: SimKeyword | null): void => {
      const id = keyword === null ? adGroup.id : keyword.id
      const kind = keyword === null ? SEARCH_MATCH_SOURCE : KEYWORD_SOURCE
      const serving = AccountMetrics.servingOf(adGroup, keyword)
      const scenarios = this.scenariosOf(campaign, adGroup, keyword)
      const profile = profileOf(context.seed, id, kind, context.typicalCptMinor)
      const always = serving.offPeriods === null && adGroup.offPeriods === null &&
        serving.createdDay <= missing[0]! && adGroup.createdDay <= missing[0]!
      const plain = scenarios === null && keyword?.pastBids === undefined && adGroup.pastDefaultBids === undefined
      if (plain) this.adjust(adGroup, keyword, null, missing[0]!, adjustment)
      for (let i = 0; i < missing.length; i++) {
        const moment = missing[i]!
        if (!always && (!servesOn(adGroup, moment) || !servesOn(serving, moment))) continue
        if (!plain) this.adjust(adGroup, keyword, scenarios, moment, adjustment)
        if (!sourceDay(context, profile, id, kind, Math.floor(moment), adjustment, vector, 0) || vector[SPEND_MICROS] === 0) continue
        taps[i]!.push(vector[TAPS]!)
        spend[i]!.push(vector[SPEND_MICROS]! / unit)
      }
    }
    for (const adGroup of campaign.adGroups) {
      for (const keyword of adGroup.keywords) collect(adGroup, keyword)
      collect(adGroup, null)
    }
    missing.forEach((moment, i) => {
      const dayTaps = taps[i]!
      const daySpend = spend[i]!
      const budget = Math.floor(valueOn(campaign.dailyBudgetMicros, campaign.pastBudgets, moment) / unit)
      const spentAt = (f: number): number => {
        let total = 0
        for (let j = 0; j < dayTaps.length; j++) if (Math.floor(dayTaps[j]! * f) > 0) total += Math.floor(daySpend[j]! * f)
        return total
      }
      let factor = 1
      if (spentAt(1) > budget) {
        // budget / demand keeps the floored sum within the budget but floors lose a little at each
        // source; a bisection from there finds the largest factor that still does (deterministic).
        let demand = 0
        for (const value of daySpend) demand += value
        let low = budget / demand
        let high = 1
        for (let step = 0; step < 24; step++) {
          const middle = (low + high) / 2
          if (spentAt(middle) <= budget) low = middle
          else high = middle
        }
        factor = low
      }
      days.set(moment, factor)
    })
    return days
  }

  /**
   * The stretches of the first `hours` hours of `day` in which the source's inputs did not change (cut
   * at `cuts`): for each in which it served and had metrics, `emit(from, to, vector)` with the capped
   * whole-day vector of those inputs (reused: read it before returning).
   */
  private stretches(
    campaign: SimCampaign,
    adGroup: SimAdGroup,
    keyword: SimKeyword | null,
    profile: SourceProfile,
    scenarios: ReadonlyArray<Scenario> | null,
    day: number,
    hours: number,
    cuts: ReadonlyArray<number> | undefined,
    emit: (from: number, to: number, vector: Float64Array) => void
  ): void {
    const context = this.context
    const id = keyword === null ? adGroup.id : keyword.id
    const kind = keyword === null ? SEARCH_MATCH_SOURCE : KEYWORD_SOURCE
    const serving = AccountMetrics.servingOf(adGroup, keyword)
    const vector = this.day
    const count = cuts === undefined ? 0 : cuts.length
    let from = 0
    for (let i = 0; i <= count && from < hours; i++) {
      const to = i < count ? Math.min(cuts![i]!, hours) : hours
      if (to <= from) continue
      // The same expression as momentOf, so it compares equal to the moments changes were stamped with.
      const moment = from === 0 ? day : day + from / 24
      if (servesOn(campaign, moment) && servesOn(adGroup, moment) && servesOn(serving, moment)) {
        this.adjust(adGroup, keyword, scenarios, moment, this.adjustment)
        if (sourceDay(context, profile, id, kind, day, this.adjustment, vector, 0)) {
          capDay(vector, this.budgetFactorAt(campaign, moment), context.minorUnitMicros)
          emit(from, to, vector)
        }
      }
      from = to
    }
  }

  private addSource(
    campaign: SimCampaign,
    adGroup: SimAdGroup,
    keyword: SimKeyword | null,
    mask: Uint8Array,
    range: DayRange,
    out: Float64Array
  ): void {
    const context = this.context
    // Only days from HISTORY_DAYS before today up to today have data at all.
    const first = Math.max(range.from, context.today - HISTORY_DAYS)
    const last = Math.min(range.to, context.today)
    if (first > last) return
    const id = keyword === null ? adGroup.id : keyword.id
    const kind = keyword === null ? SEARCH_MATCH_SOURCE : KEYWORD_SOURCE
    const serving = AccountMetrics.servingOf(adGroup, keyword)
    const profile = profileOf(context.seed, id, kind, context.typicalCptMinor)
    const always = serving.offPeriods === null && serving.createdDay <= first
    const scenarios = this.scenariosOf(campaign, adGroup, keyword)
    const adjustment = this.adjustment
    const unit = context.minorUnitMicros
    const day = this.day
    const factors = this.budgetFactorsOf(campaign, first, last)
    const changes = this.changeHoursOf(campaign)
    for (let d = first; d <= last; d++) {
      const index = d - range.from
      const cuts = changes.size === 0 ? undefined : changes.get(d)
      const offset = index * METRIC_COUNT
      if (cuts !== undefined) {
        // A day with a change inside: the sum of its hours (today: of its elapsed hours).
        this.stretches(campaign, adGroup, keyword, profile, scenarios, d, d === context.today ? context.todayHour : HOURS_PER_DAY, cuts, (from, to, vector) => {
          addPrefix(vector, 0, to, unit, out, offset, 1)
          addPrefix(vector, 0, from, unit, out, offset, -1)
        })
        continue
      }
      // One stretch for the whole day, inline (what stretches does for it, without its closure).
      if (mask[index] === 0 || (!always && !servesOn(serving, d))) continue
      this.adjust(adGroup, keyword, scenarios, d, adjustment)
      if (!sourceDay(context, profile, id, kind, d, adjustment, day, 0)) continue
      capDay(day, factors.get(d) ?? 1, unit)
      if (d === context.today) addPrefix(day, 0, context.todayHour, unit, out, offset, 1)
      else for (let m = 0; m < METRIC_COUNT; m++) out[offset + m]! += day[m]!
    }
  }

  /**
   * The source's hours over the range's days into `out`, hour h of day d at
   * ((d - range.from) × 24 + h) × METRIC_COUNT; today's hours from `todayHour` on stay empty.
   */
  private addSourceHours(campaign: SimCampaign, adGroup: SimAdGroup, keyword: SimKeyword | null, range: DayRange, out: Float64Array): void {
    const context = this.context
    const first = Math.max(range.from, context.today - HISTORY_DAYS)
    const last = Math.min(range.to, context.today)
    if (first > last) return
    const id = keyword === null ? adGroup.id : keyword.id
    const kind = keyword === null ? SEARCH_MATCH_SOURCE : KEYWORD_SOURCE
    const profile = profileOf(context.seed, id, kind, context.typicalCptMinor)
    const scenarios = this.scenariosOf(campaign, adGroup, keyword)
    const unit = context.minorUnitMicros
    const changes = this.changeHoursOf(campaign)
    for (let d = first; d <= last; d++) {
      const base = (d - range.from) * HOURS_PER_DAY
      this.stretches(campaign, adGroup, keyword, profile, scenarios, d, d === context.today ? context.todayHour : HOURS_PER_DAY, changes.get(d), (from, to, vector) => {
        for (let h = from; h < to; h++) {
          const offset = (base + h) * METRIC_COUNT
          addPrefix(vector, 0, h + 1, unit, out, offset, 1)
          addPrefix(vector, 0, h, unit, out, offset, -1)
        }
      })
    }
  }

  addKeywordHours(campaign: SimCampaign, adGroup: SimAdGroup, keyword: SimKeyword, range: DayRange, out: Float64Array): void {
    this.addSourceHours(campaign, adGroup, keyword, range, out)
  }

  /** Every keyword ever in the ad group plus Search Match, by hour (see addSourceHours). */
  addAdGroupHours(campaign: SimCampaign, adGroup: SimAdGroup, range: DayRange, out: Float64Array): void {
    for (const keyword of adGroup.keywords) this.addSourceHours(campaign, adGroup, keyword, range, out)
    this.addSourceHours(campaign, adGroup, null, range, out)
  }

  addCampaignHours(campaign: SimCampaign, range: DayRange, out: Float64Array): void {
    for (const adGroup of campaign.adGroups) this.addAdGroupHours(campaign, adGroup, range, out)
  }

  addKeyword(campaign: SimCampaign, adGroup: SimAdGroup, keyword: SimKeyword, range: DayRange, out: Float64Array): void {
    this.addSource(campaign, adGroup, keyword, this.parentMask(campaign, adGroup, range), range, out)
  }

  addSearchMatch(campaign: SimCampaign, adGroup: SimAdGroup, range: DayRange, out: Float64Array): void {
    this.addSource(campaign, adGroup, null, this.parentMask(campaign, adGroup, range), range, out)
  }

  /** Every keyword ever in the ad group (deleted ones keep their history) plus Search Match. */
  addAdGroup(campaign: SimCampaign, adGroup: SimAdGroup, range: DayRange, out: Float64Array): void {
    const mask = this.parentMask(campaign, adGroup, range)
    if (!mask.includes(1)) return
    for (const keyword of adGroup.keywords) this.addSource(campaign, adGroup, keyword, mask, range, out)
    this.addSource(campaign, adGroup, null, mask, range, out)
  }

  addCampaign(campaign: SimCampaign, range: DayRange, out: Float64Array): void {
    for (const adGroup of campaign.adGroups) this.addAdGroup(campaign, adGroup, range, out)
  }

  /**
   * All parts of a split, laid out [part][day][metric]: `source` fills the whole's daily vectors and
   * `weigh` sets each part's weight for a day (returning false skips the day).
   */
  private splitParts(
    kind: number,
    id: number,
    range: DayRange,
    n: number,
    splitter: Splitter,
    source: (out: Float64Array) => void,
    weigh: (day: number, weights: Float64Array) => boolean
  ): Float64Array {
    const last = this.lastSplit?.key
    if (last !== undefined && last.kind === kind && last.id === id && last.parts === n && last.from === range.from && last.to === range.to) {
      return this.lastSplit!.parts
    }
    const days = dayCount(range)
    if (this.whole.length !== days * METRIC_COUNT) this.whole = newDailyBuffer(range)
    const whole = this.whole
    whole.fill(0)
    source(whole)
    if (this.parts.length < n * days * METRIC_COUNT) this.parts = new Float64Array(n * days * METRIC_COUNT)
    const parts = this.parts
    parts.fill(0, 0, n * days * METRIC_COUNT)
    const weights = splitter.ensure(n)
    for (let d = range.from; d <= range.to; d++) {
      const offset = (d - range.from) * METRIC_COUNT
      if (whole[offset + IMPRESSIONS] === 0 || !weigh(d, weights)) continue
      splitter.split(whole, offset, n, this.context.minorUnitMicros)
      for (let i = 0; i < n; i++) {
        const target = (i * days + d - range.from) * METRIC_COUNT
        for (let m = 0; m < METRIC_COUNT; m++) parts[target + m] = splitter.result[i * METRIC_COUNT + m]!
      }
    }
    this.lastSplit = { key: { kind, id, parts: n, from: range.from, to: range.to }, parts }
    return parts
  }

  private addPart(parts: Float64Array, part: number, range: DayRange, out: Float64Array): void {
    const start = part * dayCount(range) * METRIC_COUNT
    for (let i = 0; i < out.length; i++) out[i]! += parts[start + i]!
  }

  /** The terms a keyword (or, for null, the ad group's Search Match) matched: 1 to 3 of them. */
  searchTerms(adGroup: SimAdGroup, keyword: SimKeyword | null): ReadonlyArray<SearchTerm> {
    const seed = this.context.seed
    if (keyword === null) {
      const h = hash32(seed, adGroup.id, 0x7e, SEARCH_MATCH_SOURCE)
      const cores = THEMES[adGroup.theme % THEMES.length]!.cores
      const count = 1 + (h % 3)
      const texts: Array<string | null> = [cores[(h >>> 4) % cores.length]!, `${cores[(h >>> 12) % cores.length]!} app`, null]
      return texts.slice(0, count).map((text, index, all) => ({ text, index, of: all.length }))
    }
    const h = hash32(seed, keyword.id, 0x7e, KEYWORD_SOURCE)
    const text = keyword.text
    const candidates = keyword.matchType === "EXACT"
      ? [text, text.endsWith("s") ? text.slice(0, -1) : `${text}s`]
      : [text, `${text} app`, `best ${text}`, `free ${text}`].filter((term, i, all) => all.indexOf(term) === i)
    const count = keyword.matchType === "EXACT" ? (h % 4 === 0 ? 2 : 1) : 1 + (h % 3)
    // A broad keyword's long tail: some of its traffic comes from terms too rare for the platform to name.
    const texts: Array<string | null> = candidates.slice(0, count)
    if (keyword.matchType === "BROAD" && (h >>> 8) % 3 === 0) texts.push(null)
    return texts.map((term, index, all) => ({ text: term, index, of: all.length }))
  }

  /** One search term's share of its source, split exactly from the source's day. */
  addSearchTerm(
    campaign: SimCampaign,
    adGroup: SimAdGroup,
    keyword: SimKeyword | null,
    term: SearchTerm,
    range: DayRange,
    out: Float64Array
  ): void {
    const sourceId = keyword === null ? adGroup.id : keyword.id
    const terms = term.of
    const seed = this.context.seed
    // Ids are unique across entity kinds, so the source's id names it.
    const parts = this.splitParts(
      SPLIT_TERMS,
      sourceId,
      range,
      terms,
      this.termSplitter,
      (whole) => {
        if (keyword === null) this.addSearchMatch(campaign, adGroup, range, whole)
        else this.addKeyword(campaign, adGroup, keyword, range, whole)
      },
      (day, weights) => {
        // The matched keyword's own text usually wins most of the traffic.
        for (let i = 0; i < terms; i++) weights[i] = 1 + (hash32(seed, sourceId, day, 97 + i) & 0x3f) + (i === 0 ? 64 : 0)
        return true
      }
    )
    this.addPart(parts, term.index, range, out)
  }

  /**
   * One ad's share of its ad group: each day the group's metrics are split among the ads serving that
   * day (if none served, among those that existed, else all to the first ad), so ads sum to the group.
   */
  addAd(campaign: SimCampaign, adGroup: SimAdGroup, ad: SimAd, range: DayRange, out: Float64Array): void {
    const ads = adGroup.ads
    const position = ads.indexOf(ad)
    if (position < 0) return
    const seed = this.context.seed
    const parts = this.splitParts(
      SPLIT_ADS,
      adGroup.id,
      range,
      ads.length,
      this.adSplitter,
      (whole) => this.addAdGroup(campaign, adGroup, range, whole),
      (day, weights) => {
        const anyServing = ads.some((candidate) => servesOn(candidate, day))
        const anyExisting = ads.some((candidate) => day >= candidate.createdDay)
        ads.forEach((candidate, i) => {
          const eligible = anyServing ? servesOn(candidate, day) : anyExisting ? day >= candidate.createdDay : i === 0
          weights[i] = eligible
            ? 1 + (hash32(seed, candidate.id, day, 131) & 0x3f) + (candidate.creativeType === "DEFAULT_PRODUCT_PAGE" ? 32 : 0)
            : 0
        })
        return true
      }
    )
    this.addPart(parts, position, range, out)
  }
}

export const isEmpty = (vector: Float64Array, offset = 0): boolean =>
  vector[offset + IMPRESSIONS] === 0 && vector[offset + TAPS] === 0 && vector[offset + INSTALLS] === 0 &&
  vector[offset + SPEND_MICROS] === 0 && vector[offset + VIEW_INSTALLS] === 0
