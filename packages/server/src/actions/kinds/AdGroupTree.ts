/**
 * An ad group with its keywords and negatives, created as up to three recorded steps (ad group, keywords,
 * negatives): what create_ad_group and clone_ad_group share, and what a campaign composite can reuse with one
 * slot per ad group. Every step reads the upstream first and takes what an earlier, unrecorded run already
 * created: the ad group by name, keywords and negatives by text and match type.
 */
import { BidStrategyConflict, NotFound } from "@acs/domain/Errors"
import type { UpstreamCampaign, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { Drift, type Ids, type Step, type StepContext, StepRefused, type Touched } from "./Kind.ts"
import { duplicatesIn, keywordKey, plural, quoted } from "./KeywordSupport.ts"
import { money, rowWarnings, someRowWorked } from "./KindSupport.ts"

const MatchType = Schema.Literal("EXACT", "BROAD")

export const TreeKeyword = Schema.Struct({
  text: Schema.String,
  matchType: MatchType,
  /** null: the ad group's default bid applies. */
  bidMicros: Schema.NullOr(Schema.Int),
  status: Schema.Literal("ACTIVE", "PAUSED")
})
export type TreeKeyword = typeof TreeKeyword.Type

export const TreeNegative = Schema.Struct({ text: Schema.String, matchType: MatchType })
export type TreeNegative = typeof TreeNegative.Type

/** The ad group to create, as it will be upstream. */
export const AdGroupTree = Schema.Struct({
  name: Schema.String,
  defaultBidMicros: Schema.Int,
  cpaGoalMicros: Schema.NullOr(Schema.Int),
  searchMatch: Schema.Boolean,
  status: Schema.Literal("ENABLED", "PAUSED"),
  keywords: Schema.Array(TreeKeyword),
  negativeKeywords: Schema.Array(TreeNegative)
})
export type AdGroupTree = typeof AdGroupTree.Type

/** The platform's cap on rows per bulk call. */
const ROWS_PER_CALL = 1000

const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** Where the steps record their ids: `adGroupId`, or `adGroupId:<slot>` when one action creates several trees. */
export const treeIdKeys = (slot?: string) => {
  const key = (name: string) => (slot === undefined ? name : `${name}:${slot}`)
  return { adGroupId: key("adGroupId"), keywordIds: key("keywordIds"), negativeKeywordIds: key("negativeKeywordIds") }
}

export const idOf = (ids: Ids, key: string): string | undefined => {
  const value = ids[key]
  return typeof value === "string" ? value : undefined
}

export const idsOf = (ids: Ids, key: string): ReadonlyArray<string> => {
  const value = ids[key]
  return value === undefined ? [] : typeof value === "string" ? [value] : value
}

export interface TreePlacement {
  /** The campaign the ad group goes into: known at proposal, or created by an earlier step (from `ids`). */
  readonly campaignId: (ids: Ids) => string | undefined
  readonly slot?: string
}

// ---- Local validation, shared by the kinds that create trees ----

/** Every reason the tree cannot go into the campaign as asked (docs/contract.md 7 lists them all). */
export const treeProblems = (
  tree: {
    readonly name: string
    readonly keywords: ReadonlyArray<{ readonly text: string; readonly matchType: string }>
    readonly negativeKeywords: ReadonlyArray<{ readonly text: string; readonly matchType: string }>
  },
  campaign: UpstreamCampaign,
  nameTaken: boolean
): Array<string> => [
  ...(nameTaken ? [`campaign "${campaign.name}" already has an ad group named "${tree.name}"`] : []),
  ...duplicatesIn(tree.keywords).map((reason) => `keyword ${reason}`),
  ...duplicatesIn(tree.negativeKeywords).map((reason) => `negative keyword ${reason}`)
]

/** Keyword bids on a MAX_CONVERSIONS campaign: the platform sets its bids, so it refuses them (docs/contract.md 7). */
export const keywordBidsAllowed = (
  campaign: UpstreamCampaign,
  keywords: ReadonlyArray<{ readonly text: string; readonly matchType: string; readonly bidMicros: number | null }>
): Effect.Effect<void, BidStrategyConflict> => {
  const bid = keywords.filter((k) => k.bidMicros !== null)
  return campaign.bidStrategy === "MAX_CONVERSIONS" && bid.length > 0
    ? Effect.fail(new BidStrategyConflict({
      message: `campaign ${campaign.campaignId} bids with MAX_CONVERSIONS, so its keywords take no bid; ${
        plural(bid.length, "keyword")
      } of the request set bidMicros (${bid.slice(0, 5).map(quoted).join(", ")}${bid.length > 5 ? ", …" : ""})`
    }))
    : Effect.void
}

/** The tree in words for a summary: `with 3 keywords and 1 negative keyword (default bid 1.5 USD, …)`. */
export const treeDescription = (tree: AdGroupTree, currency: string): string =>
  `with ${plural(tree.keywords.length, "keyword")} and ${plural(tree.negativeKeywords.length, "negative keyword")} ` +
  `(${tree.status}, default bid ${money(tree.defaultBidMicros, currency)}, CPA goal ${money(tree.cpaGoalMicros, currency)}, ` +
  `Search Match ${tree.searchMatch ? "on" : "off"})`

// ---- Steps ----

const placed = (placement: TreePlacement, context: StepContext) => {
  const campaignId = placement.campaignId(context.ids)
  return campaignId === undefined
    ? Effect.fail(new StepRefused({ message: "the campaign of the ad group is not known: an earlier step recorded no campaign id" }))
    : Effect.succeed(campaignId)
}

const inAdGroup = (placement: TreePlacement, context: StepContext) =>
  Effect.gen(function*() {
    const campaignId = yield* placed(placement, context)
    const adGroupId = idOf(context.ids, treeIdKeys(placement.slot).adGroupId)
    if (adGroupId === undefined) {
      return yield* new StepRefused({ message: "the ad group is not known: the step that creates it recorded no id" })
    }
    return { campaignId, adGroupId }
  })

/** An upstream entity already gone is what an undo wants. */
const goneIsFine = <A>(effect: Effect.Effect<A, UpstreamFailure>, fallback: A) =>
  effect.pipe(Effect.catchTag("NotFound", (_: NotFound) => Effect.succeed(fallback)))

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** A live ad group of the campaign with the tree's name (the platform's names are unique per campaign). */
const namesake = (context: StepContext, campaignId: string, name: string) =>
  context.client.adGroups(context.accountId, campaignId).pipe(Effect.map((all) => all.find((a) => sameName(a.name, name))))

/** Drift of a create: the name acs is to use was taken upstream since proposal. */
export const treeDrift = (tree: AdGroupTree, campaignId: string) => (context: StepContext) =>
  namesake(context, campaignId, tree.name).pipe(Effect.map((there) =>
    there === undefined
      ? null
      : `campaign ${campaignId} got an ad group named "${there.name}" (${there.adGroupId}) outside acs since the proposal`
  ))

const createAdGroupStep = (tree: AdGroupTree, placement: TreePlacement): Step => {
  const keys = treeIdKeys(placement.slot)
  return {
    name: `create ad group "${tree.name}"`,
    apply: (context) =>
      Effect.gen(function*() {
        const campaignId = yield* placed(placement, context)
        const there = yield* namesake(context, campaignId, tree.name)
        if (there !== undefined) {
          // Same name and settings: this action's own ad group from a run whose outcome was not recorded.
          const ours = there.name === tree.name && there.defaultBidMicros === tree.defaultBidMicros &&
            there.cpaGoalMicros === tree.cpaGoalMicros && there.searchMatch === tree.searchMatch
          if (!ours) {
            return yield* new Drift({
              reason: `campaign ${campaignId} already has an ad group named "${there.name}" (${there.adGroupId}) that acs did not create`
            })
          }
          return { ids: { [keys.adGroupId]: there.adGroupId }, touched: { adGroups: [there] }, warnings: [] }
        }
        const created = yield* context.client.createAdGroup(context.accountId, campaignId, {
          name: tree.name,
          defaultBidMicros: tree.defaultBidMicros,
          cpaGoalMicros: tree.cpaGoalMicros,
          searchMatch: tree.searchMatch,
          status: tree.status
        })
        return { ids: { [keys.adGroupId]: created.adGroupId }, touched: { adGroups: [created] }, warnings: [] }
      }),
    undo: (context) =>
      Effect.gen(function*() {
        const campaignId = placement.campaignId(context.ids)
        const adGroupId = idOf(context.ids, keys.adGroupId)
        if (campaignId === undefined || adGroupId === undefined) return {}
        yield* goneIsFine(context.client.deleteAdGroup(context.accountId, campaignId, adGroupId), undefined)
        return { removedAdGroups: [adGroupId] } satisfies Touched
      })
  }
}

const createKeywordsStep = (keywords: ReadonlyArray<TreeKeyword>, name: string, placement: TreePlacement): Step => {
  const keys = treeIdKeys(placement.slot)
  return {
    name: `create the keywords of ad group "${name}"`,
    apply: (context) =>
      Effect.gen(function*() {
        const { adGroupId, campaignId } = yield* inAdGroup(placement, context)
        const existing = yield* context.client.keywords(context.accountId, campaignId, adGroupId)
        const byKey = new Map(existing.map((k) => [keywordKey(k.text, k.matchType), k]))
        // The ad group is this action's own, so keywords already in it come from an unrecorded earlier run.
        const made = keywords.flatMap((k) => byKey.get(keywordKey(k.text, k.matchType)) ?? [])
        const pending = keywords.filter((k) => !byKey.has(keywordKey(k.text, k.matchType)))
        const warnings: Array<string> = []
        for (const rows of chunksOf(pending, ROWS_PER_CALL)) {
          const result = yield* context.client.createKeywords(context.accountId, campaignId, adGroupId, rows)
          made.push(...result.succeeded.map((row) => row.value))
          warnings.push(...rowWarnings(result, (index) => `keyword ${rows[index] === undefined ? `row ${index}` : quoted(rows[index])}`))
        }
        yield* someRowWorked(made.length, warnings)
        return { ids: { [keys.keywordIds]: made.map((k) => k.keywordId) }, touched: { keywords: made }, warnings }
      }),
    undo: (context) =>
      Effect.gen(function*() {
        const campaignId = placement.campaignId(context.ids)
        const adGroupId = idOf(context.ids, keys.adGroupId)
        const keywordIds = idsOf(context.ids, keys.keywordIds)
        if (campaignId === undefined || adGroupId === undefined || keywordIds.length === 0) return {}
        for (const ids of chunksOf(keywordIds, ROWS_PER_CALL)) {
          yield* goneIsFine(context.client.deleteKeywords(context.accountId, campaignId, adGroupId, ids), undefined)
        }
        return { removedKeywords: keywordIds } satisfies Touched
      })
  }
}

const createNegativesStep = (negatives: ReadonlyArray<TreeNegative>, name: string, placement: TreePlacement): Step => {
  const keys = treeIdKeys(placement.slot)
  return {
    name: `create the negative keywords of ad group "${name}"`,
    apply: (context) =>
      Effect.gen(function*() {
        const { adGroupId, campaignId } = yield* inAdGroup(placement, context)
        const existing = (yield* context.client.negativeKeywords(context.accountId, campaignId)).filter((n) => n.adGroupId === adGroupId)
        const byKey = new Map(existing.map((n) => [keywordKey(n.text, n.matchType), n]))
        const made = negatives.flatMap((n) => byKey.get(keywordKey(n.text, n.matchType)) ?? [])
        const pending = negatives.filter((n) => !byKey.has(keywordKey(n.text, n.matchType)))
        const warnings: Array<string> = []
        for (const rows of chunksOf(pending, ROWS_PER_CALL)) {
          const result = yield* context.client.createNegativeKeywords(context.accountId, campaignId, adGroupId, rows)
          made.push(...result.succeeded.map((row) => row.value))
          warnings.push(
            ...rowWarnings(result, (index) => `negative keyword ${rows[index] === undefined ? `row ${index}` : quoted(rows[index])}`)
          )
        }
        yield* someRowWorked(made.length, warnings)
        return { ids: { [keys.negativeKeywordIds]: made.map((n) => n.negativeKeywordId) }, touched: { negativeKeywords: made }, warnings }
      }),
    undo: (context) =>
      Effect.gen(function*() {
        const campaignId = placement.campaignId(context.ids)
        const adGroupId = idOf(context.ids, keys.adGroupId)
        const negativeIds = idsOf(context.ids, keys.negativeKeywordIds)
        if (campaignId === undefined || adGroupId === undefined || negativeIds.length === 0) return {}
        for (const ids of chunksOf(negativeIds, ROWS_PER_CALL)) {
          yield* goneIsFine(context.client.deleteNegativeKeywords(context.accountId, campaignId, adGroupId, ids), undefined)
        }
        return { removedNegativeKeywords: negativeIds } satisfies Touched
      })
  }
}

/**
 * The steps that create the tree: the ad group, then its keywords, then its negatives (a step only when there is
 * something to create, so the list depends on the payload alone and recorded step numbers stay stable).
 */
export const adGroupTreeSteps = (tree: AdGroupTree, placement: TreePlacement): ReadonlyArray<Step> => [
  createAdGroupStep(tree, placement),
  ...(tree.keywords.length > 0 ? [createKeywordsStep(tree.keywords, tree.name, placement)] : []),
  ...(tree.negativeKeywords.length > 0 ? [createNegativesStep(tree.negativeKeywords, tree.name, placement)] : [])
]
