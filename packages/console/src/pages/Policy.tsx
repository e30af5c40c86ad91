/**
 * Policy and settings: the org's kill switch (with a confirmation) and four-eyes rule, the approval expiry, the
 * Slack app's signing secret (admins set it; it is never shown back, only whether it is set);
 * per account the circuit breaker's pause, the live policy with its 24-hour auto-apply counter, the guardrails
 * (pages/Guardrails.tsx), the CPA target band and the brief.
 */
import type { FourEyesRule } from "@acs/domain/FourEyes"
import type { Settings, UpdateSettingsRequest } from "@acs/domain/Settings"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api, apiOrThrow } from "../api.ts"
import { AccountPicker, Dialog, Notice, TableWrap } from "../components.tsx"
import { dateTime, kindLabel, money } from "../format.ts"
import { useLoad } from "../hooks.ts"
import { accountOf, type Session } from "../session.ts"
import { AutoApplyPausedBanner, GuardrailsCard } from "./Guardrails.tsx"

/** What changes the account's policy document: its actions, its guardrails and the circuit breaker. */
const POLICY_EVENTS: ReadonlySet<string> = new Set(["guardrails.changed", "account.paused", "account.resumed", "poll"])

const toMicros = (text: string): number => Math.round(Number(text) * 1_000_000)
const fromMicros = (micros: number): string => String(micros / 1_000_000)

export const PolicyPage = (props: { readonly session: Session; readonly projectId: string | undefined }) => {
  const { session } = props
  const admin = session.me.scope === "admin"
  const projectId = props.projectId ?? session.accounts[0]?.projectId
  const currency = (projectId === undefined ? undefined : accountOf(session, projectId))?.currency ?? "USD"
  const [confirming, setConfirming] = useState<UpdateSettingsRequest | null>(null)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})

  const settings = useLoad(() => apiOrThrow((c) => c.settings.getSettings()), [])
  const policy = useLoad(async () => projectId === undefined ? undefined : apiOrThrow((c) => c.actions.getPolicy({ path: { projectId } })),
    [projectId], (e) => e.type.startsWith("action.") || POLICY_EVENTS.has(e.type))
  const targets = useLoad(async () => projectId === undefined ? undefined : apiOrThrow((c) => c.actions.getTargets({ path: { projectId } })), [projectId])
  const brief = useLoad(async () => projectId === undefined ? undefined : apiOrThrow((c) => c.insights.getBrief({ path: { projectId } })), [projectId])

  const update = async (change: UpdateSettingsRequest) => {
    setConfirming(null)
    const answer = await api((c) => c.settings.updateSettings({ payload: change }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    setNotice({ message: savedMessage(change) })
    settings.reload()
    policy.reload()
  }

  const s: Settings | undefined = settings.data

  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">Policy and settings</h1>
      <Notice error={settings.error ?? policy.error ?? notice.error} message={notice.message} />
      {s !== undefined && (
        <section aria-labelledby="org-title" class="card">
          <h2 id="org-title">Whole workspace</h2>
          <div class={`kill ${s.platformAutoApply ? "" : "engaged"}`}>
            <p id="kill-state">
              <strong>Auto-apply is {s.platformAutoApply ? "on" : "off: the kill switch is engaged"}.</strong>{" "}
              {s.platformAutoApply ? "Small, safe changes apply without a human." : "Every proposal waits for a human decision."}
            </p>
            {admin && (
              <button type="button" class={s.platformAutoApply ? "danger" : "primary"} aria-describedby="kill-state"
                onClick={() => setConfirming({ platformAutoApply: !s.platformAutoApply })}>
                {s.platformAutoApply ? "Stop all auto-applies…" : "Resume auto-applies…"}
              </button>
            )}
          </div>
          <FourEyesForm key={s.fourEyes} rule={s.fourEyes} admin={admin} onChoose={(fourEyes) => setConfirming({ fourEyes })} />
          <ExpiryForm key={s.approvalTtlHours} hours={s.approvalTtlHours} admin={admin} onSave={(approvalTtlHours) => update({ approvalTtlHours })} />
          {s.updatedAt !== null && <p class="muted">Last changed {dateTime(s.updatedAt)}{s.updatedBy === null ? "" : ` by ${s.updatedBy}`}.</p>}
        </section>
      )}
      {admin && <SlackSecretForm />}
      <div class="filters"><AccountPicker accounts={session.accounts} value={projectId} route="policy" /></div>
      {projectId !== undefined && policy.data?.guardrails.autoApplyPaused != null && (
        <AutoApplyPausedBanner key={projectId} projectId={projectId} pause={policy.data.guardrails.autoApplyPaused} admin={admin}
          onResumed={() => policy.reload()} />
      )}
      {policy.data !== undefined && (
        <section aria-labelledby="account-policy-title" class="card">
          <h2 id="account-policy-title">Safe-apply policy of this account</h2>
          <p class="counter">
            Auto-applies in the last 24 hours: <strong>{policy.data.autoApplies.usedLast24h} of {policy.data.autoApplies.limitPer24h}</strong>
            {" "}({policy.data.autoApplies.remaining} left)
          </p>
          <p>Account status: {policy.data.accountStatus}. Proposals made with API keys always wait for review.</p>
          <TableWrap label="What auto-applies, by kind">
            <table>
              <caption>What auto-applies, by kind</caption>
              <thead><tr><th scope="col">Kind</th><th scope="col">Auto-applies when</th></tr></thead>
              <tbody>{policy.data.rules.map((r) => <tr key={r.kind}><th scope="row">{kindLabel(r.kind)}</th><td>{r.autoApplies}</td></tr>)}</tbody>
            </table>
          </TableWrap>
        </section>
      )}
      {projectId !== undefined && policy.data !== undefined && (
        <GuardrailsCard key={projectId} projectId={projectId} currency={currency} admin={admin}
          guardrails={policy.data.guardrails} envelope={policy.data.envelope} onSaved={() => policy.reload()} />
      )}
      {projectId !== undefined && targets.data !== undefined && (
        <TargetsForm key={projectId} projectId={projectId} currency={currency} admin={admin}
          band={targets.data.cpaBand} campaigns={targets.data.campaigns} onSaved={() => targets.reload()} />
      )}
      {projectId !== undefined && brief.data !== undefined && (
        <BriefForm key={projectId} projectId={projectId} admin={admin} text={brief.data.text} updatedAt={brief.data.updatedAt} />
      )}
      {confirming !== null && (
        <Dialog title="Change the workspace settings?" onClose={() => setConfirming(null)}>
          <p>
            {confirming.platformAutoApply === false && "Nothing will auto-apply in any account: every proposal waits for a human until auto-apply is resumed."}
            {confirming.platformAutoApply === true && "Small, safe changes will auto-apply again, within each account's policy."}
            {confirming.fourEyes !== undefined && `Who may approve: ${FOUR_EYES[confirming.fourEyes]}`}
          </p>
          <div class="actions">
            <button type="button" class="danger" onClick={() => update(confirming)}>Confirm</button>
            <button type="button" onClick={() => setConfirming(null)}>Cancel</button>
          </div>
        </Dialog>
      )}
    </section>
  )
}

/** Each four-eyes rule in the words a person chooses by. */
const FOUR_EYES: Readonly<Record<FourEyesRule, string>> = {
  distinct_actor: "anyone but the proposer; you may approve what your own agents' keys propose, never your own changes.",
  distinct_person: "another person than the one behind the proposal, for a change made by a key of yours too.",
  off: "anyone with the grant, the proposer too (a one-person workspace)."
}

const FourEyesForm = (props: { readonly rule: FourEyesRule; readonly admin: boolean; readonly onChoose: (rule: FourEyesRule) => void }) => {
  const [rule, setRule] = useState(props.rule)
  if (!props.admin) return <p>Who may approve: {FOUR_EYES[props.rule]}</p>
  return (
    <form class="inline-form" onSubmit={(event) => {
      event.preventDefault()
      if (rule !== props.rule) props.onChoose(rule)
    }}>
      <label class="field">
        <span>Who may approve a change (four eyes)</span>
        <select value={rule} onChange={(event) => setRule(event.currentTarget.value as FourEyesRule)}>
          <option value="distinct_actor">Another actor (default)</option>
          <option value="distinct_person">Another person</option>
          <option value="off">Anyone, the proposer too</option>
        </select>
      </label>
      <button type="submit" disabled={rule === props.rule}>Save rule…</button>
      <p class="muted">Now: {FOUR_EYES[props.rule]}</p>
    </form>
  )
}

const TargetsForm = (props: {
  readonly projectId: string
  readonly currency: string
  readonly admin: boolean
  readonly band: { readonly minMicros: number; readonly maxMicros: number } | null
  readonly campaigns: Readonly<Record<string, { readonly minMicros: number; readonly maxMicros: number }>>
  readonly onSaved: () => void
}) => {
  const [min, setMin] = useState(props.band === null ? "" : fromMicros(props.band.minMicros))
  const [max, setMax] = useState(props.band === null ? "" : fromMicros(props.band.maxMicros))
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const save = async (event: Event) => {
    event.preventDefault()
    const cpaBand = min === "" && max === "" ? null : { minMicros: toMicros(min), maxMicros: toMicros(max) }
    const answer = await api((c) => c.actions.updateTargets({ path: { projectId: props.projectId }, payload: { cpaBand, campaigns: props.campaigns } }))
    setNotice(Either.isLeft(answer) ? { error: answer.left.message } : { message: "Targets saved." })
    props.onSaved()
  }
  return (
    <section aria-labelledby="targets-title" class="card">
      <h2 id="targets-title">CPA target band</h2>
      <p class="muted">
        {props.band === null ? "No band set." : `Now ${money(props.band.minMicros, props.currency)} to ${money(props.band.maxMicros, props.currency)}.`}
        {" "}{Object.keys(props.campaigns).length} campaign band(s).
      </p>
      {props.admin && (
        <form onSubmit={save} class="inline-form">
          <label class="field"><span>Lowest CPA ({props.currency})</span><input type="number" min="0" step="any" value={min} onInput={(e) => setMin(e.currentTarget.value)} /></label>
          <label class="field"><span>Highest CPA ({props.currency})</span><input type="number" min="0" step="any" value={max} onInput={(e) => setMax(e.currentTarget.value)} /></label>
          <button type="submit">Save targets</button>
        </form>
      )}
      <Notice {...notice} />
    </section>
  )
}

const BriefForm = (props: { readonly projectId: string; readonly admin: boolean; readonly text: string; readonly updatedAt: string | null }) => {
  const [text, setText] = useState(props.text)
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const save = async (event: Event) => {
    event.preventDefault()
    const answer = await api((c) => c.insights.updateBrief({ path: { projectId: props.projectId }, payload: { text } }))
    setNotice(Either.isLeft(answer) ? { error: answer.left.message } : { message: "Brief saved." })
  }
  return (
    <section aria-labelledby="brief-title" class="card">
      <h2 id="brief-title">Brief</h2>
      <p class="muted">Goals and constraints in prose, shown to agents before they propose.{props.updatedAt !== null && ` Last changed ${dateTime(props.updatedAt)}.`}</p>
      <form onSubmit={save}>
        <label class="field"><span>Brief</span>
          <textarea rows={5} value={text} readOnly={!props.admin} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        {props.admin && <button type="submit">Save brief</button>}
      </form>
      <Notice {...notice} />
    </section>
  )
}

/** What a saved change did, in words: a second save shows a new message, never the last one again. */
const savedMessage = (change: UpdateSettingsRequest): string =>
  change.platformAutoApply === true ? "Settings saved: auto-applies resumed."
  : change.platformAutoApply === false ? "Settings saved: the kill switch is engaged."
  : change.approvalTtlHours !== undefined ? `Settings saved: queued changes expire after ${change.approvalTtlHours} hours.`
  : change.fourEyes !== undefined ? `Settings saved: the four-eyes rule is ${change.fourEyes}.`
  : "Settings saved."

/** How long a queued change waits for a decision before it expires (docs/contract.md 3.2). */
const ExpiryForm = (props: { readonly hours: number; readonly admin: boolean; readonly onSave: (hours: number) => void }) => {
  const [hours, setHours] = useState(String(props.hours))
  if (!props.admin) return <p>Queued changes expire after {props.hours} hours without a decision.</p>
  return (
    <form class="inline-form" onSubmit={(event) => {
      event.preventDefault()
      props.onSave(Number(hours))
    }}>
      <label class="field"><span>Queued changes expire after (hours, 1–8760)</span>
        <input type="number" min="1" max="8760" step="1" required value={hours} onInput={(e) => setHours(e.currentTarget.value)} />
      </label>
      <button type="submit">Save expiry</button>
    </form>
  )
}

/** The Slack app's signing secret (docs/slack.md): set, replaced, never read back. */
const SlackSecretForm = () => {
  const state = useLoad(() => apiOrThrow((c) => c.settings.getSlackIntegration()), [])
  const [secret, setSecret] = useState("")
  const [notice, setNotice] = useState<{ error?: string; message?: string }>({})
  const save = async (event: Event) => {
    event.preventDefault()
    const answer = await api((c) => c.settings.setSlackSigningSecret({ payload: { signingSecret: secret.trim() } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    setSecret("")
    setNotice({ message: "Slack signing secret saved." })
    state.reload()
  }
  return (
    <section aria-labelledby="slack-secret-title" class="card">
      <h2 id="slack-secret-title">Slack approvals</h2>
      <p id="slack-secret-state">
        {state.data === undefined ? "…" : state.data.signingSecretSet
          ? `The Slack signing secret is set (${dateTime(state.data.setAt)}); Slack's taps reach ${state.data.interactionsPath}.`
          : "No Slack signing secret is set: Approve and Reject in Slack are refused."}
      </p>
      <form onSubmit={save}>
        <label class="field"><span>Signing secret (the Slack app's Basic Information)</span>
          <input type="password" autocomplete="off" required pattern="[0-9a-f]{16,128}" value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)} aria-describedby="slack-secret-state" />
        </label>
        <button type="submit" class="primary">{state.data?.signingSecretSet === true ? "Replace" : "Save"}</button>
        <Notice {...notice} />
      </form>
    </section>
  )
}
