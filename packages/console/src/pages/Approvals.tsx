/**
 * Approvals: every action waiting for a human, across every account the person reaches, oldest first. Each
 * shows its diff, the policy's reasons, who proposed it, its age and expiry; approve, reject with a reason,
 * or select several and decide at once. Who may approve each change is the server's answer for this person
 * (`callerMay`), said in plain words, not hidden: their own proposal, their agent's, or another actor's.
 */
import type { ActionRecord, PendingAction } from "@acs/domain/Actions"
import type { Settings } from "@acs/domain/Settings"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { Dialog, DiffTable, Notice, StatusBadge } from "../components.tsx"
import { diffOf } from "../diff.ts"
import { ago, dateTime, duration, kindLabel } from "../format.ts"
import { useLoad, useNow } from "../hooks.ts"
import { accountOf, actorLabel, type Session } from "../session.ts"

/** docs/contract.md 3.2: a queued action expires this long after it was last queued. */
const ttlHours = (settings: Settings): number => settings.approvalTtlHours

interface Queue {
  readonly actions: ReadonlyArray<PendingAction>
  readonly settings: Settings
  readonly failures: ReadonlyArray<string>
}

interface Decided {
  readonly actionId: string
  readonly projectId: string
  readonly summary: string
  readonly decision: "approved" | "rejected"
}

export const ApprovalsPage = (props: { readonly session: Session }) => {
  const { session } = props
  const now = useNow()
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const [rejecting, setRejecting] = useState<ReadonlyArray<ActionRecord> | null>(null)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const [decided, setDecided] = useState<ReadonlyArray<Decided>>([])
  const [busy, setBusy] = useState(false)

  const queue = useLoad<Queue>(async () => {
    const [settings, ...lists] = await Promise.all([
      apiOrThrow((c) => c.settings.getSettings()),
      ...session.accounts.map((a) => api((c) => c.actions.listApprovals({ path: { projectId: a.projectId }, urlParams: {} })))
    ])
    const actions = lists.flatMap((l) => (Either.isRight(l) ? l.right.approvals : []))
    const failures = lists.flatMap((l) => (Either.isLeft(l) ? [l.left.message] : []))
    return { actions: [...actions].sort((a, b) => a.created_at.localeCompare(b.created_at)), settings, failures }
  }, [], (event) => event.type.startsWith("action.") || event.type === "poll")

  const recent = useLoad<ReadonlyArray<ActionRecord>>(
    () => Promise.all(decided.map((d) => apiOrThrow((c) => c.actions.getAction({ path: { projectId: d.projectId, actionId: d.actionId } })))),
    [decided],
    (event) => event.type.startsWith("action.") || event.type === "poll"
  )

  const decide = async (actions: ReadonlyArray<ActionRecord>, decision: "approved" | "rejected", reason?: string) => {
    setBusy(true)
    const outcomes = await Promise.all(actions.map(async (action) => {
      const path = { projectId: action.projectId, actionId: action.actionId }
      const answer = decision === "approved"
        ? await api((c) => c.actions.approveAction({ path }))
        : await api((c) => c.actions.rejectAction({ path, payload: reason === undefined || reason === "" ? {} : { reason } }))
      return { action, answer }
    }))
    setBusy(false)
    const failed = outcomes.filter((o) => Either.isLeft(o.answer))
    const done = outcomes.filter((o) => Either.isRight(o.answer))
    setDecided((d) => [
      ...done.map((o) => ({ actionId: o.action.actionId, projectId: o.action.projectId, summary: o.action.summary, decision })),
      ...d
    ].slice(0, 20))
    setSelected(new Set())
    setNotice({
      ...(done.length > 0 ? { message: `${decision === "approved" ? "Approved" : "Rejected"} ${done.length} action${done.length === 1 ? "" : "s"}.` } : {}),
      ...(failed.length > 0
        ? { error: failed.map((o) => `${o.action.summary}: ${Either.isLeft(o.answer) ? o.answer.left.message : ""}`).join(" · ") }
        : {})
    })
    queue.reload()
  }

  const toggle = (actionId: string) =>
    setSelected((s) => {
      const next = new Set(s)
      if (next.has(actionId)) next.delete(actionId)
      else next.add(actionId)
      return next
    })

  const q = queue.data
  const chosen = q?.actions.filter((a) => selected.has(a.actionId)) ?? []
  const canApprove = session.me.canApprove

  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Approvals</h1>
      <p class="muted">
        Every change waiting for a human decision, oldest first, across {session.accounts.length} account{session.accounts.length === 1 ? "" : "s"}.
        {!canApprove && " Your role can read the queue but not decide."}
      </p>
      <Notice error={queue.error ?? notice.error} message={notice.message} />
      {q?.failures.map((f) => <Notice key={f} error={f} />)}
      {q !== undefined && q.actions.length > 0 && canApprove && (
        <div class="bulk" role="group" aria-label="Decide on the selected actions">
          <span>{chosen.length} selected</span>
          <button type="button" class="primary" disabled={busy || chosen.length === 0 || chosen.some((a) => !a.callerMay.approve)}
            onClick={() => decide(chosen, "approved")}>
            Approve selected
          </button>
          <button type="button" disabled={busy || chosen.length === 0} onClick={() => setRejecting(chosen)}>Reject selected…</button>
          {chosen.some((a) => !a.callerMay.approve) && <span class="muted">Some selected changes need another approver: you may reject them, not approve them.</span>}
        </div>
      )}
      {q === undefined ? <p>Loading the queue…</p> : q.actions.length === 0 ? <p class="empty">Nothing waits for a decision.</p> : (
        <ol class="queue">
          {q.actions.map((action) => {
            const account = accountOf(session, action.projectId)
            const currency = account?.currency ?? "USD"
            const may = action.callerMay
            const expiresAt = Date.parse(action.created_at) + ttlHours(q.settings) * 3_600_000
            const titleId = `title-${action.actionId}`
            return (
              <li key={action.actionId}>
                <article class="card" aria-labelledby={titleId} data-action-id={action.actionId}>
                  <header class="card-head">
                    {canApprove && (
                      <input type="checkbox" checked={selected.has(action.actionId)} onChange={() => toggle(action.actionId)}
                        aria-label={`Select: ${action.summary}`} />
                    )}
                    <h2 id={titleId}>{action.summary}</h2>
                    <span class={`badge risk-${action.riskTier}`}>{action.riskTier} risk</span>
                  </header>
                  <dl class="meta">
                    <div><dt>Account</dt><dd>{account?.name ?? action.projectId}</dd></div>
                    <div><dt>Kind</dt><dd>{kindLabel(action.kind)}</dd></div>
                    <div><dt>Proposed by</dt><dd>{actorLabel(action.proposedBy)}</dd></div>
                    <div><dt>Age</dt><dd title={dateTime(action.created_at)}>{ago(action.created_at, now)}</dd></div>
                    <div><dt>Expires</dt><dd title={dateTime(new Date(expiresAt).toISOString())}>
                      {expiresAt > now ? `in ${duration(expiresAt - now)}` : "now"}
                    </dd></div>
                  </dl>
                  {action.reason !== "" && <p class="reason"><strong>Why:</strong> {action.reason}</p>}
                  <DiffTable rows={diffOf(action.kind, action.payload)} currency={currency} caption={`Change proposed by ${action.summary}`} />
                  {action.policyReasons.length > 0 && (
                    <div class="reasons">
                      <h3>Why it needs a human</h3>
                      <ul>{action.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>
                    </div>
                  )}
                  {may.yours && <p class={may.approve ? "yours" : "own"} role="note">{sentence(may.reason)}</p>}
                  {may.reject && (
                    <div class="actions">
                      {may.approve && <button type="button" class="primary" disabled={busy} onClick={() => decide([action], "approved")}>Approve</button>}
                      <button type="button" disabled={busy} onClick={() => setRejecting([action])}>{may.yours && !may.approve ? "Withdraw…" : "Reject…"}</button>
                    </div>
                  )}
                </article>
              </li>
            )
          })}
        </ol>
      )}
      {decided.length > 0 && (
        <section aria-labelledby="recent-title" class="recent">
          <h2 id="recent-title">Your recent decisions</h2>
          <ul>
            {(recent.data ?? []).map((a) => (
              <li key={a.actionId} data-action-id={a.actionId}>
                <StatusBadge status={a.status} /> {a.summary}
                {a.failure !== null && <span class="error-text"> — failed: {a.failure.message}</span>}
                {" "}<a href={`#/ledger/${encodeURIComponent(a.projectId)}`}>ledger</a>
              </li>
            ))}
          </ul>
        </section>
      )}
      {rejecting !== null && (
        <RejectDialog
          actions={rejecting}
          onCancel={() => setRejecting(null)}
          onReject={(reason) => {
            const actions = rejecting
            setRejecting(null)
            void decide(actions, "rejected", reason)
          }}
        />
      )}
    </section>
  )
}

/** The server's reason as a sentence: capitalised, with a full stop. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`

const RejectDialog = (props: {
  readonly actions: ReadonlyArray<ActionRecord>
  readonly onCancel: () => void
  readonly onReject: (reason: string) => void
}) => {
  const [reason, setReason] = useState("")
  const n = props.actions.length
  return (
    <Dialog title={n === 1 ? "Reject this change?" : `Reject ${n} changes?`} onClose={props.onCancel}>
      <ul>{props.actions.map((a) => <li key={a.actionId}>{a.summary}</li>)}</ul>
      <form method="dialog" onSubmit={(event) => {
        event.preventDefault()
        props.onReject(reason)
      }}>
        <label class="field">
          <span>Reason (the proposer sees it)</span>
          <textarea value={reason} maxLength={2000} rows={3} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
        <div class="actions">
          <button type="submit" class="danger">Reject</button>
          <button type="button" onClick={props.onCancel}>Cancel</button>
        </div>
      </form>
    </Dialog>
  )
}
