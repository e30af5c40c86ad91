/** delete_ad_group: only the compensation of a create_ad_group or clone_ad_group revert, never proposed (no
 * endpoint). Idempotent: an ad group already deleted (or whose campaign is) is done. */
import { InvalidRequest } from "@acs/domain/Errors"
import type { UpstreamAdGroup, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, type Ids, type Inverse, type StepContext, StepRefused } from "./Kind.ts"
import { idOf, idsOf, treeIdKeys } from "./AdGroupTree.ts"
import { listed, plural } from "./KeywordSupport.ts"
import { holds } from "./KindSupport.ts"

export const DeleteAdGroupPayload = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  /** The keywords the original action created: a keyword in the ad group beyond these was added by someone else since. */
  keywordIds: Schema.Array(Schema.String)
})
type Payload = typeof DeleteAdGroupPayload.Type

const summary = (p: Payload) => `Delete ad group "${p.adGroupName}" (${p.adGroupId}) of campaign ${p.campaignId}`

/** The compensation of an action that created an ad group tree, from the ids its steps recorded. */
export const deleteAdGroupInverse = (ids: Ids, campaignId: string, adGroupName: string, slot?: string): Inverse => {
  const keys = treeIdKeys(slot)
  const payload: Payload = {
    // Empty only when the original recorded no ad group, which an applied create cannot; the step refuses it.
    adGroupId: idOf(ids, keys.adGroupId) ?? "",
    adGroupName,
    campaignId,
    keywordIds: [...idsOf(ids, keys.keywordIds)]
  }
  return { kind: "delete_ad_group", payload, summary: `Revert: ${summary(payload)}` }
}

/** The live ad group, or undefined when it (or its campaign) is gone upstream. */
const live = (p: Payload, context: StepContext): Effect.Effect<UpstreamAdGroup | undefined, UpstreamFailure> =>
  context.client.adGroup(context.accountId, p.campaignId, p.adGroupId).pipe(
    Effect.map((adGroup) => (adGroup.deleted ? undefined : adGroup)),
    Effect.catchTag("NotFound", () => Effect.succeed(undefined))
  )

export const DeleteAdGroup = defineKind<Payload>({
  kind: "delete_ad_group",
  reviewTier: "high",
  rule: "never proposed: deleting an ad group is only the revert of the action that created it",
  composite: false,
  payload: DeleteAdGroupPayload,
  prepare: () =>
    Effect.fail(new InvalidRequest({ message: "delete_ad_group cannot be proposed: revert the create_ad_group or clone_ad_group action" })),
  recheck: () => Effect.void,
  autoApply: () => Effect.succeed(holds("deleting an ad group is only the revert of the action that created it")),
  steps: (p) => [{
    name: "delete ad group",
    apply: (context) =>
      Effect.gen(function*() {
        if (p.adGroupId === "") return yield* new StepRefused({ message: "the original action recorded no ad group id to delete" })
        // No drift check here: a drifted revert queues, and whoever approves it has seen the reason and wants the delete.
        const adGroup = yield* live(p, context)
        if (adGroup !== undefined) yield* context.client.deleteAdGroup(context.accountId, p.campaignId, p.adGroupId)
        return { ids: {}, touched: { removedAdGroups: [p.adGroupId] }, warnings: [] }
      })
  }],
  // What the revert would destroy beyond what the original created: a rename or keywords added since.
  drift: (p, context) =>
    Effect.gen(function*() {
      const adGroup = yield* live(p, context)
      if (adGroup === undefined) return null
      const reasons: Array<string> = []
      if (adGroup.name !== p.adGroupName) reasons.push(`ad group ${p.adGroupId} was renamed to "${adGroup.name}" since it was created`)
      const created = new Set(p.keywordIds)
      const added = (yield* context.client.keywords(context.accountId, p.campaignId, p.adGroupId)).filter((k) => !created.has(k.keywordId))
      if (added.length > 0) {
        reasons.push(`ad group ${p.adGroupId} has ${plural(added.length, "keyword")} added since it was created (${
          listed(added.map((k) => `"${k.text}"`))
        }); deleting it removes them too`)
      }
      return reasons.length === 0 ? null : reasons.join("; ")
    })
})
