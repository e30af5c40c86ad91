/**
 * A changeset's revert, confirmed after its plan (`?preview=true`): per member whether it is undone, left alone
 * because it moved since acs wrote it (and why), or cannot be undone, and the coverage of the whole. A conflicted
 * member is left alone unless the person ticks it to force it, writing over what changed since.
 */
import type { Changeset, RevertPlan } from "@acs/domain/Changesets"
import { Either } from "effect"
import { useEffect, useState } from "preact/hooks"
import { api } from "../api.ts"
import { Dialog, Notice, TableWrap } from "../components.tsx"

const VERDICTS = {
  revertible: "undone",
  conflicted: "moved since: left alone",
  not_revertible: "cannot be undone"
} as const

const COVERAGE = {
  full: "The revert undoes every applied member.",
  partial: "The revert undoes some members only; the rest stay as they are.",
  none: "The revert would undo nothing."
} as const

export const ChangesetRevertConfirmation = (props: {
  readonly changeset: Changeset
  readonly onReverted: (message: string) => void
  readonly onClose: () => void
}) => {
  const { changeset } = props
  const path = { projectId: changeset.projectId, changesetId: changeset.changesetId }
  const [plan, setPlan] = useState<{ readonly answer?: RevertPlan; readonly error?: string }>({})
  const [forced, setForced] = useState<ReadonlySet<string>>(new Set())
  const [busy, setBusy] = useState(false)
  useEffect(() => {
    void api((c) => c.changesets.revertChangeset({ path, urlParams: { preview: true }, payload: {} })).then((answer) => {
      if (Either.isLeft(answer)) return setPlan({ error: `This changeset cannot be reverted: ${answer.left.message}` })
      // A preview answers the plan alone; an answer with a changeset would mean the revert was recorded.
      if ("changeset" in answer.right) return setPlan({ error: "acs recorded a revert instead of previewing it; see the ledger" })
      setPlan({ answer: answer.right })
    })
  }, [changeset.changesetId])

  const toggle = (actionId: string) =>
    setForced((f) => {
      const next = new Set(f)
      if (next.has(actionId)) next.delete(actionId)
      else next.add(actionId)
      return next
    })

  const revert = async () => {
    setBusy(true)
    const answer = await api((c) => c.changesets.revertChangeset({ path, urlParams: {}, payload: forced.size === 0 ? {} : { force: [...forced] } }))
    setBusy(false)
    if (Either.isLeft(answer)) return setPlan((p) => ({ ...p, error: `Revert refused: ${answer.left.message}` }))
    if (!("changeset" in answer.right)) return setPlan((p) => ({ ...p, error: "acs answered a preview instead of reverting; try again" }))
    const undone = answer.right.plan.members.filter((m) => m.verdict === "revertible" || forced.has(m.actionId)).length
    props.onReverted(`Reverting “${changeset.title}”: ${undone} member${undone === 1 ? "" : "s"} undone by changeset “${answer.right.changeset.title}” (${answer.right.changeset.status}).`)
  }

  const answer = plan.answer
  const undoes = answer !== undefined && (answer.coverage !== "none" || forced.size > 0)
  return (
    <Dialog title="Revert this changeset?" onClose={props.onClose}>
      <p>{changeset.title}</p>
      {plan.error !== undefined && <Notice error={plan.error} />}
      {answer === undefined ? plan.error === undefined && <p role="status">Checking each member against what is live now…</p> : (
        <>
          <p class="coverage" data-coverage={answer.coverage}><strong>{COVERAGE[answer.coverage]}</strong></p>
          <TableWrap label="What the revert does to each member">
            <table class="revert-plan">
              <caption class="visually-hidden">What the revert does to each member</caption>
              <thead><tr><th scope="col">Member</th><th scope="col">Revert</th><th scope="col">Why</th></tr></thead>
              <tbody>
                {answer.members.map((m) => (
                  <tr key={m.actionId} data-action-id={m.actionId} data-verdict={m.verdict}>
                    <th scope="row">{m.summary}</th>
                    <td>
                      <span class={`badge verdict-${m.verdict}`}>{VERDICTS[m.verdict]}</span>
                      {m.verdict === "conflicted" && (
                        <label class="check">
                          <input type="checkbox" checked={forced.has(m.actionId)} onChange={() => toggle(m.actionId)}
                            aria-label={`Revert anyway: ${m.summary}`} />
                          <span aria-hidden="true">Revert anyway</span>
                        </label>
                      )}
                    </td>
                    <td>{m.verdict === "revertible" && m.compensation !== null ? `writes: ${m.compensation.summary}` : m.why}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <p class="muted" role="note">
            The revert applies at once. A member that moved since acs wrote it is left alone{forced.size > 0 ? ", except the ones ticked: those are written over" : ""}.
          </p>
        </>
      )}
      <div class="actions">
        {answer !== undefined && <button type="button" class="danger" disabled={busy || !undoes} onClick={revert}>Revert</button>}
        <button type="button" onClick={props.onClose}>Cancel</button>
      </div>
    </Dialog>
  )
}
