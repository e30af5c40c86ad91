/**
 * An account's guardrails on the Policy page (docs/contract.md 3.3): the spend envelope now, the cooldowns, the
 * evidence gate, two people for high risk and the circuit breaker. An admin changes them (the whole settings
 * object, as PUT takes it) and resumes auto-apply after the circuit breaker paused it; others read them.
 */
import { DEFAULT_ENVELOPE_PCT, type EnvelopeUse, type Guardrails, type GuardrailsSettings } from "@acs/domain/Guardrails"
import { Either } from "effect"
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { Dialog, Notice, TableWrap } from "../components.tsx"
import { count, dateTime, money } from "../format.ts"

type Outcome = { error?: string; message?: string }

/** Amounts typed in the currency's units; an empty field is null (the default envelope, no ceiling). */
const microsOrNull = (text: string): number | null => (text.trim() === "" ? null : Math.round(Number(text) * 1_000_000))
const unitsOrEmpty = (micros: number | null): string => (micros === null ? "" : String(micros / 1_000_000))

/** The circuit breaker's reason as a clause of a sentence the page ends. */
const clause = (reason: string) => reason.replace(/\.+$/, "")

const hours = (n: number) => (n === 0 ? "none" : `${count(n)} h`)

/** The circuit breaker paused the account's auto-apply: said first, with its reason; an admin resumes it. */
export const AutoApplyPausedBanner = (props: {
  readonly projectId: string
  readonly pause: NonNullable<Guardrails["autoApplyPaused"]>
  readonly admin: boolean
  readonly onResumed: () => void
}) => {
  const [confirming, setConfirming] = useState(false)
  const [notice, setNotice] = useState<Outcome>({})
  const resume = async () => {
    setConfirming(false)
    const answer = await api((c) => c.actions.resumeAutoApply({ path: { projectId: props.projectId } }))
    if (Either.isLeft(answer)) return setNotice({ error: answer.left.message })
    props.onResumed()
  }
  return (
    <>
      <div class="kill engaged">
        <p id="paused-state" role="alert">
          <strong>Auto-apply is paused for this account</strong> since {dateTime(props.pause.since)}: {clause(props.pause.reason)}.{" "}
          Every proposal waits for a human until an admin resumes auto-apply.
        </p>
        {props.admin && (
          <button type="button" class="primary" aria-describedby="paused-state" onClick={() => setConfirming(true)}>Resume auto-apply…</button>
        )}
      </div>
      <Notice {...notice} />
      {confirming && (
        <Dialog title="Resume auto-apply for this account?" onClose={() => setConfirming(false)}>
          <p>
            Small, safe changes will auto-apply again in this account, within its policy and guardrails. The circuit
            breaker paused it: {clause(props.pause.reason)}.
          </p>
          <div class="actions">
            <button type="button" class="primary" onClick={resume}>Resume auto-apply</button>
            <button type="button" onClick={() => setConfirming(false)}>Cancel</button>
          </div>
        </Dialog>
      )}
    </>
  )
}

export const GuardrailsCard = (props: {
  readonly projectId: string
  readonly currency: string
  readonly admin: boolean
  readonly guardrails: Guardrails
  readonly envelope: EnvelopeUse
  readonly onSaved: () => void
}) => {
  const { guardrails: g, envelope: e, currency } = props
  const [notice, setNotice] = useState<Outcome>({})
  const save = async (settings: GuardrailsSettings) => {
    const answer = await api((c) => c.actions.updateGuardrails({ path: { projectId: props.projectId }, payload: settings }))
    setNotice(Either.isLeft(answer) ? { error: answer.left.message } : { message: "Guardrails saved." })
    if (Either.isRight(answer)) props.onSaved()
  }
  const highRisk = [
    `a budget raise past ${g.highRisk.budgetIncreasePct} %`,
    `removing ${count(g.highRisk.removals)} or more entities`,
    ...(g.highRisk.enableCampaign ? ["enabling a campaign"] : [])
  ]
  return (
    <section aria-labelledby="guardrails-title" class="card">
      <div class="card-head">
        <h2 id="guardrails-title">Guardrails</h2>
        <span class="badge">{g.isDefault ? "defaults, on" : "set by an admin"}</span>
      </div>
      <p class="muted">
        {g.isDefault
          ? "Nobody has changed this account's guardrails: the defaults apply, and they are on."
          : `Last changed ${dateTime(g.updatedAt)}${g.updatedBy === null ? "" : ` by ${g.updatedBy}`}.`}
        {" "}A change that crosses one of them waits for a person instead of auto-applying.
      </p>
      <TableWrap label="Spend envelope now">
        <table>
          <caption>Spend envelope now (daily budgets, last 24 hours)</caption>
          <tbody>
            <tr>
              <th scope="row">24-hour envelope</th>
              <td>
                {money(e.maxIncrease24h, currency)}{" "}
                {g.envelope.maxDailyBudgetIncreaseMicros24h === null
                  ? `(the default: ${DEFAULT_ENVELOPE_PCT} % of the total daily budget 24 hours ago)`
                  : "(set by an admin)"}
              </td>
            </tr>
            <tr><th scope="row">Applied (net)</th><td>{money(e.used, currency)}</td></tr>
            <tr><th scope="row">Reserved by raises not yet applied</th><td>{money(e.reserved, currency)}</td></tr>
            <tr><th scope="row">Remaining</th><td><strong>{money(e.remaining, currency)}</strong></td></tr>
            <tr><th scope="row">Total daily budget now</th><td>{money(e.totalDailyBudget, currency)}</td></tr>
            <tr>
              <th scope="row">Ceiling of the total daily budget</th>
              <td>{e.maxTotal === null ? "No ceiling set" : `${money(e.maxTotal, currency)} (nobody can approve a raise past it)`}</td>
            </tr>
          </tbody>
        </table>
      </TableWrap>
      <TableWrap label="Rules before a change auto-applies">
        <table>
          <caption>Rules before a change auto-applies</caption>
          <tbody>
            <tr>
              <th scope="row">Cooldown on the same entity</th>
              <td>bid {hours(g.cooldownHours.bid)}, budget {hours(g.cooldownHours.budget)}, status {hours(g.cooldownHours.status)}</td>
            </tr>
            <tr>
              <th scope="row">Evidence for a bid or budget raise</th>
              <td>at least {count(g.evidence.minDays)} complete days and {count(g.evidence.minInstalls)} installs in the last 30 days</td>
            </tr>
            <tr><th scope="row">Two people approve</th><td>{highRisk.join("; ")}</td></tr>
            <tr>
              <th scope="row">Search-term harvest</th>
              <td>refused when its negatives remove more than {g.maxDeliveryShareRemovedPct} % of a source ad group's 30-day spend</td>
            </tr>
            <tr>
              <th scope="row">Circuit breaker</th>
              <td>
                {count(g.circuitBreaker.failures)} upstream write failures within {count(g.circuitBreaker.windowMinutes)} minutes, or an hour's
                spend past {g.circuitBreaker.spendPerHourMultiple} × its usual, pause auto-apply
              </td>
            </tr>
          </tbody>
        </table>
      </TableWrap>
      {props.admin && <GuardrailsForm key={g.updatedAt ?? "defaults"} settings={g} currency={currency} onSave={save} />}
      <Notice {...notice} />
    </section>
  )
}

/** Every field of the settings, as PUT replaces them whole; the browser checks the ranges the schema has. */
const GuardrailsForm = (props: {
  readonly settings: GuardrailsSettings
  readonly currency: string
  readonly onSave: (settings: GuardrailsSettings) => void
}) => {
  const s = props.settings
  const [envelope, setEnvelope] = useState(unitsOrEmpty(s.envelope.maxDailyBudgetIncreaseMicros24h))
  const [ceiling, setCeiling] = useState(unitsOrEmpty(s.envelope.maxTotalDailyBudgetMicros))
  const [numbers, setNumbers] = useState({
    bid: String(s.cooldownHours.bid),
    budget: String(s.cooldownHours.budget),
    status: String(s.cooldownHours.status),
    minDays: String(s.evidence.minDays),
    minInstalls: String(s.evidence.minInstalls),
    budgetIncreasePct: String(s.highRisk.budgetIncreasePct),
    removals: String(s.highRisk.removals),
    failures: String(s.circuitBreaker.failures),
    windowMinutes: String(s.circuitBreaker.windowMinutes),
    spendPerHourMultiple: String(s.circuitBreaker.spendPerHourMultiple),
    maxDeliveryShareRemovedPct: String(s.maxDeliveryShareRemovedPct)
  })
  const [enableCampaign, setEnableCampaign] = useState(s.highRisk.enableCampaign)
  const whole = (name: keyof typeof numbers, label: string, min: number, max?: number) => (
    <label class="field"><span>{label}</span>
      <input type="number" required step="1" min={min} max={max} value={numbers[name]}
        onInput={(event) => setNumbers({ ...numbers, [name]: event.currentTarget.value })} />
    </label>
  )
  const submit = (event: Event) => {
    event.preventDefault()
    props.onSave({
      envelope: { maxDailyBudgetIncreaseMicros24h: microsOrNull(envelope), maxTotalDailyBudgetMicros: microsOrNull(ceiling) },
      cooldownHours: { bid: Number(numbers.bid), budget: Number(numbers.budget), status: Number(numbers.status) },
      evidence: { minDays: Number(numbers.minDays), minInstalls: Number(numbers.minInstalls) },
      highRisk: { budgetIncreasePct: Number(numbers.budgetIncreasePct), removals: Number(numbers.removals), enableCampaign },
      circuitBreaker: {
        failures: Number(numbers.failures),
        windowMinutes: Number(numbers.windowMinutes),
        spendPerHourMultiple: Number(numbers.spendPerHourMultiple)
      },
      maxDeliveryShareRemovedPct: Number(numbers.maxDeliveryShareRemovedPct)
    })
  }
  return (
    <form aria-label="Change the guardrails" onSubmit={submit}>
      <fieldset class="inline-form">
        <legend>Spend envelope ({props.currency})</legend>
        <label class="field"><span>24-hour envelope (empty: {DEFAULT_ENVELOPE_PCT} % of the total daily budget)</span>
          <input type="number" min="0" step="any" value={envelope} onInput={(event) => setEnvelope(event.currentTarget.value)} />
        </label>
        <label class="field"><span>Ceiling of the total daily budget (empty: no ceiling)</span>
          <input type="number" min="0" step="any" value={ceiling} onInput={(event) => setCeiling(event.currentTarget.value)} />
        </label>
      </fieldset>
      <fieldset class="inline-form">
        <legend>Cooldowns (hours; 0: none)</legend>
        {whole("bid", "After a bid change", 0)}
        {whole("budget", "After a budget change", 0)}
        {whole("status", "After a status change", 0)}
      </fieldset>
      <fieldset class="inline-form">
        <legend>Evidence a bid or budget raise needs</legend>
        {whole("minDays", "Complete days (0–30)", 0, 30)}
        {whole("minInstalls", "Installs", 0)}
      </fieldset>
      <fieldset class="inline-form">
        <legend>Two people approve</legend>
        {whole("budgetIncreasePct", "A budget raise past (%)", 0)}
        {whole("removals", "Removing this many entities or more", 1)}
        <label class="check">
          <input type="checkbox" checked={enableCampaign} onChange={(event) => setEnableCampaign(event.currentTarget.checked)} />
          Enabling a campaign
        </label>
      </fieldset>
      <fieldset class="inline-form">
        <legend>Circuit breaker</legend>
        {whole("failures", "Upstream write failures", 1)}
        {whole("windowMinutes", "Within (minutes)", 1)}
        <label class="field"><span>An hour's spend past (× its usual)</span>
          <input type="number" required step="0.1" min={1.5} max={100} value={numbers.spendPerHourMultiple}
            onInput={(event) => setNumbers({ ...numbers, spendPerHourMultiple: event.currentTarget.value })} />
        </label>
      </fieldset>
      <fieldset class="inline-form">
        <legend>Search-term harvest</legend>
        <label class="field"><span>Most of a source ad group's spend its negatives may remove (%)</span>
          <input type="number" required step="any" min={0} max={100} value={numbers.maxDeliveryShareRemovedPct}
            onInput={(event) => setNumbers({ ...numbers, maxDeliveryShareRemovedPct: event.currentTarget.value })} />
        </label>
      </fieldset>
      <button type="submit">Save guardrails</button>
    </form>
  )
}
