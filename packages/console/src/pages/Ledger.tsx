/**
 * The ledger of one account: acs actions and changes made outside acs on one timeline, newest first, with
 * filters (status, kind, origin, who proposed, the guard's verdict: all on the server, so paging walks the filtered
 * ledger), cursor paging, warnings and the failed step in plain words, the guard's watch of an applied change (its
 * verdict as a badge, its reviews and proposed undo on the detail: Watch.tsx), links between an action and its revert, and a
 * revert that first shows what it will write (the revert's own preview, `?preview=true`). A changeset's members
 * on the page sit under one row of their changeset (its title and status, expandable); a changeset is reverted
 * as a whole (ChangesetRevert.tsx), its members never one by one.
 */
import { type ActionRecord, ActionStatus, type Actor, isProposalResponse, type ProposalPreview } from "@acs/domain/Actions"
import { Verdict } from "@acs/domain/Guard"
import type { Changeset } from "@acs/domain/Changesets"
import { proposalKinds } from "@acs/domain/ProposalKinds"
import { Either } from "effect"
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { AccountPicker, Dialog, DiffTable, Notice, StatusBadge } from "../components.tsx"
import { diffOf } from "@acs/domain/ActionDiff"
import { dateTime, kindLabel } from "../format.ts"
import { useLoad } from "../hooks.ts"
import { accountOf, actorLabel, type Session } from "../session.ts"
import { HarvestDelivery } from "./HarvestDelivery.tsx"
import { ChangesetRevertConfirmation } from "./ChangesetRevert.tsx"
import { type Undo, undosOf, VerdictBadge, WatchPanel } from "./Watch.tsx"

const STATUSES = ActionStatus.literals
const VERDICTS = Verdict.literals
const PAGE_SIZE = 25

type Status = (typeof STATUSES)[number]

interface Filters {
  readonly status: Status | ""
  readonly kind: string
  readonly origin: "" | "acs" | "external"
  readonly who: string
  readonly verdict: Verdict | ""
}

/** Who may be picked in the "who" filter: the person, the org's keys and people (for admins), and whoever the ledger showed. */
const useProposers = (session: Session, seen: ReadonlyArray<ActionRecord> | undefined): ReadonlyArray<Actor> => {
  const admin = session.me.scope === "admin"
  const known = useLoad(async () => {
    if (!admin) return []
    const [keys, people] = await Promise.all([api((c) => c.keys.listKeys()), api((c) => c.people.listPeople())])
    return [
      ...(Either.isRight(people) ? people.right.people.map((p): Actor => ({ kind: "person", id: p.personId, name: p.name })) : []),
      ...(Either.isRight(keys) ? keys.right.keys.map((k): Actor => ({ kind: "key", id: k.keyId, name: k.name })) : [])
    ]
  }, [admin])
  const [remembered, setRemembered] = useState<ReadonlyMap<string, Actor>>(new Map())
  useEffect(() => {
    const fresh = (seen ?? []).map((a) => a.proposedBy).filter((actor) => !remembered.has(actor.id))
    if (fresh.length > 0) setRemembered((m) => new Map([...m, ...fresh.map((actor) => [actor.id, actor] as const)]))
  }, [seen])
  const all = new Map<string, Actor>([[session.me.id, { kind: "person", id: session.me.id, name: session.me.name }]])
  for (const actor of [...(known.data ?? []), ...remembered.values()]) if (!all.has(actor.id)) all.set(actor.id, actor)
  return [...all.values()]
}

/** A row of the page: an action on its own, or a changeset with its members on this page (newest first). */
type Row =
  | { readonly kind: "action"; readonly action: ActionRecord }
  | { readonly kind: "changeset"; readonly changesetId: string; readonly members: Array<ActionRecord> }

/** The page's actions with each changeset's members gathered under its row, placed where its newest member is. */
const rowsOf = (actions: ReadonlyArray<ActionRecord>): ReadonlyArray<Row> => {
  const rows: Array<Row> = []
  const groups = new Map<string, Array<ActionRecord>>()
  for (const action of actions) {
    if (action.changesetId === null) {
      rows.push({ kind: "action", action })
      continue
    }
    const members = groups.get(action.changesetId)
    if (members !== undefined) {
      members.push(action)
      continue
    }
    const fresh = [action]
    groups.set(action.changesetId, fresh)
    rows.push({ kind: "changeset", changesetId: action.changesetId, members: fresh })
  }
  return rows
}

/** The changesets the page's members belong to: the account's list in one read, any older one on its own. */
const changesetsOf = async (projectId: string, actions: ReadonlyArray<ActionRecord>): Promise<ReadonlyMap<string, Changeset>> => {
  const ids = new Set(actions.flatMap((a) => (a.changesetId === null ? [] : [a.changesetId])))
  if (ids.size === 0) return new Map()
  const listed = await api((c) => c.changesets.listChangesets({ path: { projectId }, urlParams: { limit: 1000 } }))
  const found = new Map((Either.isRight(listed) ? listed.right.changesets : []).filter((c) => ids.has(c.changesetId)).map((c) => [c.changesetId, c] as const))
  const missing = [...ids].filter((id) => !found.has(id))
  const read = await Promise.all(missing.map((changesetId) => api((c) => c.changesets.getChangeset({ path: { projectId, changesetId } }))))
  for (const detail of read) if (Either.isRight(detail)) found.set(detail.right.changeset.changesetId, detail.right.changeset)
  return found
}

/** The revert's preview: what the compensating change writes, and whether it applies at once or queues. */
const RevertConfirmation = (props: {
  readonly action: ActionRecord
  readonly currency: string
  readonly onRevert: () => void
  readonly onClose: () => void
}) => {
  const { action } = props
  const [preview, setPreview] = useState<{ readonly answer?: ProposalPreview; readonly error?: string }>({})
  useEffect(() => {
    void api((c) => c.actions.revertAction({ path: { projectId: action.projectId, actionId: action.actionId }, urlParams: { preview: true } }))
      .then((answer) => {
        if (Either.isLeft(answer)) return setPreview({ error: `This change cannot be reverted: ${answer.left.message}` })
        // A preview answers no actionId; anything else would mean the revert was recorded.
        if (isProposalResponse(answer.right)) return setPreview({ error: "acs recorded a revert instead of previewing it; see the ledger" })
        setPreview({ answer: answer.right })
      })
  }, [action.actionId])
  const answer = preview.answer
  return (
    <Dialog title="Revert this change?" onClose={props.onClose}>
      <p>{action.summary}</p>
      {preview.error !== undefined ? <Notice error={preview.error} /> : answer === undefined ? <p role="status">Working out what the revert writes…</p> : (
        <>
          <p class="muted">The revert writes: <strong class="revert-summary">{answer.summary}</strong></p>
          <DiffTable rows={diffOf(answer.kind, answer.payload)} currency={props.currency} caption="What the revert writes"
            priorLabel="Now" proposedLabel="Revert writes" />
          <div role="note">
            <p>{answer.mode === "auto_applied" ? "It applies at once." : "It will wait for an approver:"}</p>
            {answer.mode === "queued" && <ul>{answer.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>}
          </div>
        </>
      )}
      <div class="actions">
        {answer !== undefined && <button type="button" class="danger" onClick={props.onRevert}>Revert</button>}
        <button type="button" onClick={props.onClose}>Cancel</button>
      </div>
    </Dialog>
  )
}

export const LedgerPage = (props: { readonly session: Session; readonly projectId: string | undefined }) => {
  const { session } = props
  const projectId = props.projectId ?? session.accounts[0]?.projectId
  const account = projectId === undefined ? undefined : accountOf(session, projectId)
  const currency = account?.currency ?? "USD"
  const [filters, setFilters] = useState<Filters>({ status: "", kind: "", origin: "", who: "", verdict: "" })
  /** The cursors of the pages before this one: "Newer" goes back one. */
  const [cursors, setCursors] = useState<ReadonlyArray<string | undefined>>([undefined])
  const before = cursors[cursors.length - 1]
  const [reverting, setReverting] = useState<ActionRecord | null>(null)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})

  const [revertingChangeset, setRevertingChangeset] = useState<Changeset | null>(null)

  const page = useLoad(async () => {
    if (projectId === undefined) return { actions: [], nextBefore: null, changesets: new Map<string, Changeset>(), undos: new Map<string, Undo>() }
    const listed = await apiOrThrow((c) =>
      c.actions.listActions({
        path: { projectId },
        urlParams: {
          limit: PAGE_SIZE,
          ...(before === undefined ? {} : { before }),
          ...(filters.status === "" ? {} : { status: filters.status }),
          ...(filters.kind === "" ? {} : { kind: filters.kind as ActionRecord["kind"] }),
          ...(filters.origin === "" ? {} : { origin: filters.origin }),
          ...(filters.who === "" ? {} : { proposedBy: filters.who }),
          ...(filters.verdict === "" ? {} : { verdict: filters.verdict })
        }
      })
    )
    const [changesets, undos] = await Promise.all([changesetsOf(projectId, listed.actions), undosOf(projectId, listed.actions)])
    return { ...listed, changesets, undos }
  }, [projectId, before, filters.status, filters.kind, filters.origin, filters.who, filters.verdict], (event) =>
    (event.type.startsWith("action.") || event.type.startsWith("changeset.") || event.type === "poll") &&
    (event.projectId === null || event.projectId === projectId))

  const setFilter = (change: Partial<Filters>) => {
    setFilters((f) => ({ ...f, ...change }))
    setCursors([undefined])
  }
  const proposers = useProposers(session, page.data?.actions)

  const revert = async (action: ActionRecord) => {
    setReverting(null)
    const answer = await api((c) => c.actions.revertAction({ path: { projectId: action.projectId, actionId: action.actionId }, urlParams: {} }))
    if (Either.isLeft(answer)) return setNotice({ error: `Revert refused: ${answer.left.message}` })
    const r = answer.right
    if (!isProposalResponse(r)) return setNotice({ error: "acs answered a preview instead of recording the revert; try again" })
    setNotice({
      message: r.mode === "queued"
        ? `Revert of “${action.summary}” queued for approval (${r.policyReasons.join("; ") || "review"}).`
        : `Revert of “${action.summary}” is ${r.status}.`
    })
    page.reload()
  }

  const actions = page.data?.actions ?? []

  const renderAction = (action: ActionRecord) => {
    const external = action.kind === "external_change"
    // A changeset's member is reverted with its changeset, not on its own.
    const revertible = !external && action.changesetId === null && action.status === "applied" && action.revertedBy === null &&
      action.revertOf === null
    return (
      <li key={action.actionId} id={`action-${action.actionId}`} data-action-id={action.actionId} class={external ? "external" : ""}>
        <article aria-label={action.summary}>
          <header class="card-head">
            <StatusBadge status={action.status} />
            <h2>{action.summary}</h2>
            <span class="badge origin">{external ? "outside acs" : kindLabel(action.kind)}</span>
            {action.watch !== undefined && <VerdictBadge verdict={action.watch.verdict} />}
          </header>
          <p class="muted">
            <time dateTime={action.created_at}>{dateTime(action.created_at)}</time> · {actorLabel(action.proposedBy)}
            {action.decidedBy !== null && ` · decided by ${actorLabel(action.decidedBy)}`}
            {action.mode !== null && ` · ${action.mode === "auto_applied" ? "auto-applied" : "queued"}`}
          </p>
          {action.decisionReason !== null && <p><strong>Decision reason:</strong> {action.decisionReason}</p>}
          {action.warnings.length > 0 && (
            <div class="warnings" role="note"><strong>Warnings:</strong><ul>{action.warnings.map((w) => <li key={w}>{w}</li>)}</ul></div>
          )}
          {action.failure !== null && (
            <p class="error-text" role="note">
              <strong>Failed</strong>
              {action.failure.step !== null && ` at step ${action.failure.step}${action.failure.stepName === null ? "" : ` (${action.failure.stepName})`}`}: {action.failure.message}
            </p>
          )}
          <p class="links">
            {action.revertOf !== null && <a href={`#/ledger/${encodeURIComponent(action.projectId)}`} onClick={() => focusAction(action.revertOf)}>Reverts {action.revertOf}</a>}
            {action.revertedBy !== null && <a href={`#/ledger/${encodeURIComponent(action.projectId)}`} onClick={() => focusAction(action.revertedBy)}>Reverted by {action.revertedBy}</a>}
            {action.supersededBy !== null && <span>Changed outside acs since ({action.supersededBy})</span>}
          </p>
          <details>
            <summary>Change details</summary>
            <DiffTable rows={diffOf(action.kind, action.payload)} currency={currency} caption={`Fields of ${action.summary}`}
              proposedLabel={external ? "New" : "Written"} />
            <HarvestDelivery payload={action.payload} currency={currency} />
            {action.policyReasons.length > 0 && (
              <>
                <h3>Why it needed a human</h3>
                <ul>{action.policyReasons.map((r) => <li key={r}>{r}</li>)}</ul>
              </>
            )}
          </details>
          {action.watch !== undefined && (
            <details class="watch-details" open={action.watch.verdict === "failed" && action.watch.revertActionId !== null}>
              <summary>The guard's watch: {action.watch.verdict}</summary>
              <WatchPanel action={action} watch={action.watch} currency={currency} undos={page.data?.undos ?? new Map()} onDecided={page.reload} />
            </details>
          )}
          {revertible && session.me.canApprove && (
            <div class="actions"><button type="button" onClick={() => setReverting(action)}>Revert…</button></div>
          )}
        </article>
      </li>
    )
  }

  return (
    <section aria-labelledby="ledger-title">
      <h1 id="ledger-title">Ledger</h1>
      <div class="filters" role="group" aria-label="Filters">
        <AccountPicker accounts={session.accounts} value={projectId} route="ledger" />
        <label class="field"><span>Status</span>
          <select value={filters.status} onChange={(e) => setFilter({ status: e.currentTarget.value as Filters["status"] })}>
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label class="field"><span>Kind</span>
          <select value={filters.kind} onChange={(e) => setFilter({ kind: e.currentTarget.value })}>
            <option value="">any</option>
            {[...proposalKinds.map((k) => k.kind), "external_change"].map((k) => <option key={k} value={k}>{kindLabel(k)}</option>)}
          </select>
        </label>
        <label class="field"><span>Origin</span>
          <select value={filters.origin} onChange={(e) => setFilter({ origin: e.currentTarget.value as Filters["origin"] })}>
            <option value="">acs and outside</option>
            <option value="acs">through acs</option>
            <option value="external">outside acs</option>
          </select>
        </label>
        <label class="field"><span>Proposed by</span>
          <select value={filters.who} onChange={(e) => setFilter({ who: e.currentTarget.value })}>
            <option value="">anyone</option>
            {proposers.map((actor) => (
              <option key={actor.id} value={actor.id}>{actor.id === session.me.id ? `you (${actor.name})` : actorLabel(actor)}</option>
            ))}
          </select>
        </label>
        <label class="field"><span>Guard's verdict</span>
          <select value={filters.verdict} onChange={(e) => setFilter({ verdict: e.currentTarget.value as Filters["verdict"] })}>
            <option value="">any or none</option>
            {VERDICTS.map((v) => <option key={v} value={v}>{v}</option>)}
          </select>
        </label>
      </div>
      <Notice error={page.error ?? notice.error} message={notice.message} />
      {page.data === undefined ? <p>Loading the ledger…</p> : actions.length === 0 ? <p class="empty">No actions match.</p> : (
        <ol class="timeline">
          {rowsOf(actions).map((row) => {
            if (row.kind === "action") return renderAction(row.action)
            const changeset = page.data?.changesets.get(row.changesetId)
            return (
              <ChangesetRow key={row.changesetId} changesetId={row.changesetId} changeset={changeset} members={row.members}
                mayRevert={session.me.canApprove} onRevert={setRevertingChangeset}>
                <ol class="timeline">{row.members.map(renderAction)}</ol>
              </ChangesetRow>
            )
          })}
        </ol>
      )}
      <nav class="pager" aria-label="Ledger pages">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>Newer</button>
        <button type="button" disabled={page.data?.nextBefore === null || page.data === undefined}
          onClick={() => setCursors((c) => [...c, page.data?.nextBefore ?? undefined])}>
          Older
        </button>
      </nav>
      {revertingChangeset !== null && (
        <ChangesetRevertConfirmation
          changeset={revertingChangeset}
          onClose={() => setRevertingChangeset(null)}
          onReverted={(message) => {
            setRevertingChangeset(null)
            setNotice({ message })
            page.reload()
          }}
        />
      )}
      {reverting !== null && (
        <RevertConfirmation action={reverting} currency={currency} onRevert={() => revert(reverting)} onClose={() => setReverting(null)} />
      )}
    </section>
  )
}

/** Moves focus to a linked action on this page, when it is shown. */
const focusAction = (actionId: string | null) => {
  if (actionId === null) return
  requestAnimationFrame(() => {
    const element = document.getElementById(`action-${actionId}`)
    if (element === null) return
    element.setAttribute("tabindex", "-1")
    element.focus()
  })
}

/** Where a changeset may be reverted: applied, wholly or in part, and not reverted yet (nor a revert itself). */
const revertibleChangeset = (changeset: Changeset) =>
  (changeset.status === "applied" || changeset.status === "partially_applied") && changeset.revertedBy === null && changeset.revertOf === null

/** One changeset's row: its title, status and counts, its members on this page behind a disclosure. */
const ChangesetRow = (props: {
  readonly changesetId: string
  readonly changeset: Changeset | undefined
  readonly members: ReadonlyArray<ActionRecord>
  readonly mayRevert: boolean
  readonly onRevert: (changeset: Changeset) => void
  readonly children: ComponentChildren
}) => {
  const { changeset } = props
  const title = changeset?.title ?? props.changesetId
  const total = changeset?.members.total ?? props.members.length
  const here = props.members.length
  return (
    <li class="changeset-group" data-changeset-id={props.changesetId}>
      <article aria-label={`Changeset ${title}`}>
        <header class="card-head">
          {changeset !== undefined && <StatusBadge status={changeset.status} />}
          <h2>{title}</h2>
          <span class="badge origin">changeset</span>
        </header>
        {changeset !== undefined && (
          <p class="muted">
            <time dateTime={changeset.createdAt}>{dateTime(changeset.createdAt)}</time> · opened by {actorLabel(changeset.openedBy)}
            {changeset.decidedBy !== null && ` · decided by ${actorLabel(changeset.decidedBy)}`}
            {` · ${changeset.members.applied} of ${total} applied`}
            {changeset.members.failed > 0 && `, ${changeset.members.failed} failed`}
            {changeset.members.skipped > 0 && `, ${changeset.members.skipped} skipped`}
            {changeset.members.reverted > 0 && `, ${changeset.members.reverted} reverted`}
          </p>
        )}
        {changeset?.reason !== null && changeset?.reason !== undefined && <p><strong>Why:</strong> {changeset.reason}</p>}
        {changeset?.decisionReason !== null && changeset?.decisionReason !== undefined && <p><strong>Decision reason:</strong> {changeset.decisionReason}</p>}
        <p class="links">
          {changeset !== undefined && changeset.revertOf !== null && <span>Reverts changeset {changeset.revertOf}</span>}
          {changeset !== undefined && changeset.revertedBy !== null && <span>Reverted by changeset {changeset.revertedBy}</span>}
        </p>
        <details class="changeset-members">
          <summary>{here === total ? `Members (${total})` : `Members on this page (${here} of ${total})`}</summary>
          {props.children}
        </details>
        {changeset !== undefined && revertibleChangeset(changeset) && props.mayRevert && (
          <div class="actions"><button type="button" onClick={() => props.onRevert(changeset)}>Revert changeset…</button></div>
        )}
      </article>
    </li>
  )
}
