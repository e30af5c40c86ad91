/**
 * `acs webhooks create|list|delete|test`: the org's webhook endpoints (an org-wide admin key). `create`
 * prints the signing secret once.
 */
import { EventType } from "@acs/domain/Events"
import type { Webhook } from "@acs/domain/Webhooks"
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import { UsageError } from "../CliError.ts"
import { clientOptions, withClient } from "../Client.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"

const webhookId = Args.text({ name: "webhookId" }).pipe(Args.withDescription("the endpoint, whk_…"))

const renderWebhook = (webhook: Webhook) =>
  renderRecord([
    ["webhook id", webhook.webhookId],
    ["url", webhook.url],
    ["events", webhook.events.join(", ")],
    ["format", webhook.format],
    ["description", webhook.description],
    ["created at", webhook.createdAt],
    ["disabled at", webhook.disabledAt],
    ["disabled because", webhook.disabledReason]
  ])

const createCommand = Command.make("create", {
  target: Args.text({ name: "url" }).pipe(Args.withDescription("the https URL that receives the POSTs")),
  events: Options.text("event").pipe(
    Options.repeated,
    Options.withDescription("an event type to deliver; repeat for more (default: action.proposed)")
  ),
  format: Options.choice("format", ["json", "slack", "slack_app"]).pipe(Options.withDefault("json" as const)),
  description: Options.text("description").pipe(Options.optional),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const events = yield* Schema.decodeUnknown(Schema.Array(EventType))(input.events.length === 0 ? ["action.proposed"] : input.events).pipe(
        Effect.mapError(() => new UsageError({ message: `--event: one of ${EventType.literals.join(", ")}` }))
      )
      const created = yield* client.createWebhook({
        payload: {
          url: input.target,
          events,
          format: input.format,
          ...Option.match(input.description, { onNone: () => ({}), onSome: (description) => ({ description }) })
        }
      })
      yield* emit(input.json, created, () =>
        `${renderWebhook(created.webhook)}\nsecret:       ${created.secret}\n(the secret is shown once: verify Acs-Signature with it)`)
    }))
).pipe(Command.withDescription("add a webhook endpoint; prints its signing secret once"))

const listCommand = Command.make("list", { ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const listed = yield* client.listWebhooks({})
      yield* emit(input.json, listed, () =>
        renderTable([
          { header: "WEBHOOK ID", cell: (w: Webhook) => w.webhookId },
          { header: "URL", cell: (w: Webhook) => w.url },
          { header: "EVENTS", cell: (w: Webhook) => w.events.join(",") },
          { header: "FORMAT", cell: (w: Webhook) => w.format },
          { header: "DISABLED", cell: (w: Webhook) => w.disabledAt ?? "" }
        ], listed.webhooks))
    }))
).pipe(Command.withDescription("list the org's webhook endpoints"))

const deleteCommand = Command.make("delete", { webhookId, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      yield* client.deleteWebhook({ path: { webhookId: input.webhookId } })
      yield* emit(input.json, { deleted: input.webhookId }, () => `deleted ${input.webhookId}`)
    }))
).pipe(Command.withDescription("delete a webhook endpoint; nothing more is delivered to it"))

const testCommand = Command.make("test", { webhookId, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const delivery = yield* client.testWebhook({ path: { webhookId: input.webhookId } })
      yield* emit(input.json, delivery, () =>
        `ping ${delivery.eventId} queued as ${delivery.deliveryId}; see its outcome with GET /webhooks/${input.webhookId}/deliveries`)
    }))
).pipe(Command.withDescription("send a ping event to the endpoint"))

export const webhooksCommand = Command.make("webhooks").pipe(
  Command.withDescription("webhook endpoints of the org (an org-wide admin key): create, list, delete, test"),
  Command.withSubcommands([createCommand, listCommand, deleteCommand, testCommand])
)
