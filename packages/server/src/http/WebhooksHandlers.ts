/** Webhook endpoints over REST (admin, org-level). */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const WebhooksHandlers = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("createWebhook", operate.handler("createWebhook"))
      .handle("listWebhooks", operate.handler("listWebhooks"))
      .handle("deleteWebhook", operate.handler("deleteWebhook"))
      .handle("testWebhook", operate.handler("testWebhook"))
      .handle("enableWebhook", operate.handler("enableWebhook"))
      .handle("listWebhookDeliveries", operate.handler("listWebhookDeliveries"))
  }))
