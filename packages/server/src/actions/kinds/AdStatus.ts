/** ad_status: enable or pause an ad (a creative of an ad group). Never auto-applies. */
import { NotFound } from "@acs/domain/Errors"
import { adStatus as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamAd, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, type StepContext } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { decodeBody, type FieldChange, fieldDrift, fieldStep, found, holds, noOp } from "./KindSupport.ts"

const Status = Schema.Literal("ENABLED", "PAUSED")

export const AdStatusPayload = Schema.Struct({
  adId: Schema.String,
  adName: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  status: Status,
  priorStatus: Status
})
type Payload = typeof AdStatusPayload.Type

const decode = decodeBody(declaration.body)

/** The platform has no GET of one ad: the ad group's live ads are listed and the ad picked out. */
const readAd = (p: Payload) => (c: StepContext): Effect.Effect<UpstreamAd, UpstreamFailure> =>
  c.client.ads(c.accountId, p.campaignId, p.adGroupId).pipe(
    Effect.flatMap((ads) => {
      const ad = ads.find((candidate) => candidate.adId === p.adId)
      return ad === undefined ? Effect.fail(new NotFound({ message: `ad ${p.adId} was deleted upstream` })) : Effect.succeed(ad)
    })
  )

const change = (p: Payload): FieldChange<UpstreamAd, string> => ({
  name: "update ad status",
  label: `the status of ad ${p.adId}`,
  read: readAd(p),
  fields: (ad) => ad.status,
  prior: p.priorStatus,
  target: p.status,
  write: (c) => c.client.updateAd(c.accountId, p.campaignId, p.adGroupId, p.adId, { status: p.status }),
  touched: (ad) => ({ ads: [ad] })
})

const summary = (p: Payload) => `${p.status === "PAUSED" ? "Pause" : "Enable"} ad "${p.adName}" (now ${p.priorStatus})`

const already = (adId: string, status: string) => `ad ${adId} is already ${status}`

const adIn = (view: WarehouseView, adId: string, missing: string) =>
  Effect.flatMap(view.ad(adId), (ad) => found(ad, missing))

export const AdStatus = defineKind<Payload>({
  kind: "ad_status",
  declaration,
  reviewTier: "review",
  rule: "never: enabling or pausing an ad always needs review",
  composite: false,
  payload: AdStatusPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const ad = yield* adIn(view, request.adId, `no ad ${request.adId} in this account`)
      if (ad.status === request.status) return yield* noOp(already(ad.adId, request.status))
      const payload: Payload = {
        adId: ad.adId,
        adName: ad.name,
        adGroupId: ad.adGroupId,
        campaignId: ad.campaignId,
        status: request.status,
        priorStatus: ad.status
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const ad = yield* adIn(view, p.adId, `ad ${p.adId} is no longer in this account`)
      if (ad.status === p.status) return yield* noOp(already(p.adId, p.status))
    }),
  autoApply: (p) => Effect.succeed(holds(`${p.status === "PAUSED" ? "pausing" : "enabling"} ad "${p.adName}" always needs review`)),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) =>
    fieldDrift(change(p))(context).pipe(
      Effect.catchTag("NotFound", (error): Effect.Effect<string | null, UpstreamFailure> => Effect.succeed(error.message))
    ),
  inverse: (p) => {
    const payload: Payload = { ...p, status: p.priorStatus, priorStatus: p.status }
    return { kind: "ad_status", payload, summary: `Revert: ${summary(payload)}` }
  }
})
