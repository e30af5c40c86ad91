/**
 * dismiss_recommendation: tells Apple one of its recommendations is not wanted (docs/contract.md 4.5). Nothing of the
 * campaign changes, so it always auto-applies unless the account's auto-apply is paused; refused (422) when the
 * recommendation has expired or was already applied or dismissed (404 when unknown), at proposal and again at apply. Apple has no
 * way back from a dismissal, so it is not revertible.
 */
import { UpstreamError } from "@acs/domain/Errors"
import { dismissRecommendation as declaration } from "@acs/domain/ProposalKinds"
import type { RecommendationRef } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, type Step, StepRefused } from "./Kind.ts"
import { clears, decodeBody } from "./KindSupport.ts"
import { actionableRecommendation } from "./RecommendationChecks.ts"

export const DismissRecommendationPayload = Schema.Struct({
  recommendationId: Schema.String,
  type: Schema.Literal("daily_cap", "target_cpa"),
  adamId: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  expiresAt: Schema.String,
  /** The recommendation's state the dismissal replaces. */
  priorState: Schema.Literal("available")
})
type Payload = typeof DismissRecommendationPayload.Type

const decode = decodeBody(declaration.body)

const refOf = (p: Payload): RecommendationRef => ({ recommendationId: p.recommendationId, type: p.type, adamId: p.adamId })

/** Reads the recommendation first: already dismissed (a crash after the call) is done; applied since is refused. */
const step = (p: Payload): Step => ({
  name: "dismiss Apple's recommendation",
  apply: (c) =>
    Effect.gen(function*() {
      const list = c.client.recommendations
      const dismiss = c.client.dismissRecommendation
      if (list === undefined || dismiss === undefined) {
        return yield* new UpstreamError({ message: "this connection's API version has no recommendations (v1 only)" })
      }
      const current = (yield* list(c.accountId, p.adamId)).find((r) => r.recommendationId === p.recommendationId)
      if (current?.state === "dismissed") return { ids: {}, touched: {}, warnings: [] }
      if (current !== undefined && current.state !== "available") {
        return yield* new StepRefused({ message: `recommendation ${p.recommendationId} is ${current.state} upstream` })
      }
      yield* dismiss(c.accountId, refOf(p))
      return { ids: {}, touched: {}, warnings: [] }
    })
})

export const DismissRecommendation = defineKind<Payload>({
  kind: "dismiss_recommendation",
  declaration,
  reviewTier: "review",
  rule: "always: a dismissal changes nothing of the campaign",
  composite: false,
  payload: DismissRecommendationPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const r = yield* actionableRecommendation(view, request.recommendationId)
      const payload: Payload = {
        recommendationId: r.recommendationId,
        type: r.type,
        adamId: r.adamId,
        campaignId: r.campaignId,
        campaignName: r.campaignName,
        expiresAt: r.expiresAt,
        priorState: "available"
      }
      const what = r.type === "daily_cap" ? "daily budget" : "target CPA"
      return { payload, summary: `Dismiss Apple's ${what} recommendation ${r.recommendationId} for campaign "${r.campaignName}"` }
    }),
  recheck: (p, view) => Effect.asVoid(actionableRecommendation(view, p.recommendationId)),
  autoApply: () => Effect.succeed(clears("a dismissal changes nothing of the campaign")),
  steps: (p) => [step(p)],
  drift: () => Effect.succeed(null)
})
