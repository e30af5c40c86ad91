/**
 * Approvals: every action waiting for a human, across every account the person reaches, oldest first. Each
 * shows its diff, the policy's reasons, who proposed it, its age and expiry; approve, reject with a reason,
 * or select several and decide at once. A queued changeset is one card (ChangesetCard.tsx), decided as a whole;
 * its members are never cards of their own. Who may approve each change is the server's answer for this person
 * (`callerMay`), said in plain words, not hidden: their own proposal, their agent's, or another actor's.
 */
import type { ActionRecord, PendingAction } from "@acs/domain/Actions"
import type { Changeset } from "@acs/domain/Changesets"
import type { Settings } from "@acs/domain/Settings"
import { Either } from "effect"
import { useEffect, useState } from "preact/hooks"
import { api, type ApiFailure, apiOrThrow } from "../api.ts"
import { mayDecideChangeset } from "../changesets.ts"
import { Dialog, DiffTable, Notice, StatusBadge } from "../components.tsx"
import { diffOf } from "@acs/domain/ActionDiff"
import { ago, dateTime, duration, kindLabel } from "../format.ts"
import { useLoad, useNow } from "../hooks.ts"
import { accountOf, actorLabel, type Session } from "../session.ts"
import { HarvestDelivery } from "./HarvestDelivery.tsx"
import { ChangesetCard, type QueuedChangeset } from "./ChangesetCard.tsx"

/** docs/contract.md 3.2: a queued action expires this long after it was last queued. */
const ttlHours = (settings: Settings): number => settings.approvalTtlHours

interface Queue {
  readonly actions: ReadonlyArray<PendingAction>
  readonly changesets: ReadonlyArray<QueuedChangeset>
  /** Campaign names of the accounts with a queued changeset, by campaign id. */
  readonly campaignNames: ReadonlyMap<string, string>
  readonly settings: Settings
  readonly failures: ReadonlyArray<string>
}

/** A decision is worth a read again when an action or a changeset moved, or on the slow poll. */
const moves = (type: string) => type.startsWith("action.") || type.startsWith("changeset.") || type === "poll"

const failureOf = <A,>(answer: Either.Either<A, ApiFailure>): string | undefined => (Either.isLeft(answer) ? answer.left.message : undefined)

/**
 * A queued changeset's members, by its plan: they change only when it is submitted again (a new plan hash), so
 * the page's live re-reads cost one list per account, not one read per changeset (the read rate limit).
 */
const membersByPlan = new Map<string, ReadonlyArray<ActionRecord>>()
/** Campaign names by account, read once per page visit: a card names campaigns, which rarely change. */
const campaignNamesByAccount = new Map<string, ReadonlyMap<string, string>>()

const membersOf = async (changeset: Changeset): Promise<Either.Either<ReadonlyArray<ActionRecord>, ApiFailure>> => {
  const key = `${changeset.changesetId}:${changeset.planHash ?? ""}`
  const known = membersByPlan.get(key)
  if (known !== undefined) return Either.right(known)
  const detail = await api((c) => c.changesets.getChangeset({ path: { projectId: changeset.projectId, changesetId: changeset.changesetId } }))
  if (Either.isRight(detail) && detail.right.changeset.planHash === changeset.planHash) {
    // Decided changesets leave the queue; their plans are not read again.
    if (membersByPlan.size >= 200) membersByPlan.clear()
    membersByPlan.set(key, detail.right.memberActions)
  }
  return Either.map(detail, (d) => d.memberActions)
}

const campaignNamesOf = async (projectId: string): Promise<ReadonlyMap<string, string>> => {
  const known = campaignNamesByAccount.get(projectId)
  if (known !== undefined) return known
  const listed = await api((c) => c.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 1000 } }))
  // Without names the card shows campaign ids: not worth a failure on the page.
  if (Either.isLeft(listed)) return new Map()
  const names = new Map(listed.right.campaigns.map((c) => [c.campaignId, c.name] as const))
  campaignNamesByAccount.set(projectId, names)
  return names
}

/** Every queued changeset of the accounts, with its members (in plan order), oldest submission first. */
const loadChangesets = async (session: Session, settings: Settings) => {
  const lists = await Promise.all(session.accounts.map((a) =>
    api((c) => c.changesets.listChangesets({ path: { projectId: a.projectId }, urlParams: { status: "queued" } }))
  ))
  const queued = lists.flatMap((l) => (Either.isRight(l) ? l.right.changesets : []))
  const [members, names] = await Promise.all([
    Promise.all(queued.map(membersOf)),
    Promise.all([...new Set(queued.map((cs) => cs.projectId))].map(campaignNamesOf))
  ])
  const changesets = queued.flatMap((changeset, i): ReadonlyArray<QueuedChangeset> => {
    const read = members[i]!
    return Either.isLeft(read) ? [] : [{ changeset, members: read.right, may: mayDecideChangeset(settings.fourEyes, session.me, changeset, read.right) }]
  })
  return {
    changesets: changesets.sort((a, b) => (a.changeset.submittedAt ?? "").localeCompare(b.changeset.submittedAt ?? "")),
    campaignNames: new Map(names.flatMap((n) => [...n])),
    failures: [...lists.map(failureOf), ...members.map(failureOf)].flatMap((f) => (f === undefined ? [] : [f]))
  }
}

interface DecidedChangeset {
  readonly changesetId: string
  readonly projectId: string
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
  const [rejectingChangeset, setRejectingChangeset] = useState<Changeset | null>(null)
  /** An approval refused, by changeset, with the plan it was about: a plan submitted again since is reviewed afresh. */
  const [refusals, setRefusals] = useState<ReadonlyMap<string, { readonly planHash: string | null; readonly failure: ApiFailure }>>(new Map())
  const [decidedChangesets, setDecidedChangesets] = useState<ReadonlyArray<DecidedChangeset>>([])
  // Before the first read (effects run in order): a visit to the page reads the campaign names afresh.
  useEffect(() => campaignNamesByAccount.clear(), [])

  const queue = useLoad<Queue>(async () => {
    const settings = await apiOrThrow((c) => c.settings.getSettings())
    const [lists, changesets] = await Promise.all([
      Promise.all(session.accounts.map((a) => api((c) => c.actions.listApprovals({ path: { projectId: a.projectId }, urlParams: {} })))),
      loadChangesets(session, settings)
    ])
    const actions = lists.flatMap((l) => (Either.isRight(l) ? l.right.approvals : []))
    const failures = lists.flatMap((l) => (Either.isLeft(l) ? [l.left.message] : []))
    return {
      actions: [...actions].sort((a, b) => a.created_at.localeCompare(b.created_at)),
      changesets: changesets.changesets,
      campaignNames: changesets.campaignNames,
      settings,
      failures: [...failures, ...changesets.failures]
    }
  }, [], (event) => moves(event.type))

  const recentChangesets = useLoad<ReadonlyArray<Changeset>>(
    () => Promise.all(decidedChangesets.map((d) => apiOrThrow((c) => c.changesets.getChangeset({ path: d })).then((detail) => detail.changeset))),
    [decidedChangesets],
    (event) => moves(event.type)
  )

  const decideChangeset = async (changeset: Changeset, decision: "approved" | "rejected", reason?: string) => {
    setBusy(true)
    const path = { projectId: changeset.projectId, changesetId: changeset.changesetId }
    const answer = decision === "approved"
      ? await api((c) => c.changesets.approveChangeset({ path, payload: { planHash: changeset.planHash ?? "" } }))
      : await api((c) => c.changesets.rejectChangeset({ path, payload: reason === undefined || reason === "" ? {} : { reason } }))
    setBusy(false)
    setRefusals((r) => {
      const next = new Map(r)
      if (Either.isLeft(answer)) next.set(changeset.changesetId, { planHash: changeset.planHash, failure: answer.left })
      else next.delete(changeset.changesetId)
      return next
    })
    if (Either.isRight(answer)) {
      setDecidedChangesets((d) => [{ changesetId: changeset.changesetId, projectId: changeset.projectId }, ...d].slice(0, 20))
      setNotice({ message: `${decision === "approved" ? "Approved" : "Rejected"} the changeset “${changeset.title}”.` })
    } else if (decision === "rejected") {
      setNotice({ error: `${changeset.title}: ${answer.left.message}` })
    }
    queue.reload()
  }

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
  const refusalOf = (changeset: Changeset) => {
    const refusal = refusals.get(changeset.changesetId)
    return refusal !== undefined && refusal.planHash === changeset.planHash ? refusal.failure : undefined
  }
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
      {q !== undefined && q.changesets.length > 0 && (
        <ol class="queue changesets" aria-label="Changesets waiting for a decision">
          {q.changesets.map((queued) => {
            const { changeset } = queued
            const account = accountOf(session, changeset.projectId)
            return (
              <li key={changeset.changesetId}>
                <ChangesetCard
                  queued={queued}
                  accountName={account?.name ?? changeset.projectId}
                  currency={account?.currency ?? "USD"}
                  campaignNames={q.campaignNames}
                  ttlHours={ttlHours(q.settings)}
                  now={now}
                  busy={busy}
                  failure={refusalOf(changeset)}
                  onApprove={() => decideChangeset(changeset, "approved")}
                  onReject={() => setRejectingChangeset(changeset)}
                />
              </li>
            )
          })}
        </ol>
      )}
      {q === undefined ? <p>Loading the queue…</p> : q.actions.length === 0 && q.changesets.length === 0 ? <p class="empty">Nothing waits for a decision.</p> : q.actions.length === 0 ? null : (
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
                  <HarvestDelivery payload={action.payload} currency={currency} />
                  {action.policyReasons.length > 0 && (
                    <div class="reasons">
                      <h3>Why it needs a human</h3>
                      <ul>{action.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>
                    </div>
                  )}
                  {action.approvals.length > 0 && (
                    <p class="second" role="note">
                      Approved by {action.approvals.map((a) => `${actorLabel(a.by)} (${ago(a.at, now)})`).join(", ")}: a high-risk change
                      needs a second person to approve it.{!may.approve && !may.yours && ` ${sentence(may.reason)}`}
                    </p>
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
      {(decided.length > 0 || decidedChangesets.length > 0) && (
        <section aria-labelledby="recent-title" class="recent">
          <h2 id="recent-title">Your recent decisions</h2>
          <ul>
            {(recentChangesets.data ?? []).map((cs) => (
              <li key={cs.changesetId} data-changeset-id={cs.changesetId}>
                <StatusBadge status={cs.status} /> Changeset “{cs.title}” ({plural(cs.members.total, "member")})
                {" "}<a href={`#/ledger/${encodeURIComponent(cs.projectId)}`}>ledger</a>
              </li>
            ))}
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
      {rejectingChangeset !== null && (
        <RejectDialog
          summaries={[`Changeset “${rejectingChangeset.title}” and its ${plural(rejectingChangeset.members.total, "member")}`]}
          onCancel={() => setRejectingChangeset(null)}
          onReject={(reason) => {
            const changeset = rejectingChangeset
            setRejectingChangeset(null)
            void decideChangeset(changeset, "rejected", reason)
          }}
        />
      )}
      {rejecting !== null && (
        <RejectDialog
          summaries={rejecting.map((a) => a.summary)}
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

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

/** The server's reason as a sentence: capitalised, with a full stop. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`

const RejectDialog = (props: {
  readonly summaries: ReadonlyArray<string>
  readonly onCancel: () => void
  readonly onReject: (reason: string) => void
}) => {
  const [reason, setReason] = useState("")
  const n = props.summaries.length
  return (
    <Dialog title={n === 1 ? "Reject this change?" : `Reject ${n} changes?`} onClose={props.onCancel}>
      <ul>{props.summaries.map((summary, i) => <li key={i}>{summary}</li>)}</ul>
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
