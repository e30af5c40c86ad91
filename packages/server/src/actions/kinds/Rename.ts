/** rename: a campaign's or an ad group's name. Never auto-applies. Names are unique among the account's
 * campaigns and among a campaign's ad groups (the upstream refuses duplicates), so that is checked locally. */
import { rename as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamAdGroup, UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { decodeBody, type FieldChange, fieldDrift, fieldStep, found, holds, noOp, requireNone } from "./KindSupport.ts"

export const RenamePayload = Schema.Struct({
  entity: Schema.Literal("campaign", "adGroup"),
  id: Schema.String,
  /** The campaign itself, or the ad group's campaign (upstream paths need it). */
  campaignId: Schema.String,
  name: Schema.String,
  priorName: Schema.String
})
type Payload = typeof RenamePayload.Type

const decode = decodeBody(declaration.body)

const what = (entity: Payload["entity"]) => (entity === "campaign" ? "campaign" : "ad group")

const common = (p: Payload) => ({
  name: `rename ${what(p.entity)}`,
  label: `the name of ${what(p.entity)} ${p.id}`,
  fields: (entity: { readonly name: string }) => entity.name,
  prior: p.priorName,
  target: p.name
})

const campaignChange = (p: Payload): FieldChange<UpstreamCampaign, string> => ({
  ...common(p),
  read: (c) => c.client.campaign(c.accountId, p.id),
  write: (c) => c.client.updateCampaign(c.accountId, p.id, { name: p.name }),
  touched: (campaign) => ({ campaigns: [campaign] })
})

const adGroupChange = (p: Payload): FieldChange<UpstreamAdGroup, string> => ({
  ...common(p),
  read: (c) => c.client.adGroup(c.accountId, p.campaignId, p.id),
  write: (c) => c.client.updateAdGroup(c.accountId, p.campaignId, p.id, { name: p.name }),
  touched: (adGroup) => ({ adGroups: [adGroup] })
})

const summary = (p: Payload) => `Rename ${what(p.entity)} "${p.priorName}" to "${p.name}"`

interface Current {
  readonly campaignId: string
  readonly name: string
  /** Another entity of the same scope already holding the requested name, if any. */
  readonly clash: string | undefined
}

/** The entity as the warehouse has it, and whether a sibling already holds `name`. */
const current = (view: WarehouseView, entity: Payload["entity"], id: string, name: string, gone: string) =>
  Effect.gen(function*() {
    if (entity === "campaign") {
      const campaign = yield* found(yield* view.campaign(id), gone)
      const named = yield* view.campaignNamed(name)
      return {
        campaignId: campaign.campaignId,
        name: campaign.name,
        clash: named !== undefined && named.campaignId !== id ? `campaign ${named.campaignId} is already named "${named.name}"` : undefined
      } satisfies Current
    }
    const adGroup = yield* found(yield* view.adGroup(id), gone)
    const named = yield* view.adGroupNamed(adGroup.campaignId, name)
    return {
      campaignId: adGroup.campaignId,
      name: adGroup.name,
      clash: named !== undefined && named.adGroupId !== id
        ? `ad group ${named.adGroupId} of campaign ${adGroup.campaignId} is already named "${named.name}"`
        : undefined
    } satisfies Current
  })

const checks = (entity: Payload["entity"], id: string, name: string, now: Current) =>
  Effect.gen(function*() {
    if (now.name === name) return yield* noOp(`${what(entity)} ${id} is already named "${name}"`)
    yield* requireNone(now.clash === undefined ? [] : [now.clash])
  })

export const Rename = defineKind<Payload>({
  kind: "rename",
  declaration,
  reviewTier: "review",
  rule: "never: renaming a campaign or an ad group always needs review",
  composite: false,
  payload: RenamePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const now = yield* current(view, request.entity, request.id, request.name, `no ${what(request.entity)} ${request.id} in this account`)
      yield* checks(request.entity, request.id, request.name, now)
      const payload: Payload = {
        entity: request.entity,
        id: request.id,
        campaignId: now.campaignId,
        name: request.name,
        priorName: now.name
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const now = yield* current(view, p.entity, p.id, p.name, `${what(p.entity)} ${p.id} is no longer in this account`)
      yield* checks(p.entity, p.id, p.name, now)
    }),
  autoApply: () => Effect.succeed(holds("renaming a campaign or an ad group always needs review")),
  steps: (p) => [p.entity === "campaign" ? fieldStep(campaignChange(p)) : fieldStep(adGroupChange(p))],
  drift: (p, context) =>
    p.entity === "campaign" ? fieldDrift(campaignChange(p))(context) : fieldDrift(adGroupChange(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, name: p.priorName, priorName: p.name }
    return { kind: "rename", payload, summary: `Revert: ${summary(payload)}` }
  }
})
