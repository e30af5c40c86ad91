/**
 * The guard's watch of an applied change (docs/contract.md 3.4) in the ledger: its verdict as a badge, and on the
 * change's detail the baseline, each review (its window, verdict, reasons and the metrics compared), the next
 * review's day, the before/after chart, and the undo the guard proposed, approved here in one click as on the
 * Approvals page (the server's `callerMay` decides whether the person may), or the note saying why none was. A
 * page's undos are read together, with one read of the account's queue (`undosOf`), so a ledger of failed changes
 * costs one read more per live update, not one per change.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { CallerMay } from "@acs/domain/FourEyes"
import type { MetricComparison, Verdict, Watch, WatchWindow } from "@acs/domain/Guard"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Notice, StatusBadge, TableWrap } from "../components.tsx"
import { count, dateTime, money, percent } from "../format.ts"
import { WatchChart } from "./WatchChart.tsx"

const VERDICT_WORDS: Readonly<Record<Verdict, string>> = {
  pending: "watching: no review yet",
  passed: "passed: it did not hurt",
  failed: "failed: it hurt",
  inconclusive: "inconclusive: the guard cannot tell"
}

/** The verdict as a badge; its accessible name says whose verdict it is. */
export const VerdictBadge = (props: { readonly verdict: Verdict }) => (
  <span class={`badge verdict verdict-${props.verdict}`} title={`The guard's verdict: ${VERDICT_WORDS[props.verdict]}`}>
    <span class="visually-hidden">The guard's verdict: </span>{props.verdict}
  </span>
)

const METRIC_LABELS: Readonly<Record<MetricComparison["metric"], string>> = {
  spend: "Spend per day",
  taps: "Taps per day",
  installs: "Installs per day",
  cpt: "Cost per tap",
  cpa: "Cost per install",
  ttr: "Tap-through rate"
}

const metricValue = (metric: MetricComparison["metric"], value: number | null, currency: string): string => {
  if (value === null) return "—"
  switch (metric) {
    case "spend":
    case "cpt":
    case "cpa":
      return money(Math.round(value), currency)
    case "ttr":
      return percent(value)
    case "taps":
    case "installs":
      return count(Math.round(value * 10) / 10)
  }
}

/** A signed change: `+12.5 %`, `−20.0 %`, or `n/a` on a zero baseline. */
const changeText = (pct: number | null): string =>
  pct === null ? "n/a" : `${pct > 0 ? "+" : pct < 0 ? "−" : ""}${Math.abs(pct).toFixed(1)} %`

const windowText = (w: WatchWindow): string =>
  `${w.start === w.end ? w.start : `${w.start} to ${w.end}`} (${w.days} ${w.days === 1 ? "day" : "days"})`

const windowTotals = (w: WatchWindow, currency: string): string =>
  `${money(w.spendMicros, currency)} spent, ${count(w.taps)} taps, ${count(w.installs)} installs, ${count(w.impressions)} impressions`

const LEVEL_WORDS: Readonly<Record<Watch["level"], string>> = { campaigns: "campaign", adGroups: "ad group", keywords: "keyword" }

/** A watch's undo as the page read it: the revert, and while it waits what this person may do with it (the server's answer). */
export interface Undo {
  readonly revert: ActionRecord
  readonly may: CallerMay | undefined
}

/**
 * The undos of a page's watched changes, by the revert's id, in one read of the account's queue (which says what the
 * person may do with each): a revert no longer waiting is taken from the page, or read on its own.
 */
export const undosOf = async (projectId: string, actions: ReadonlyArray<ActionRecord>): Promise<ReadonlyMap<string, Undo>> => {
  const ids = new Set(actions.flatMap((a) => (a.watch === undefined || a.watch.revertActionId === null ? [] : [a.watch.revertActionId])))
  if (ids.size === 0) return new Map()
  const queue = await api((c) => c.actions.listApprovals({ path: { projectId }, urlParams: { limit: 1000 } }))
  const undos = new Map<string, Undo>()
  for (const pending of Either.isRight(queue) ? queue.right.approvals : []) {
    if (ids.has(pending.actionId)) undos.set(pending.actionId, { revert: pending, may: pending.callerMay })
  }
  for (const action of actions) if (ids.has(action.actionId) && !undos.has(action.actionId)) undos.set(action.actionId, { revert: action, may: undefined })
  const missing = [...ids].filter((id) => !undos.has(id))
  const read = await Promise.all(missing.map((actionId) => api((c) => c.actions.getAction({ path: { projectId, actionId } }))))
  for (const answer of read) if (Either.isRight(answer)) undos.set(answer.right.actionId, { revert: answer.right, may: undefined })
  return undos
}

/** The undo of a change: its status, and while it waits, Approve as the Approvals page has it and a link to the queue. */
const ProposedUndo = (props: { readonly revertActionId: string; readonly undo: Undo | undefined; readonly onDecided: () => void }) => {
  const { undo } = props
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const [busy, setBusy] = useState(false)

  const approve = async (revert: ActionRecord) => {
    setBusy(true)
    const answer = await api((c) => c.actions.approveAction({ path: { projectId: revert.projectId, actionId: revert.actionId } }))
    setBusy(false)
    setNotice(Either.isLeft(answer) ? { error: `Approval refused: ${answer.left.message}` } : { message: "Approved the undo." })
    props.onDecided()
  }

  const waiting = undo?.revert.status === "proposed"
  return (
    <div class="undo" role="group" aria-label="The undo">
      <h4>{undo === undefined || undo.revert.proposedBy.id === "guard" ? "The undo the guard proposed" : "The undo"}</h4>
      {undo === undefined ? <p>The undo is {props.revertActionId}: it could not be read.</p> : (
        <>
          <p>
            <StatusBadge status={undo.revert.status} /> {undo.revert.summary}
            {waiting && " — waiting for approval."}
          </p>
          {undo.revert.reason !== "" && <p class="muted">{undo.revert.reason}</p>}
          {waiting && (
            <div class="actions">
              {undo.may?.approve === true && (
                <button type="button" class="primary" disabled={busy} onClick={() => approve(undo.revert)}>Approve the undo</button>
              )}
              <a href="#/approvals">Review it in Approvals</a>
            </div>
          )}
          {waiting && undo.may !== undefined && !undo.may.approve && <p class="muted" role="note">{undo.may.reason}</p>}
        </>
      )}
      <Notice error={notice.error} message={notice.message} />
    </div>
  )
}

const Review = (props: { readonly review: Watch["reviews"][number]; readonly currency: string; readonly summary: string }) => {
  const { review } = props
  const title = `After ${review.afterDays} ${review.afterDays === 1 ? "day" : "days"}`
  return (
    <section class="review" aria-label={`${title}: ${review.verdict}`}>
      <h4>{title} <VerdictBadge verdict={review.verdict} /></h4>
      <p class="muted">{windowText(review.window)}: {windowTotals(review.window, props.currency)} · reviewed {dateTime(review.reviewedAt)}</p>
      <ul class="reasons">{review.reasons.map((r) => <li key={r}>{r}</li>)}</ul>
      <TableWrap label={`${title}: metrics of ${props.summary}`}>
        <table class="metrics">
          <caption class="visually-hidden">{title}: the metrics compared, before and after</caption>
          <thead>
            <tr><th scope="col">Metric</th><th scope="col">Before</th><th scope="col">After</th><th scope="col">Change</th></tr>
          </thead>
          <tbody>
            {review.metrics.map((m) => (
              <tr key={m.metric}>
                <th scope="row">{METRIC_LABELS[m.metric]}</th>
                <td>{metricValue(m.metric, m.before, props.currency)}</td>
                <td>{metricValue(m.metric, m.after, props.currency)}</td>
                <td class={m.changePct === null || m.changePct === 0 ? "" : m.changePct > 0 ? "up" : "down"}>{changeText(m.changePct)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </section>
  )
}

/** The watch on the change's detail. */
export const WatchPanel = (props: {
  readonly action: ActionRecord
  readonly watch: Watch
  readonly currency: string
  /** The page's undos by revert id (`undosOf`). */
  readonly undos: ReadonlyMap<string, Undo>
  readonly onDecided: () => void
}) => {
  const { watch, currency } = props
  const entities = `${LEVEL_WORDS[watch.level]}${watch.entityIds.length === 1 ? "" : "s"} ${watch.entityIds.join(", ")}`
  return (
    <section class="watch" aria-label="The guard's watch">
      <h3>The guard's watch <VerdictBadge verdict={watch.verdict} /></h3>
      <p class="muted">
        Judged on the {entities}
        {watch.changesetId !== null && `, with the other members of changeset ${watch.changesetId}`}
        {watch.appliedDay !== null && `; applied on ${watch.appliedDay}`}.
      </p>
      {watch.revertActionId !== null && (
        <ProposedUndo revertActionId={watch.revertActionId} undo={props.undos.get(watch.revertActionId)} onDecided={props.onDecided} />
      )}
      {watch.revertActionId === null && watch.revertNote !== null && (
        <p role="note"><strong>No undo proposed:</strong> {watch.revertNote}</p>
      )}
      {watch.baseline === null ? <p>No baseline yet: it is read at the first sync after the apply.</p> : (
        <p><strong>Baseline:</strong> {windowText(watch.baseline)}: {windowTotals(watch.baseline, currency)}.</p>
      )}
      <p class="next-review">
        {watch.nextReviewDay === null ? "No more reviews." : `Next review: once ${watch.nextReviewDay} is synced.`}
      </p>
      <WatchChart watch={watch} currency={currency} />
      {watch.reviews.map((review) => <Review key={review.afterDays} review={review} currency={currency} summary={props.action.summary} />)}
    </section>
  )
}
