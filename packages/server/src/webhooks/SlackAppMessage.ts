/**
 * The `format: "slack_app"` body (docs/contract.md 6.1): the `slack` message made for a Slack app, in Block Kit —
 * the change's summary, its account by name, the diff, the policy's reasons, who proposed it, when it expires, a
 * link to that very action or changeset in the console — and, while it waits for a person, Approve and Reject
 * buttons bound to it (a changeset's to its plan hash too). Slack posts a tap to `/integrations/slack/interactions`
 * (http/SlackInteractions.ts), which answers with this message as it stands after the decision.
 *
 * Every text from the event is escaped as the `slack` format escapes it (SlackMessage.ts): the only markup is
 * acs's own. A button's `value` is acs's own JSON, read back only from a request Slack signed.
 */
import { diffOf } from "@acs/domain/ActionDiff"
import { consoleLink, escape, headlines } from "./SlackMessage.ts"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const text = (u: unknown): string => (typeof u === "string" ? u : "")

/** What the event does not carry and the message shows: looked up when the delivery is made (SlackAppFacts.ts). */
export interface SlackAppFacts {
  readonly accountName: string | null
  readonly currency: string | null
  /** When the change expires if nobody decides it; null once decided. */
  readonly expiresAt: string | null
}

export const NO_FACTS: SlackAppFacts = { accountName: null, currency: null, expiresAt: null }

/** The button a tap names: `action_id` of the Approve and Reject buttons. */
export const APPROVE = "acs_approve"
export const REJECT = "acs_reject"

/** What a button is bound to: its `value`, as JSON. */
export interface ButtonTarget {
  readonly projectId: string
  readonly actionId?: string | undefined
  readonly changesetId?: string | undefined
  readonly planHash?: string | undefined
}

/** The events whose change waits for a person: their message carries the buttons. */
const WAITING: ReadonlySet<string> = new Set(["action.proposed", "action.demoted", "changeset.queued"])

/** At most this many diff lines; the rest is counted (Slack caps a section at 3,000 characters). */
const DIFF_LINES = 12

const valueText = (field: string, value: unknown, currency: string | null): string => {
  if (value === undefined || value === null) return "—"
  if (typeof value === "number" && /Micros$/.test(field)) return `${(value / 1_000_000).toFixed(2)}${currency === null ? "" : ` ${currency}`}`
  if (typeof value === "string") return value
  return JSON.stringify(value)
}

const diffLines = (kind: string, payload: Readonly<Record<string, unknown>>, currency: string | null): Array<string> => {
  const rows = diffOf(kind, payload)
  const lines = rows.slice(0, DIFF_LINES).map((row) => {
    const where = row.entity === null ? "" : `${row.entity} · `
    // `priorDailyBudgetMicros` → `dailyBudget`: the value says its unit.
    const label = row.field.replace(/^prior([A-Z])/, (_, c: string) => c.toLowerCase()).replace(/Micros$/, "")
    const change = row.change === "add"
      ? `+ ${valueText(row.field, row.proposed, currency)}`
      : row.change === "remove"
      ? `${valueText(row.field, row.prior, currency)} → removed`
      : `${valueText(row.field, row.prior, currency)} → ${valueText(row.field, row.proposed, currency)}`
    return `• ${escape(`${where}${label}: ${change}`)}`
  })
  if (rows.length > DIFF_LINES) lines.push(`…and ${rows.length - DIFF_LINES} more`)
  return lines
}

const button = (label: string, actionId: string, style: "primary" | "danger", target: ButtonTarget, confirm?: string) => ({
  type: "button",
  text: { type: "plain_text", text: label },
  action_id: actionId,
  style,
  value: JSON.stringify(target),
  ...(confirm === undefined
    ? {}
    : { confirm: { title: { type: "plain_text", text: "Reject this change?" }, text: { type: "plain_text", text: confirm }, confirm: { type: "plain_text", text: "Reject" }, deny: { type: "plain_text", text: "Keep it" } } })
})

/**
 * The message for an event. `note`: a line acs adds on top (the outcome of a tap, in plain words), shown in a
 * section of its own above the change.
 */
export const slackAppMessage = (
  body: Readonly<Record<string, unknown>>,
  publicUrl: string,
  facts: SlackAppFacts,
  note?: string
): Readonly<Record<string, unknown>> => {
  const type = text(body["type"])
  const projectId = text(body["projectId"])
  const data = isObject(body["data"]) ? body["data"] : {}
  const headline = headlines[type] ?? type
  const account = facts.accountName === null ? projectId : `${facts.accountName} (${projectId})`
  const lines: Array<string> = []
  const details: Array<string> = []
  let summary = ""
  let link: string | undefined
  let target: ButtonTarget | undefined
  const action = data["action"]
  const changeset = data["changeset"]
  if (isObject(action)) {
    const actionId = text(action["actionId"])
    summary = text(action["summary"])
    lines.push(`*${escape(summary)}*`, `Account: ${escape(account)}`)
    const proposer = isObject(action["proposedBy"]) ? text(action["proposedBy"]["name"]) : ""
    if (proposer !== "") lines.push(`Proposed by ${escape(proposer)}${text(action["reason"]) !== "" ? `: “${escape(text(action["reason"]))}”` : ""}`)
    const approvals = Array.isArray(action["approvals"]) ? action["approvals"].filter(isObject) : []
    for (const approval of approvals) {
      const by = isObject(approval["by"]) ? text(approval["by"]["name"]) : ""
      if (by !== "") lines.push(`Approved once by ${escape(by)}: high risk needs a second person`)
    }
    if (isObject(action["payload"])) details.push(...diffLines(text(action["kind"]), action["payload"], facts.currency))
    const reasons = Array.isArray(action["policyReasons"]) ? action["policyReasons"].map(text).filter((r) => r !== "") : []
    for (const reason of reasons) details.push(`• ${escape(reason)}`)
    const failure = action["failure"]
    if (isObject(failure)) details.push(`Failure: ${escape(text(failure["message"]))}`)
    const decisionReason = text(action["decisionReason"])
    if (decisionReason !== "") details.push(`Reason: ${escape(decisionReason)}`)
    link = consoleLink(publicUrl, projectId, actionId)
    lines.push(`<${escape(link)}|Open ${escape(actionId)} in acs>`)
    if (WAITING.has(type) && text(action["status"]) === "proposed") target = { projectId, actionId }
  } else if (isObject(changeset)) {
    const changesetId = text(changeset["changesetId"])
    summary = text(changeset["title"])
    lines.push(`*${escape(summary)}*`, `Account: ${escape(account)}`)
    const opener = isObject(changeset["openedBy"]) ? text(changeset["openedBy"]["name"]) : ""
    if (opener !== "") lines.push(`Opened by ${escape(opener)}${text(changeset["reason"]) !== "" ? `: “${escape(text(changeset["reason"]))}”` : ""}`)
    const approvals = Array.isArray(changeset["approvals"]) ? changeset["approvals"].filter(isObject) : []
    for (const approval of approvals) {
      const by = isObject(approval["by"]) ? text(approval["by"]["name"]) : ""
      if (by !== "") lines.push(`Approved once by ${escape(by)}: high risk needs a second person`)
    }
    const members = isObject(changeset["members"]) ? changeset["members"] : {}
    const count = (name: string) => (typeof members[name] === "number" ? members[name] : 0)
    details.push(`${count("total")} members: ${count("applied")} applied, ${count("failed")} failed, ${count("pending")} pending`)
    const decision = isObject(changeset["decision"]) ? changeset["decision"] : {}
    const reasons = Array.isArray(decision["policyReasons"]) ? decision["policyReasons"].map(text).filter((r) => r !== "") : []
    for (const reason of reasons) details.push(`• ${escape(reason)}`)
    const planHash = text(changeset["planHash"])
    if (planHash !== "") details.push(`Plan ${escape(planHash)}`)
    link = consoleLink(publicUrl, projectId, changesetId)
    lines.push(`<${escape(link)}|Open ${escape(changesetId)} in acs>`)
    if (WAITING.has(type) && text(changeset["status"]) === "queued" && planHash !== "") target = { projectId, changesetId, planHash }
  }
  const context = [
    ...(target !== undefined && facts.expiresAt !== null ? [`Expires ${escape(facts.expiresAt)} unless decided`] : []),
    `${escape(type)} · ${escape(text(body["eventId"]))}`
  ].join(" · ")
  return {
    text: escape(`${note ?? headline}${summary === "" ? "" : `: ${summary}`}`),
    blocks: [
      { type: "header", text: { type: "plain_text", text: escape(headline) } },
      ...(note === undefined ? [] : [{ type: "section", text: { type: "mrkdwn", text: `*${escape(note)}*` } }]),
      ...(lines.length === 0 ? [] : [{ type: "section", text: { type: "mrkdwn", text: lines.join("\n") } }]),
      ...(details.length === 0 ? [] : [{ type: "section", text: { type: "mrkdwn", text: details.join("\n") } }]),
      ...(target === undefined ? [] : [{
        type: "actions",
        block_id: "acs_decision",
        elements: [
          button("Approve", APPROVE, "primary", target),
          button("Reject", REJECT, "danger", target, "None of it applies; whoever proposed it sees your rejection.")
        ]
      }]),
      { type: "context", elements: [{ type: "mrkdwn", text: context }] }
    ]
  }
}
