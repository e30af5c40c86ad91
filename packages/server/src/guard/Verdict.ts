/**
 * The guard's verdict on an applied change (docs/contract.md 3.4) as one pure rule: the entity's metrics in the
 * window after the apply against its baseline before it, both as rates per day (the windows may differ in length).
 * In the vocabulary of canary analysis:
 * - `inconclusive` when it cannot know: too little data in either window (fewer than `minTaps` taps and fewer than
 *   `minInstalls` installs), or something else changed the entity in the window (a confounder: an outside change,
 *   another acs action, a restated day), named, so the verdict never blames the wrong change; or when a metric got
 *   worse past the noise band but not past the failure line;
 * - `failed` when the cost per install rose past `failCpaRisePct` or installs per day fell past
 *   `failInstallsDropPct` (installs that fell to none from a baseline with some: −100 %);
 * - `passed` otherwise: within the noise band, or better.
 * A zero baseline gives no percentage (null); it never fails a change on its own. Property-tested in
 * test/unit/verdict.test.ts.
 */
import type { GuardSettings, Judgement, MetricComparison } from "@acs/domain/Guard"

/** An entity's totals over a window of complete days. */
export interface WindowTotals {
  readonly days: number
  readonly spendMicros: number
  readonly impressions: number
  readonly taps: number
  readonly installs: number
}

export interface VerdictInput {
  readonly baseline: WindowTotals
  readonly after: WindowTotals
  readonly settings: Pick<GuardSettings, "noiseBandPct" | "minTaps" | "minInstalls" | "failCpaRisePct" | "failInstallsDropPct">
  /** What else changed the entity (or its parents) inside the windows, each said in a sentence. */
  readonly confounders: ReadonlyArray<string>
}

const ratio = (numerator: number, denominator: number): number | null => (denominator > 0 ? numerator / denominator : null)

/** Percent change from `before` to `after`, rounded to a tenth; null without a baseline. Two zeros are no change. */
export const changePct = (before: number | null, after: number | null): number | null => {
  if (before === null || after === null) return null
  if (before === 0) return after === 0 ? 0 : null
  return Math.round(((after - before) / before) * 1000) / 10
}

const comparison = (metric: MetricComparison["metric"], before: number | null, after: number | null): MetricComparison => ({
  metric,
  before,
  after,
  changePct: changePct(before, after)
})

/** The six metrics compared: spend, taps and installs per day; cost per tap and per install; tap-through rate. */
export const compareMetrics = (baseline: WindowTotals, after: WindowTotals): ReadonlyArray<MetricComparison> => {
  const perDay = (w: WindowTotals, value: number) => ratio(value, w.days)
  return [
    comparison("spend", perDay(baseline, baseline.spendMicros), perDay(after, after.spendMicros)),
    comparison("taps", perDay(baseline, baseline.taps), perDay(after, after.taps)),
    comparison("installs", perDay(baseline, baseline.installs), perDay(after, after.installs)),
    comparison("cpt", ratio(baseline.spendMicros, baseline.taps), ratio(after.spendMicros, after.taps)),
    comparison("cpa", ratio(baseline.spendMicros, baseline.installs), ratio(after.spendMicros, after.installs)),
    comparison("ttr", ratio(baseline.taps, baseline.impressions), ratio(after.taps, after.impressions))
  ]
}

/** Why a window says nothing, or null when it has enough data. */
const thinness = (label: "before" | "after", w: WindowTotals, settings: VerdictInput["settings"]): string | null =>
  w.days > 0 && (w.taps >= settings.minTaps || w.installs >= settings.minInstalls)
    ? null
    : `too little data ${label} the change: ${w.taps} taps and ${w.installs} installs in ${w.days} ${w.days === 1 ? "day" : "days"} ` +
      `(a window needs ${settings.minTaps} taps or ${settings.minInstalls} installs)`

/** A signed percentage as the reasons say it: `+12.5%`, `−20.0%` (a minus sign, as the failure lines). */
const pct = (value: number) => `${value > 0 ? "+" : value < 0 ? "−" : ""}${Math.abs(value).toFixed(1)}%`

export const judge = (input: VerdictInput): Judgement => {
  const { after, baseline, settings } = input
  const metrics = compareMetrics(baseline, after)
  const change = (name: MetricComparison["metric"]) => metrics.find((m) => m.metric === name)!.changePct
  const thin = [thinness("before", baseline, settings), thinness("after", after, settings)].filter((r): r is string => r !== null)
  if (thin.length > 0) return { verdict: "inconclusive", reasons: thin, metrics }
  if (input.confounders.length > 0) {
    return { verdict: "inconclusive", reasons: input.confounders.map((c) => `confounded: ${c}`), metrics }
  }
  const cpa = change("cpa")
  // Installs that fell to none count as −100 %; a baseline of none gives no percentage.
  const installs = baseline.installs > 0 && after.installs === 0 ? -100 : change("installs")
  const failed = [
    ...(cpa !== null && cpa > settings.failCpaRisePct
      ? [`cost per install ${pct(cpa)}, past the +${settings.failCpaRisePct}% failure line`]
      : []),
    ...(installs !== null && installs < -settings.failInstallsDropPct
      ? [`installs per day ${pct(installs)}, past the −${settings.failInstallsDropPct}% failure line`]
      : [])
  ]
  if (failed.length > 0) return { verdict: "failed", reasons: failed, metrics }
  const worse = [
    ...(cpa !== null && cpa > settings.noiseBandPct ? [`cost per install ${pct(cpa)}`] : []),
    ...(installs !== null && installs < -settings.noiseBandPct ? [`installs per day ${pct(installs)}`] : [])
  ]
  if (worse.length > 0) {
    return {
      verdict: "inconclusive",
      reasons: [`worse than the ±${settings.noiseBandPct}% noise band but not past the failure line: ${worse.join(", ")}`],
      metrics
    }
  }
  return {
    verdict: "passed",
    reasons: [
      `cost per install ${cpa === null ? "n/a" : pct(cpa)} and installs per day ${installs === null ? "n/a" : pct(installs)}: ` +
      `within the ±${settings.noiseBandPct}% noise band or better`
    ],
    metrics
  }
}

/**
 * A confounder when the platform restated the baseline's days since the watch opened: its installs or spend moved
 * past the noise band between the watch's snapshot and the review's read (a late correction of a few percent is not).
 */
export const restatedBaseline = (before: WindowTotals, now: WindowTotals, bandPct: number): ReadonlyArray<string> => {
  const moved = (a: number, b: number) => a > 0 && (Math.abs(b - a) / a) * 100 > bandPct
  return moved(before.installs, now.installs) || moved(before.spendMicros, now.spendMicros)
    ? [`the days before the change were restated since the watch opened: installs ${before.installs} → ${now.installs}, spend ${before.spendMicros} → ${now.spendMicros} micros`]
    : []
}
