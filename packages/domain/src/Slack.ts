/** Slack approvals (docs/contract.md 6.1): the org's signing secret, a person's Slack user. */
import { Schema } from "effect"

/** A Slack user id as Slack writes it in an interaction (`U…`, or `W…` on Enterprise Grid). */
export const SlackUserId = Schema.String.pipe(
  Schema.pattern(/^[UW][A-Z0-9]{2,20}$/, { message: () => "slackUserId must be a Slack user id such as U024BE7LH" })
).annotations({ description: "The person's Slack user id (`U024BE7LH`): Slack profile → ⋮ → Copy member ID" })

export const SlackIntegration = Schema.Struct({
  signingSecretSet: Schema.Boolean.annotations({ description: "Whether the org's Slack signing secret is set; the secret is never answered" }),
  setAt: Schema.NullOr(Schema.String).annotations({ description: "When it was last set" }),
  interactionsPath: Schema.String.annotations({ description: "The path of the Slack app's Interactivity Request URL" })
}).annotations({ identifier: "SlackIntegration" })
export type SlackIntegration = typeof SlackIntegration.Type

export const SetSlackSigningSecretRequest = Schema.Struct({
  signingSecret: Schema.String.pipe(
    Schema.pattern(/^[0-9a-f]{16,128}$/, { message: () => "signingSecret must be the app's Signing Secret (hex), from Basic Information" })
  ).annotations({ description: "The Slack app's Signing Secret (Basic Information → App Credentials); stored sealed, never answered" })
}).annotations({ identifier: "SetSlackSigningSecretRequest" })

export const LinkSlackUserRequest = Schema.Struct({
  slackUserId: Schema.NullOr(SlackUserId).annotations({ description: "The signed-in person's Slack user id; null unlinks it" })
}).annotations({ identifier: "LinkSlackUserRequest" })

/** The path Slack posts interactions to (outside /api/v1: Slack's signature is its credential). */
export const SLACK_INTERACTIONS_PATH = "/integrations/slack/interactions"
