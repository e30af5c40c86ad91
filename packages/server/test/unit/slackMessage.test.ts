/**
 * The Slack-format body (webhooks/SlackMessage.ts), docs/decisions/events-and-webhooks.md: every text taken from an event reaches Slack with
 * `&`, `<` and `>` escaped, in every field (the notification `text`, the header, the section and the context),
 * so a campaign named `<!channel>` or `<https://evil|click>` is shown as those characters, never as a mention
 * or a link; the only markup left is acs's own console link.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { slackMessage } from "../../src/webhooks/SlackMessage.ts"

const HOSTILE = "<!channel> <https://evil.example/?a=1&b=2|click> & <@U024BE7LH> > <#C024BE7LH>"
const ESCAPED = "&lt;!channel&gt; &lt;https://evil.example/?a=1&amp;b=2|click&gt; &amp; &lt;@U024BE7LH&gt; &gt; &lt;#C024BE7LH&gt;"

/** Every string of the message, wherever it sits. */
const strings = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : typeof value === "object" && value !== null ? Object.values(value).flatMap(strings) : []

/** What is left of `text` once acs's own console link is taken out. */
const withoutConsoleLink = (text: string) => text.replace(/<https:\/\/acs\.example\.com\/#\/change\/[^|<>]*\|Open [^<>]* in acs>/g, "")

describe("the Slack message", () => {
  it("escapes a hostile campaign name, proposer, reason, policy reasons and failure: the exact body", () => {
    const message = slackMessage({
      eventId: "evt_1",
      type: "action.failed",
      createdAt: "2026-11-28T00:00:00.000Z",
      orgId: "org_1",
      projectId: "prj_1",
      data: {
        action: {
          actionId: "act_1",
          summary: `Rename campaign "Brand" to "${HOSTILE}"`,
          proposedBy: { kind: "person", name: "<!here> Mallory" },
          reason: "see <https://evil|here>",
          policyReasons: ["over <!everyone> & more"],
          failure: { message: "upstream said <b>no</b>" },
          decisionReason: "ok & <go>"
        }
      }
    }, "https://acs.example.com/")
    expect(message).toEqual({
      text: `Change failed: Rename campaign "Brand" to "${ESCAPED}"`,
      blocks: [
        { type: "header", text: { type: "plain_text", text: "Change failed" } },
        {
          type: "section",
          text: {
            type: "mrkdwn",
            text: [
              `*Rename campaign "Brand" to "${ESCAPED}"*`,
              "Proposed by &lt;!here&gt; Mallory: “see &lt;https://evil|here&gt;”",
              "• over &lt;!everyone&gt; &amp; more",
              "Failure: upstream said &lt;b&gt;no&lt;/b&gt;",
              "Reason: ok &amp; &lt;go&gt;",
              "<https://acs.example.com/#/change/prj_1/act_1|Open act_1 in acs>"
            ].join("\n")
          }
        },
        { type: "context", elements: [{ type: "mrkdwn", text: "action.failed · evt_1" }] }
      ]
    })
  })

  it("shows a queued changeset as one message: its title, opener, member counts and the reasons for the whole", () => {
    const message = slackMessage({
      eventId: "evt_4",
      type: "changeset.queued",
      projectId: "prj_1",
      data: {
        changeset: {
          changesetId: "cs_1",
          title: "Tune <!channel> bids",
          reason: "weekly & more",
          openedBy: { kind: "key", name: "agent" },
          members: { total: 54, applied: 0, failed: 0, skipped: 0, reverted: 0, pending: 54 },
          decision: { policyReasons: ["54 members (act_1, act_2, act_3 and 51 more): proposed with an API key"] }
        }
      }
    }, "https://acs.example.com")
    expect(message).toEqual({
      text: "A changeset waits for approval: Tune &lt;!channel&gt; bids",
      blocks: [
        { type: "header", text: { type: "plain_text", text: "A changeset waits for approval" } },
        {
          type: "section",
          text: {
            type: "mrkdwn",
            text: [
              "*Tune &lt;!channel&gt; bids*",
              "Opened by agent: “weekly &amp; more”",
              "54 members: 0 applied, 0 failed, 0 skipped, 0 reverted, 54 pending",
              "• 54 members (act_1, act_2, act_3 and 51 more): proposed with an API key",
              "<https://acs.example.com/#/change/prj_1/cs_1|Open cs_1 in acs>"
            ].join("\n")
          }
        },
        { type: "context", elements: [{ type: "mrkdwn", text: "changeset.queued · evt_4" }] }
      ]
    })
  })

  it("escapes sync and connection errors and an unknown type", () => {
    const sync = slackMessage({ eventId: "evt_2", type: "sync.failed", projectId: "prj_1", data: { sync: { error: "<!channel> down & out" } } },
      "https://acs.example.com")
    expect(strings(sync)).toContain("Account prj_1: &lt;!channel&gt; down &amp; out")
    const connection = slackMessage({ eventId: "evt_3", type: "<!x>", projectId: null, data: { connection: { error: "a<b" } } }, "https://acs.example.com")
    expect(connection).toEqual({
      text: "&lt;!x&gt;",
      blocks: [
        { type: "header", text: { type: "plain_text", text: "&lt;!x&gt;" } },
        { type: "section", text: { type: "mrkdwn", text: "a&lt;b" } },
        { type: "context", elements: [{ type: "mrkdwn", text: "&lt;!x&gt; · evt_3" }] }
      ]
    })
  })

  it("leaves no unescaped control character but acs's own link, whatever the event says", () => {
    const text = fc.string({ unit: fc.constantFrom("<", ">", "&", "!", "|", "a", "@", "#", " ", "*", ";") })
    fc.assert(fc.property(fc.constantFrom("action.proposed", "action.applied", "sync.failed", "connection.broken"), text, text, text, text, text,
      (type, summary, name, reason, policyReason, error) => {
        const message = slackMessage({
          eventId: "evt_1",
          type,
          projectId: "prj_1",
          data: {
            action: { actionId: "act_1", summary, proposedBy: { name }, reason, policyReasons: [policyReason], failure: { message: error } },
            sync: { error },
            connection: { error }
          }
        }, "https://acs.example.com")
        // An `&` is only ever the start of one of the three entities; `<` and `>` never appear raw.
        return strings(message).map(withoutConsoleLink).every((s) => !/[<>]/.test(s) && !/&(?!amp;|lt;|gt;)/.test(s))
      }), { numRuns: 500 })
  })
})
