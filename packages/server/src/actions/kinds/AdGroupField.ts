/** What the one-field ad-group kinds share (status, CPA goal, default bid, Search Match): the warehouse lookup at
 * proposal, the upstream read that treats a deleted ad group as gone, and the field change over the update call. */
import { NotFound } from "@acs/domain/Errors"
import type { AdGroupChange, UpstreamAdGroup, UpstreamCampaign, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import type { StepContext } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { type FieldChange, fieldDrift, found } from "./KindSupport.ts"

/** The ad group and its campaign as the warehouse has them; 404 when either is unknown. */
export const adGroupWithCampaign = (view: WarehouseView, adGroupId: string, missing = `no ad group ${adGroupId} in this account`) =>
  Effect.gen(function*() {
    const adGroup = yield* found(yield* view.adGroup(adGroupId), missing)
    const campaign: UpstreamCampaign = yield* found(
      yield* view.campaign(adGroup.campaignId),
      `campaign ${adGroup.campaignId} of ad group ${adGroupId} is not in this account`
    )
    return { adGroup, campaign }
  })

/** The ad group upstream; a deleted one reads as NotFound (a GET by id still answers it, flagged `deleted`). */
export const readAdGroup = (campaignId: string, adGroupId: string) => (context: StepContext) =>
  context.client.adGroup(context.accountId, campaignId, adGroupId).pipe(
    Effect.filterOrFail(
      (adGroup) => !adGroup.deleted,
      () => new NotFound({ message: `ad group ${adGroupId} was deleted upstream` })
    )
  )

export interface AdGroupFieldSpec<F> {
  readonly campaignId: string
  readonly adGroupId: string
  /** The step name: `update ad group status`. */
  readonly name: string
  /** The field in words, for drift reasons: `status`. */
  readonly what: string
  readonly fields: (adGroup: UpstreamAdGroup) => F
  readonly prior: F
  readonly target: F
  readonly change: AdGroupChange
}

export const adGroupField = <F>(spec: AdGroupFieldSpec<F>): FieldChange<UpstreamAdGroup, F> => ({
  name: spec.name,
  label: `the ${spec.what} of ad group ${spec.adGroupId}`,
  read: readAdGroup(spec.campaignId, spec.adGroupId),
  fields: spec.fields,
  prior: spec.prior,
  target: spec.target,
  write: (c) => c.client.updateAdGroup(c.accountId, spec.campaignId, spec.adGroupId, spec.change),
  touched: (adGroup) => ({ adGroups: [adGroup] })
})

/** Drift of an ad-group field; an ad group deleted (or whose campaign was deleted) since is drift too, named. */
export const adGroupFieldDrift = <F>(change: FieldChange<UpstreamAdGroup, F>) => (context: StepContext) =>
  fieldDrift(change)(context).pipe(
    Effect.catchTag("NotFound", (error): Effect.Effect<string | null, UpstreamFailure> =>
      Effect.succeed(`${change.label} can no longer be changed: ${error.message}`))
  )
