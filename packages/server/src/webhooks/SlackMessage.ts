/**
 * The `format: "slack"` body: a Slack incoming-webhook message (`text` for notifications, `blocks` for the
 * channel) made from an event, so a team sees a queued change — its summary, the policy's reasons, who
 * proposed it — with a link to that very action or changeset in the console, with no glue code. Every text from the event is escaped
 * (`&`, `<`, `>`, Slack's control characters) in every field, the notification `text` and the header too: a
 * campaign named `<!channel>` or `<https://evil|click>` arrives as those characters, not as a mention or a link.
 * The only markup is acs's own (the bold summary and the console link).
 */

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const text = (u: unknown): string => (typeof u === "string" ? u : "")

export const headlines: Readonly<Record<string, string>> = {
  "action.proposed": "A change waits for approval",
  "action.approved": "Change approved",
  "action.rejected": "Change rejected",
  "action.expired": "Change expired before anyone decided",
  "action.applied": "Change applied",
  "action.failed": "Change failed",
  "action.demoted": "Change sent back for review",
  "action.reverted": "Change reverted",
  "action.external": "Changed outside acs",
  "changeset.submitted": "A changeset was submitted",
  "changeset.queued": "A changeset waits for approval",
  "changeset.approved": "Changeset approved",
  "changeset.rejected": "Changeset rejected",
  "changeset.expired": "Changeset expired before anyone decided",
  "changeset.applied": "Changeset applied",
  "changeset.partially_applied": "Changeset partly applied",
  "changeset.failed": "Changeset failed",
  "changeset.reverted": "Changeset reverted",
  "sync.succeeded": "Sync finished",
  "sync.failed": "Sync failed",
  "connection.broken": "The Apple Ads connection is broken",
  "ping": "Test ping from acs"
}

/** Escapes Slack's control characters, which Slack decodes back in every text field (mrkdwn and plain_text alike). */
export const escape = (value: string) => value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** The console's page of one action or changeset (`#/change/prj_…/act_…`): where a notification links. */
export const consoleLink = (publicUrl: string, projectId: string, id: string): string =>
  `${publicUrl.replace(/\/$/, "")}/#/change/${encodeURIComponent(projectId)}/${encodeURIComponent(id)}`

export const slackMessage = (body: Readonly<Record<string, unknown>>, publicUrl: string): Readonly<Record<string, unknown>> => {
  const type = text(body["type"])
  const projectId = text(body["projectId"])
  const data = isObject(body["data"]) ? body["data"] : {}
  const headline = headlines[type] ?? type
  const lines: Array<string> = []
  let link: string
  const action = data["action"]
  if (isObject(action)) {
    const actionId = text(action["actionId"])
    lines.push(`*${escape(text(action["summary"]))}*`)
    const proposer = isObject(action["proposedBy"]) ? text(action["proposedBy"]["name"]) : ""
    if (proposer !== "") lines.push(`Proposed by ${escape(proposer)}${text(action["reason"]) !== "" ? `: “${escape(text(action["reason"]))}”` : ""}`)
    const reasons = Array.isArray(action["policyReasons"]) ? action["policyReasons"].map(text).filter((r) => r !== "") : []
    for (const reason of reasons) lines.push(`• ${escape(reason)}`)
    const failure = action["failure"]
    if (isObject(failure)) lines.push(`Failure: ${escape(text(failure["message"]))}`)
    const decisionReason = text(action["decisionReason"])
    if (decisionReason !== "") lines.push(`Reason: ${escape(decisionReason)}`)
    link = consoleLink(publicUrl, projectId, actionId)
    lines.push(`<${escape(link)}|Open ${escape(actionId)} in acs>`)
  }
  const changeset = data["changeset"]
  if (isObject(changeset)) {
    lines.push(`*${escape(text(changeset["title"]))}*`)
    const opener = isObject(changeset["openedBy"]) ? text(changeset["openedBy"]["name"]) : ""
    if (opener !== "") lines.push(`Opened by ${escape(opener)}${text(changeset["reason"]) !== "" ? `: “${escape(text(changeset["reason"]))}”` : ""}`)
    const members = isObject(changeset["members"]) ? changeset["members"] : {}
    const count = (name: string) => (typeof members[name] === "number" ? members[name] : 0)
    lines.push(`${count("total")} members: ${count("applied")} applied, ${count("failed")} failed, ${count("skipped")} skipped, ` +
      `${count("reverted")} reverted, ${count("pending")} pending`)
    const decision = isObject(changeset["decision"]) ? changeset["decision"] : {}
    const reasons = Array.isArray(decision["policyReasons"]) ? decision["policyReasons"].map(text).filter((r) => r !== "") : []
    if (type === "changeset.queued") for (const reason of reasons) lines.push(`• ${escape(reason)}`)
    link = consoleLink(publicUrl, projectId, text(changeset["changesetId"]))
    lines.push(`<${escape(link)}|Open ${escape(text(changeset["changesetId"]))} in acs>`)
  }
  const sync = data["sync"]
  if (isObject(sync)) lines.push(`Account ${escape(projectId)}${text(sync["error"]) !== "" ? `: ${escape(text(sync["error"]))}` : ""}`)
  const connection = data["connection"]
  if (isObject(connection)) lines.push(escape(text(connection["error"])))
  const detail = lines.join("\n")
  return {
    text: escape(`${headline}${isObject(action) ? `: ${text(action["summary"])}` : isObject(changeset) ? `: ${text(changeset["title"])}` : ""}`),
    blocks: [
      { type: "header", text: { type: "plain_text", text: escape(headline) } },
      ...(detail === "" ? [] : [{ type: "section", text: { type: "mrkdwn", text: detail } }]),
      { type: "context", elements: [{ type: "mrkdwn", text: `${escape(type)} · ${escape(text(body["eventId"]))}` }] }
    ]
  }
}
