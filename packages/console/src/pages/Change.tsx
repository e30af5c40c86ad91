/**
 * One action or one changeset (`#/change/prj_…/act_…`, `#/change/prj_…/cs_…`): where notifications link (Slack's
 * messages among them). Shows what it changes and where it stands; while it waits for a person, Approve and Reject
 * call the same operations as the approvals page, and a refusal is shown as the server words it.
 */
import { diffOf } from "@acs/domain/ActionDiff"
import type { ActionRecord } from "@acs/domain/Actions"
import type { Changeset } from "@acs/domain/Changesets"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { DiffTable, Notice, StatusBadge } from "../components.tsx"
import { dateTime } from "../format.ts"
import { useLoad } from "../hooks.ts"
import { accountOf, actorLabel, type Session } from "../session.ts"
import { shortHash } from "./ChangesetCard.tsx"

type Loaded = { readonly action: ActionRecord } | { readonly changeset: Changeset }

export const ChangePage = (props: { readonly session: Session; readonly projectId: string; readonly id: string }) => {
  const { projectId, id } = props
  const account = accountOf(props.session, projectId)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const [busy, setBusy] = useState(false)
  const loaded = useLoad<Loaded>(
    async () =>
      id.startsWith("act_")
        ? { action: await apiOrThrow((c) => c.actions.getAction({ path: { projectId, actionId: id } })) }
        : { changeset: (await apiOrThrow((c) => c.changesets.getChangeset({ path: { projectId, changesetId: id } }))).changeset },
    [projectId, id],
    (event) => event.type.startsWith("action.") || event.type.startsWith("changeset.") || event.type === "poll"
  )

  const decide = async (approve: boolean) => {
    const data = loaded.data
    if (data === undefined) return
    setBusy(true)
    const refusal = (answer: Either.Either<unknown, { readonly message: string }>) => Either.isLeft(answer) ? answer.left.message : undefined
    const path = { projectId, actionId: id }
    const error = "action" in data
      ? refusal(approve
        ? await api((c) => c.actions.approveAction({ path }))
        : await api((c) => c.actions.rejectAction({ path, payload: {} })))
      : refusal(approve
        ? await api((c) => c.changesets.approveChangeset({ path: { projectId, changesetId: id }, payload: { planHash: data.changeset.planHash ?? "" } }))
        : await api((c) => c.changesets.rejectChangeset({ path: { projectId, changesetId: id }, payload: {} })))
    setBusy(false)
    setNotice(error !== undefined ? { error } : { message: approve ? "Approved." : "Rejected." })
    loaded.reload()
  }

  const data = loaded.data
  const waiting = data !== undefined && ("action" in data ? data.action.status === "proposed" : data.changeset.status === "queued")
  return (
    <section aria-labelledby="change-title">
      <h1 id="change-title">
        {data === undefined ? id : "action" in data ? data.action.summary : data.changeset.title}
      </h1>
      <p class="muted">{account?.name ?? projectId} · {id}</p>
      <Notice error={loaded.error} />
      {data !== undefined && "action" in data && (
        <div class="card">
          <p><StatusBadge status={data.action.status} /> proposed by {actorLabel(data.action.proposedBy)} on {dateTime(data.action.created_at)}</p>
          {data.action.reason !== null && <p>“{data.action.reason}”</p>}
          <DiffTable rows={diffOf(data.action.kind, data.action.payload)} currency={account?.currency ?? "USD"} caption="What it changes" />
          <ul>{data.action.policyReasons.map((reason, i) => <li key={i}>{reason}</li>)}</ul>
          {data.action.approvals.map((a, i) => <p key={i}>Approved once by {actorLabel(a.by)}: a second person must approve.</p>)}
          {data.action.decidedBy !== null && <p>Decided by {actorLabel(data.action.decidedBy)}{data.action.decisionReason === null ? "" : `: ${data.action.decisionReason}`}</p>}
        </div>
      )}
      {data !== undefined && "changeset" in data && (
        <div class="card">
          <p>
            <StatusBadge status={data.changeset.status} /> opened by {actorLabel(data.changeset.openedBy)} · {data.changeset.members.total} members
            {data.changeset.planHash !== null && <> · plan {shortHash(data.changeset.planHash)}</>}
          </p>
          <ul>{(data.changeset.decision?.policyReasons ?? []).map((reason, i) => <li key={i}>{reason}</li>)}</ul>
          {data.changeset.approvals.map((a, i) => <p key={i}>Approved once by {actorLabel(a.by)}: a second person must approve.</p>)}
          <p><a href={`#/approvals`}>Review its members on the approvals page</a></p>
        </div>
      )}
      {waiting && (
        <p class="actions">
          <button type="button" class="primary" disabled={busy} onClick={() => void decide(true)}>Approve</button>
          <button type="button" disabled={busy} onClick={() => void decide(false)}>Reject</button>
        </p>
      )}
      <Notice {...notice} />
    </section>
  )
}
