/** Webhook endpoints and their deliveries (docs/contract.md 6). */
import { Schema } from "effect"
import { EventType } from "./Events.ts"
import { IntegerParam } from "./Warehouse.ts"

export const WebhookFormat = Schema.Literal("json", "slack", "slack_app").annotations({
  description: "`json`: the event body, signed; `slack`: a Slack incoming-webhook message (text and blocks); `slack_app`: " +
    "the same with Approve and Reject buttons for a Slack app's incoming webhook (docs/contract.md 6.1)"
})

export const CreateWebhookRequest = Schema.Struct({
  url: Schema.String.pipe(Schema.maxLength(2048)).annotations({ description: "https URL that receives the POSTs" }),
  events: Schema.Array(EventType).pipe(Schema.minItems(1), Schema.maxItems(32)).annotations({
    description: "The event types to deliver"
  }),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(500))),
  format: Schema.optional(WebhookFormat)
}).annotations({ identifier: "CreateWebhookRequest" })
export type CreateWebhookRequest = typeof CreateWebhookRequest.Type

export const Webhook = Schema.Struct({
  webhookId: Schema.String,
  url: Schema.String,
  events: Schema.Array(EventType),
  description: Schema.NullOr(Schema.String),
  format: WebhookFormat,
  createdAt: Schema.String,
  disabledAt: Schema.NullOr(Schema.String).annotations({
    description: "Set when deliveries kept failing for the whole retry window; POST …/enable turns it back on"
  }),
  disabledReason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Webhook" })
export type Webhook = typeof Webhook.Type

export const CreatedWebhook = Schema.Struct({
  webhook: Webhook,
  secret: Schema.String.annotations({ description: "The signing secret, shown once: verify `Acs-Signature` with it" })
}).annotations({ identifier: "CreatedWebhook" })

export const WebhookList = Schema.Struct({ webhooks: Schema.Array(Webhook) }).annotations({ identifier: "WebhookList" })

export const Delivery = Schema.Struct({
  deliveryId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  status: Schema.Literal("pending", "delivered", "failed").annotations({
    description: "`pending` until a 2xx (`delivered`) or until the retry window ends (`failed`)"
  }),
  attempts: Schema.Int,
  lastStatusCode: Schema.NullOr(Schema.Int),
  lastDurationMs: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  lastResponse: Schema.NullOr(Schema.String).annotations({ description: "The receiver's answer, at most 1 KiB" }),
  lastAttemptAt: Schema.NullOr(Schema.String),
  nextRetryAt: Schema.NullOr(Schema.String),
  deliveredAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
}).annotations({ identifier: "WebhookDelivery" })
export type Delivery = typeof Delivery.Type

export const DeliveryParams = Schema.Struct({
  limit: Schema.optional(IntegerParam(Schema.Int, {
    minimum: 1,
    maximum: 200,
    default: 50,
    description: "How many deliveries to answer, newest first (default 50); clamped to 1–200"
  }))
})

export const DeliveryList = Schema.Struct({ deliveries: Schema.Array(Delivery) }).annotations({ identifier: "WebhookDeliveryList" })
