/**
 * The guard's watch of an applied change (docs/contract.md 3.4) in the ledger: its verdict as a badge, and on the
 * change's detail the baseline, each review (its window, verdict, reasons and the metrics compared), the next
 * review's day, the before/after chart, and the undo the guard proposed, approved here in one click as on the
 * Approvals page (the server's `callerMay` decides whether the person may), or the note saying why none was.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { MetricComparison, Verdict, Watch, WatchWindow } from "@acs/domain/Guard"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { Notice, StatusBadge, TableWrap } from "../components.tsx"
import { count, dateTime, money, percent } from "../format.ts"
import { useLoad } from "../hooks.ts"
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

/**
 * The guard's undo: its status, and while it waits, Approve as the Approvals page has it (the server's answer
 * for this person, read from the queue) and a link to the queue.
 */
const ProposedUndo = (props: { readonly action: ActionRecord; readonly revertActionId: string }) => {
  const { projectId } = props.action
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const [busy, setBusy] = useState(false)
  const undo = useLoad(async () => {
    const revert = await apiOrThrow((c) => c.actions.getAction({ path: { projectId, actionId: props.revertActionId } }))
    if (revert.status !== "proposed") return { revert, may: undefined }
    const queue = await api((c) => c.actions.listApprovals({ path: { projectId }, urlParams: { limit: 1000 } }))
    const pending = Either.isRight(queue) ? queue.right.approvals.find((a) => a.actionId === revert.actionId) : undefined
    return { revert, may: pending?.callerMay }
  }, [props.revertActionId], (event) => (event.type.startsWith("action.") && event.projectId === projectId) || event.type === "poll")

  const approve = async () => {
    setBusy(true)
    const answer = await api((c) => c.actions.approveAction({ path: { projectId, actionId: props.revertActionId } }))
    setBusy(false)
    setNotice(Either.isLeft(answer) ? { error: `Approval refused: ${answer.left.message}` } : { message: "Approved the undo." })
    undo.reload()
  }

  const data = undo.data
  return (
    <div class="undo" role="group" aria-label="The undo">
      <h4>{data === undefined || data.revert.proposedBy.id === "guard" ? "The undo the guard proposed" : "The undo"}</h4>
      {undo.error !== undefined ? <Notice error={undo.error} /> : data === undefined ? <p role="status">Reading the undo…</p> : (
        <>
          <p>
            <StatusBadge status={data.revert.status} /> {data.revert.summary}
            {data.revert.status === "proposed" && " — waiting for approval."}
          </p>
          {data.revert.reason !== "" && <p class="muted">{data.revert.reason}</p>}
          {data.revert.status === "proposed" && (
            <div class="actions">
              {data.may?.approve === true && (
                <button type="button" class="primary" disabled={busy} onClick={approve}>Approve the undo</button>
              )}
              <a href="#/approvals">Review it in Approvals</a>
            </div>
          )}
          {data.revert.status === "proposed" && data.may !== undefined && !data.may.approve && <p class="muted" role="note">{data.may.reason}</p>}
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
export const WatchPanel = (props: { readonly action: ActionRecord; readonly watch: Watch; readonly currency: string }) => {
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
      {watch.revertActionId !== null && <ProposedUndo action={props.action} revertActionId={watch.revertActionId} />}
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
