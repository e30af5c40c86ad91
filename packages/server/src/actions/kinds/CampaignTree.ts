/**
 * What create_campaign and clone_campaign share: the campaign tree they build (the campaign, its negatives, its ad
 * groups with their keywords and negatives), its local validation, and the recorded steps that create it. The ad
 * groups are built with AdGroupTree's steps, one slot per ad group (ids `adGroupId:<i>`). Each step reads the
 * upstream first and reconciles by name (campaign, ad group) or by text + match type (keywords, negatives), so a
 * step repeated after a crash finds what it already created instead of creating it twice.
 */
import { BidStrategyConflict } from "@acs/domain/Errors"
import type { UpstreamCampaign, UpstreamClient, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { Drift, type Ids, type Inverse, type Step, type StepContext, type Touched } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { AdGroupTree, adGroupTreeSteps, idOf, TreeNegative } from "./AdGroupTree.ts"
import { duplicatesIn, keywordKey, listed, plural, quoted } from "./KeywordSupport.ts"
import { money, requireNone, rowWarnings, someRowWorked } from "./KindSupport.ts"

export const CampaignTree = Schema.Struct({
  name: Schema.String,
  adamId: Schema.String,
  countriesOrRegions: Schema.Array(Schema.String),
  dailyBudgetMicros: Schema.Int,
  bidStrategy: Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS"),
  targetCpaMicros: Schema.NullOr(Schema.Int),
  status: Schema.Literal("ENABLED", "PAUSED"),
  /** Campaign-level negatives (a clone copies them; a create has none). */
  negativeKeywords: Schema.Array(TreeNegative),
  adGroups: Schema.Array(AdGroupTree)
})
export type CampaignTree = typeof CampaignTree.Type

/** The platform's cap on rows per bulk call. */
const BULK_ROWS = 1000

const count = (tree: CampaignTree) => ({
  adGroups: tree.adGroups.length,
  keywords: tree.adGroups.reduce((n, a) => n + a.keywords.length, 0),
  negatives: tree.negativeKeywords.length + tree.adGroups.reduce((n, a) => n + a.negativeKeywords.length, 0)
})

/** "2 ad groups, 12 keywords and 3 negative keywords" */
export const treeContents = (tree: CampaignTree): string => {
  const n = count(tree)
  return `${plural(n.adGroups, "ad group")}, ${plural(n.keywords, "keyword")} and ${plural(n.negatives, "negative keyword")}`
}

/** "MANUAL_CPT, 50 USD a day, US, CA" */
export const treeSettings = (tree: CampaignTree, currency: string): string =>
  `${tree.bidStrategy}${tree.targetCpaMicros === null ? "" : ` (target CPA ${money(tree.targetCpaMicros, currency)})`}, ${
    money(tree.dailyBudgetMicros, currency)
  } a day, ${tree.countriesOrRegions.join(", ")}`

/** Keyword bids the upstream refuses on a MAX_CONVERSIONS campaign (422 bid_strategy_conflict). */
export const refuseBidsOnMaxConversions = (tree: CampaignTree): Effect.Effect<void, BidStrategyConflict> => {
  if (tree.bidStrategy !== "MAX_CONVERSIONS") return Effect.void
  const bidding = tree.adGroups.flatMap((a) =>
    a.keywords.filter((k) => k.bidMicros !== null).map((k) => `${quoted(k)} in ad group "${a.name}"`)
  )
  return bidding.length === 0 ? Effect.void : Effect.fail(
    new BidStrategyConflict({
      message: `a MAX_CONVERSIONS campaign takes no keyword bids; ${plural(bidding.length, "keyword")} set bidMicros: ${
        listed(bidding)
      }`
    })
  )
}

/** Every reason the tree does not fit the account (docs/contract.md 7: all of them at once). */
export const treeReasons = (tree: CampaignTree, view: WarehouseView) =>
  Effect.gen(function*() {
    const reasons: Array<string> = []
    const named = yield* view.campaignNamed(tree.name)
    if (named !== undefined) reasons.push(`campaign ${named.campaignId} is already named "${named.name}"`)
    const names = new Map<string, number>()
    for (const a of tree.adGroups) names.set(a.name.toLowerCase(), (names.get(a.name.toLowerCase()) ?? 0) + 1)
    for (const [name, times] of names) if (times > 1) reasons.push(`the ad group name "${name}" is used ${times} times`)
    for (const a of tree.adGroups) {
      reasons.push(...duplicatesIn(a.keywords).map((r) => `keyword ${r} for ad group "${a.name}"`))
      reasons.push(...duplicatesIn(a.negativeKeywords).map((r) => `negative keyword ${r} for ad group "${a.name}"`))
    }
    reasons.push(...duplicatesIn(tree.negativeKeywords).map((r) => `campaign negative keyword ${r}`))
    return reasons
  })

/** The campaign as the tree would create it: same app, bid strategy and countries (names aside). */
const sameSetup = (campaign: UpstreamCampaign, tree: CampaignTree) =>
  campaign.adamId === tree.adamId && campaign.bidStrategy === tree.bidStrategy &&
  [...campaign.countriesOrRegions].sort().join() === [...tree.countriesOrRegions].sort().join()

/**
 * The name check again at apply. A namesake with the tree's own setup may be this action's campaign from an
 * interrupted run that a sync has since brought in: step 1 takes that one over by name, so only a namesake with
 * another setup is refused here (failing then would strand the half-built campaign, as a failed recheck rolls
 * nothing back).
 */
export const recheckTree = (tree: CampaignTree, view: WarehouseView) =>
  Effect.flatMap(view.campaignNamed(tree.name), (named) =>
    requireNone(
      named !== undefined && !sameSetup(named, tree) ? [`campaign ${named.campaignId} is already named "${named.name}"`] : []
    ))

/** The id the campaign step recorded; later steps and undos read it from the ids. */
const campaignIdIn = (ids: Ids) => idOf(ids, "campaignId")

/** Deletes a campaign unless it is already gone (a repeated delete, or a rollback after a delete). */
export const deleteCampaignIfLive = (client: UpstreamClient, accountId: string, campaignId: string) =>
  Effect.gen(function*() {
    const current = yield* client.campaign(accountId, campaignId).pipe(
      Effect.catchTag("NotFound", () => Effect.succeed(undefined))
    )
    if (current !== undefined && !current.deleted) yield* client.deleteCampaign(accountId, campaignId)
    return { removedCampaigns: [campaignId] } satisfies Touched
  })

const liveNamed = (client: UpstreamClient, accountId: string, name: string) =>
  client.findCampaigns(accountId, [{ field: "name", operator: "EQUALS", values: [name] }]).pipe(
    Effect.map((campaigns) => campaigns.find((c) => !c.deleted && c.name === name))
  )

const createCampaignStep = (tree: CampaignTree): Step => ({
  name: `create campaign "${tree.name}"`,
  apply: (c) =>
    Effect.gen(function*() {
      const existing = yield* liveNamed(c.client, c.accountId, tree.name)
      if (existing !== undefined) {
        // The same name and setup: this step's own campaign from an attempt whose outcome was not recorded.
        if (sameSetup(existing, tree)) return { ids: { campaignId: existing.campaignId }, touched: { campaigns: [existing] }, warnings: [] }
        return yield* new Drift({
          reason: `campaign ${existing.campaignId} named "${tree.name}" was created outside acs (app ${existing.adamId}, ${
            existing.bidStrategy
          }, ${existing.countriesOrRegions.join(", ")}); acs will not build into it`
        })
      }
      const created = yield* c.client.createCampaign(c.accountId, {
        name: tree.name,
        adamId: tree.adamId,
        countriesOrRegions: tree.countriesOrRegions,
        dailyBudgetMicros: tree.dailyBudgetMicros,
        bidStrategy: tree.bidStrategy,
        targetCpaMicros: tree.targetCpaMicros,
        status: tree.status
      })
      return { ids: { campaignId: created.campaignId }, touched: { campaigns: [created] }, warnings: [] }
    }),
  undo: (c) => {
    const campaignId = campaignIdIn(c.ids)
    return campaignId === undefined ? Effect.succeed({}) : deleteCampaignIfLive(c.client, c.accountId, campaignId)
  }
})

// No undo: rolling the campaign back deletes its negatives with it.
const campaignNegativesStep = (negatives: ReadonlyArray<TreeNegative>): Step => ({
  name: "create the campaign's negative keywords",
  apply: (c) =>
    Effect.gen(function*() {
      const campaignId = campaignIdIn(c.ids)
      if (campaignId === undefined) return yield* Effect.dieMessage("the campaign step recorded no campaignId")
      const existing = (yield* c.client.negativeKeywords(c.accountId, campaignId)).filter((n) => n.adGroupId === null)
      const byKey = new Map(existing.map((n) => [keywordKey(n.text, n.matchType), n]))
      // The campaign is this action's own, so negatives already in it come from an unrecorded earlier run.
      const made = negatives.flatMap((n) => byKey.get(keywordKey(n.text, n.matchType)) ?? [])
      const pending = negatives.filter((n) => !byKey.has(keywordKey(n.text, n.matchType)))
      const warnings: Array<string> = []
      for (let from = 0; from < pending.length; from += BULK_ROWS) {
        const rows = pending.slice(from, from + BULK_ROWS)
        const result = yield* c.client.createNegativeKeywords(c.accountId, campaignId, null, rows)
        made.push(...result.succeeded.map((row) => row.value))
        warnings.push(...rowWarnings(result, (i) => `campaign negative keyword ${rows[i] === undefined ? `row ${i}` : quoted(rows[i])}`))
      }
      yield* someRowWorked(made.length, warnings)
      return { ids: {}, touched: { negativeKeywords: made }, warnings }
    })
})

/** The whole tree: the campaign (id under `campaignId`), its negatives, then each ad group in its slot `<i>`. */
export const campaignTreeSteps = (tree: CampaignTree): ReadonlyArray<Step> => [
  createCampaignStep(tree),
  ...(tree.negativeKeywords.length > 0 ? [campaignNegativesStep(tree.negativeKeywords)] : []),
  ...tree.adGroups.flatMap((plan, index) => adGroupTreeSteps(plan, { campaignId: campaignIdIn, slot: String(index) }))
]

/** Before the apply there is no campaign of that name; one there now was made outside acs. */
export const treeDrift = (tree: CampaignTree, c: StepContext): Effect.Effect<string | null, UpstreamFailure> =>
  liveNamed(c.client, c.accountId, tree.name).pipe(Effect.map((existing) =>
    existing === undefined ? null : `campaign ${existing.campaignId} named "${tree.name}" now exists upstream`
  ))

/** The compensation of a create or clone: delete the campaign it made (its ad groups and keywords go with it). */
export const deleteCreatedCampaign = (tree: CampaignTree, ids: Ids): Inverse => {
  const campaignId = campaignIdIn(ids)
  // An applied create always recorded the campaign's id; without one there is nothing a revert could delete.
  if (campaignId === undefined) throw new Error("the applied action recorded no campaignId")
  return {
    kind: "delete_campaign",
    payload: { campaignId, campaignName: tree.name },
    summary: `Revert: delete campaign "${tree.name}" (${campaignId}) with everything this action created in it`
  }
}
