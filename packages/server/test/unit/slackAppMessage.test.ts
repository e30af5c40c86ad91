/**
 * The `slack_app` body (webhooks/SlackAppMessage.ts, docs/contract.md 6.1): the exact Block Kit of a queued
 * action — account by name, diff in the account's currency, reasons, proposer, expiry, the link to that action,
 * Approve and Reject bound to it — and of a queued changeset (bound to its plan hash); no buttons once a change is
 * decided; every text from the event escaped as the `slack` format escapes it, buttons' values included in
 * nothing but acs's own JSON.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { APPROVE, REJECT, slackAppMessage } from "../../src/webhooks/SlackAppMessage.ts"

const HOSTILE = "<!channel> <https://evil.example/?a=1&b=2|click> & <@U024BE7LH>"
const ESCAPED = "&lt;!channel&gt; &lt;https://evil.example/?a=1&amp;b=2|click&gt; &amp; &lt;@U024BE7LH&gt;"
const FACTS = { accountName: `Acme ${HOSTILE}`, currency: "USD", expiresAt: "2026-12-01T10:00Z" }

const strings = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : typeof value === "object" && value !== null ? Object.values(value).flatMap(strings) : []

const CONFIRM = {
  title: { type: "plain_text", text: "Reject this change?" },
  text: { type: "plain_text", text: "None of it applies; whoever proposed it sees your rejection." },
  confirm: { type: "plain_text", text: "Reject" },
  deny: { type: "plain_text", text: "Keep it" }
}

const queuedAction = (summary: string, extra: Record<string, unknown> = {}) => ({
  eventId: "evt_1",
  type: "action.proposed",
  projectId: "prj_1",
  data: {
    action: {
      actionId: "act_1",
      kind: "budget_change",
      status: "proposed",
      summary,
      proposedBy: { kind: "key", name: "<!here> agent" },
      reason: "more & <b>reach</b>",
      payload: { campaignId: "123", priorDailyBudgetMicros: 500_000_000, newDailyBudgetMicros: 650_000_000 },
      policyReasons: ["two people: a budget raise of 30.0% is past the 25% high-risk line"],
      approvals: [],
      ...extra
    }
  }
})

describe("the Slack app message", () => {
  it("shows a queued action with its account, diff, reasons, proposer, expiry, link and buttons bound to it: the exact body", () => {
    const value = JSON.stringify({ projectId: "prj_1", actionId: "act_1" })
    expect(slackAppMessage(queuedAction(`Raise "${HOSTILE}"`), "https://acs.example.com/", FACTS)).toEqual({
      text: `A change waits for approval: Raise "${ESCAPED}"`,
      blocks: [
        { type: "header", text: { type: "plain_text", text: "A change waits for approval" } },
        {
          type: "section",
          text: {
            type: "mrkdwn",
            text: [
              `*Raise "${ESCAPED}"*`,
              `Account: Acme ${ESCAPED} (prj_1)`,
              "Proposed by &lt;!here&gt; agent: “more &amp; &lt;b&gt;reach&lt;/b&gt;”",
              "<https://acs.example.com/#/change/prj_1/act_1|Open act_1 in acs>"
            ].join("\n")
          }
        },
        {
          type: "section",
          text: {
            type: "mrkdwn",
            text: ["• dailyBudget: 500.00 USD → 650.00 USD", "• two people: a budget raise of 30.0% is past the 25% high-risk line"].join("\n")
          }
        },
        {
          type: "actions",
          block_id: "acs_decision",
          elements: [
            { type: "button", text: { type: "plain_text", text: "Approve" }, action_id: APPROVE, style: "primary", value },
            { type: "button", text: { type: "plain_text", text: "Reject" }, action_id: REJECT, style: "danger", value, confirm: CONFIRM }
          ]
        },
        { type: "context", elements: [{ type: "mrkdwn", text: "Expires 2026-12-01T10:00Z unless decided · action.proposed · evt_1" }] }
      ]
    })
  })

  it("binds a queued changeset's buttons to its plan hash, and says who approved a high-risk one once", () => {
    const message = slackAppMessage({
      eventId: "evt_2",
      type: "changeset.queued",
      projectId: "prj_1",
      data: {
        changeset: {
          changesetId: "chs_1",
          status: "queued",
          title: "Tune bids",
          openedBy: { kind: "key", name: "agent" },
          planHash: "sha256:abc",
          approvals: [{ by: { kind: "person", name: "Ann <!x>" } }],
          members: { total: 3, applied: 0, failed: 0, pending: 3 },
          decision: { policyReasons: ["proposed with an API key"] }
        }
      }
    }, "https://acs.example.com", FACTS)
    const actions = (message["blocks"] as Array<{ type: string; elements?: Array<{ value: string }> }>).find((b) => b.type === "actions")!
    expect(actions.elements!.map((e) => JSON.parse(e.value) as unknown)).toEqual([
      { projectId: "prj_1", changesetId: "chs_1", planHash: "sha256:abc" },
      { projectId: "prj_1", changesetId: "chs_1", planHash: "sha256:abc" }
    ])
    expect(strings(message).join("\n")).toContain("Approved once by Ann &lt;!x&gt;: high risk needs a second person")
    expect(strings(message).join("\n")).toContain("<https://acs.example.com/#/change/prj_1/chs_1|Open chs_1 in acs>")
  })

  it("has no buttons once the change is decided, and the outcome on top", () => {
    const decided = queuedAction("Raise", { status: "approved" })
    const message = slackAppMessage({ ...decided, type: "action.approved" }, "https://acs.example.com", { ...FACTS, expiresAt: null }, "Approved by Ann <!here> in Slack")
    const blocks = message["blocks"] as Array<{ type: string; text?: { text: string } }>
    expect(blocks.some((b) => b.type === "actions")).toBe(false)
    expect(blocks[1]).toEqual({ type: "section", text: { type: "mrkdwn", text: "*Approved by Ann &lt;!here&gt; in Slack*" } })
    expect(message["text"]).toBe("Approved by Ann &lt;!here&gt; in Slack: Raise")
    expect(strings(message).join("\n")).not.toContain("Expires")
  })

  it("leaves no unescaped control character but acs's own link and markup, whatever the event says", () => {
    const text = fc.string({ unit: fc.constantFrom("<", ">", "&", "!", "|", "a", "@", "#", " ", "*") })
    fc.assert(fc.property(text, text, text, text, text, (summary, name, reason, entity, account) => {
      const message = slackAppMessage({
        eventId: "evt_1",
        type: "action.proposed",
        projectId: "prj_1",
        data: {
          action: {
            actionId: "act_1",
            kind: "keyword_bid_change",
            status: "proposed",
            summary,
            proposedBy: { name },
            reason,
            policyReasons: [reason],
            payload: { keywords: [{ text: entity, priorBidMicros: 1, newBidMicros: 2 }] }
          }
        }
      }, "https://acs.example.com", { ...FACTS, accountName: account })
      const texts = strings(message).filter((s) => !s.startsWith("{\"projectId\"")).map((s) =>
        s.replace(/<https:\/\/acs\.example\.com\/#\/change\/prj_1\/act_1\|Open act_1 in acs>/g, ""))
      return texts.every((s) => !/[<>]/.test(s) && !/&(?!amp;|lt;|gt;)/.test(s))
    }), { numRuns: 300 })
  })
})
