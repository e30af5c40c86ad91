/**
 * The proposal kinds (docs/contract.md 2.1) as declarations, one per kind: the kind, its path under `/actions/`, the operation it
 * is on every surface, and its request body. REST endpoints, OpenAPI entries, RPC procedures and MCP tools
 * are generated from `proposalKinds`; the server's behaviour for each kind lives in `actions/kinds/`.
 */
import { Schema } from "effect"

/** `Id("campaign")`: an Apple Ads id, described as what it refers to. */
const IdText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))
const Id = (what: string) => IdText.annotations({ description: `Apple Ads ${what} id` })

/** An amount, described with its unit (the same words on every amount, so a model reads them once). */
const Micros = (what: string) =>
  Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(1_000_000_000_000)).annotations({
    description: `${what} in micros: 1,000,000 = 1 unit of the account's currency`
  })

const Reason = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)).annotations({
  description: "Why; shown to reviewers"
})

const Name = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(80)).annotations({ description: "Keyword text" })
const EntityStatus = Schema.Literal("ENABLED", "PAUSED").annotations({ description: "New status" })
const KeywordStatus = Schema.Literal("ACTIVE", "PAUSED").annotations({ description: "New status" })
const MatchType = Schema.Literal("EXACT", "BROAD").annotations({ description: "Match type" })
const BidStrategy = Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS").annotations({ description: "Bid strategy" })
const Countries = Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/))).pipe(Schema.minItems(1), Schema.maxItems(250))
  .annotations({ description: "ISO 3166-1 alpha-2 codes" })
const Ids = (what: string) =>
  Schema.Array(IdText).pipe(Schema.minItems(1), Schema.maxItems(1000)).annotations({ description: `Apple Ads ${what} ids` })

export const NewKeywordBody = Schema.Struct({
  text: Text,
  matchType: MatchType,
  bidMicros: Schema.optional(Schema.NullOr(Micros("Bid (null: the ad group's default)")))
}).annotations({ identifier: "NewKeyword" })

export const NewNegativeKeywordBody = Schema.Struct({ text: Text, matchType: MatchType })
  .annotations({ identifier: "NewNegativeKeyword" })

const AdGroupPlan = {
  name: Name.annotations({ description: "Ad group name" }),
  defaultBidMicros: Micros("Default bid"),
  cpaGoalMicros: Schema.optional(Schema.NullOr(Micros("CPA goal"))),
  searchMatch: Schema.Boolean.annotations({ description: "Search Match on" }),
  keywords: Schema.Array(NewKeywordBody).pipe(Schema.maxItems(1000)).annotations({ description: "Keywords to add" }),
  negativeKeywords: Schema.Array(NewNegativeKeywordBody).pipe(Schema.maxItems(1000)).annotations({ description: "Negative keywords to add" })
}

/**
 * Membership of a changeset (docs/contract.md 4.3): `changesetId` records the proposal as a member of that open
 * changeset, `dependsOn` names members that must apply first.
 */
const ChangesetId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(80)).annotations({ description: "Open changeset to join" })
const DependsOn = Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))).pipe(Schema.maxItems(100))
  .annotations({ description: "Members' actionIds to apply first" })

const body = <F extends Schema.Struct.Fields>(identifier: string, fields: F) =>
  Schema.Struct({ ...fields, reason: Reason, changesetId: Schema.optional(ChangesetId), dependsOn: Schema.optional(DependsOn) })
    .annotations({ identifier })

export interface KindDeclaration<Kind extends string, Operation extends string, Body extends Schema.Schema.AnyNoContext> {
  readonly kind: Kind
  /** The path segment after `/accounts/{projectId}/actions/`. */
  readonly path: string
  readonly operation: Operation
  readonly title: string
  readonly body: Body
}

const declare = <const Kind extends string, const Operation extends string, Body extends Schema.Schema.AnyNoContext>(
  declaration: KindDeclaration<Kind, Operation, Body>
) => declaration

export const budgetChange = declare({
  kind: "budget_change",
  path: "budget-change",
  operation: "proposeBudgetChange",
  title: "Change a campaign's daily budget",
  body: body("BudgetChangeRequest", { campaignId: Id("campaign"), newDailyBudgetMicros: Micros("New daily budget") })
})

export const campaignStatus = declare({
  kind: "campaign_status",
  path: "campaign-status",
  operation: "proposeCampaignStatus",
  title: "Enable or pause a campaign",
  body: body("CampaignStatusRequest", { campaignId: Id("campaign"), status: EntityStatus })
})

export const bidStrategyChange = declare({
  kind: "bid_strategy_change",
  path: "bid-strategy-change",
  operation: "proposeBidStrategyChange",
  title: "Switch a campaign's bid strategy",
  body: body("BidStrategyChangeRequest", {
    campaignId: Id("campaign"),
    bidStrategy: BidStrategy,
    targetCpaMicros: Schema.optional(Micros("Target CPA, for MAX_CONVERSIONS"))
  })
})

export const targetCpaChange = declare({
  kind: "target_cpa_change",
  path: "target-cpa-change",
  operation: "proposeTargetCpaChange",
  title: "Change a MAX_CONVERSIONS campaign's target CPA",
  body: body("TargetCpaChangeRequest", { campaignId: Id("campaign"), newTargetCpaMicros: Micros("New target CPA") })
})

export const createCampaign = declare({
  kind: "create_campaign",
  path: "create-campaign",
  operation: "proposeCreateCampaign",
  title: "Create a campaign with its ad groups, keywords and negatives",
  body: body("CreateCampaignRequest", {
    name: Name.annotations({ description: "Campaign name" }),
    adamId: IdText.annotations({ description: "App Store app id (adamId)" }),
    countriesOrRegions: Countries,
    dailyBudgetMicros: Micros("Daily budget"),
    bidStrategy: BidStrategy,
    targetCpaMicros: Schema.optional(Micros("Target CPA, for MAX_CONVERSIONS")),
    adGroups: Schema.Array(Schema.Struct(AdGroupPlan)).pipe(Schema.minItems(1), Schema.maxItems(20)).annotations({ description: "Its ad groups" })
  })
})

export const cloneCampaign = declare({
  kind: "clone_campaign",
  path: "clone-campaign",
  operation: "proposeCloneCampaign",
  title: "Copy a campaign with its ad groups, keywords and negatives",
  body: body("CloneCampaignRequest", {
    sourceCampaignId: Id("source campaign"),
    name: Name.annotations({ description: "The copy's name" }),
    countriesOrRegions: Schema.optional(Countries),
    dailyBudgetMicros: Schema.optional(Micros("The copy's daily budget; default the source's"))
  })
})

export const rename = declare({
  kind: "rename",
  path: "rename",
  operation: "proposeRename",
  title: "Rename a campaign or an ad group",
  body: body("RenameRequest", { entity: Schema.Literal("campaign", "adGroup").annotations({ description: "What `id` names" }),
    id: Id("campaign or ad group"),
    name: Name.annotations({ description: "New name" }) })
})

export const adGroupStatus = declare({
  kind: "ad_group_status",
  path: "ad-group-status",
  operation: "proposeAdGroupStatus",
  title: "Enable or pause an ad group",
  body: body("AdGroupStatusRequest", { adGroupId: Id("ad group"), status: EntityStatus })
})

export const cpaGoalChange = declare({
  kind: "cpa_goal_change",
  path: "cpa-goal-change",
  operation: "proposeCpaGoalChange",
  title: "Change an ad group's CPA goal",
  body: body("CpaGoalChangeRequest", { adGroupId: Id("ad group"), newCpaGoalMicros: Micros("New CPA goal") })
})

export const defaultBidChange = declare({
  kind: "default_bid_change",
  path: "default-bid-change",
  operation: "proposeDefaultBidChange",
  title: "Change an ad group's default bid",
  body: body("DefaultBidChangeRequest", { adGroupId: Id("ad group"), newDefaultBidMicros: Micros("New default bid") })
})

export const searchMatchChange = declare({
  kind: "search_match_change",
  path: "search-match",
  operation: "proposeSearchMatchChange",
  title: "Turn an ad group's Search Match on or off",
  body: body("SearchMatchChangeRequest", { adGroupId: Id("ad group"), enabled: Schema.Boolean.annotations({ description: "Search Match on" }) })
})

export const createAdGroup = declare({
  kind: "create_ad_group",
  path: "create-ad-group",
  operation: "proposeCreateAdGroup",
  title: "Create an ad group with its keywords and negatives",
  body: body("CreateAdGroupRequest", { campaignId: Id("campaign"), ...AdGroupPlan })
})

export const cloneAdGroup = declare({
  kind: "clone_ad_group",
  path: "clone-ad-group",
  operation: "proposeCloneAdGroup",
  title: "Copy an ad group with its keywords and negatives",
  body: body("CloneAdGroupRequest", {
    sourceAdGroupId: Id("source ad group"),
    targetCampaignId: Schema.optional(Id("target campaign")).annotations({ description: "Default: the source's campaign" }),
    name: Name.annotations({ description: "The copy's name" })
  })
})

export const addKeywords = declare({
  kind: "add_keywords",
  path: "add-keywords",
  operation: "proposeAddKeywords",
  title: "Add targeting keywords to an ad group",
  body: body("AddKeywordsRequest", {
    adGroupId: Id("ad group"),
    keywords: Schema.Array(NewKeywordBody).pipe(Schema.minItems(1), Schema.maxItems(1000)).annotations({ description: "Keywords to add" })
  })
})

export const keywordBidChange = declare({
  kind: "keyword_bid_change",
  path: "keyword-bid",
  operation: "proposeKeywordBidChange",
  title: "Set the bid of keywords",
  body: body("KeywordBidChangeRequest", { keywordIds: Ids("keyword"), newBidMicros: Micros("New bid") })
})

export const keywordStatus = declare({
  kind: "keyword_status",
  path: "keyword-status",
  operation: "proposeKeywordStatus",
  title: "Activate or pause keywords",
  body: body("KeywordStatusRequest", { keywordIds: Ids("keyword"), status: KeywordStatus })
})

export const changeMatchType = declare({
  kind: "change_match_type",
  path: "change-match-type",
  operation: "proposeChangeMatchType",
  title: "Change a keyword's match type (replaces the keyword)",
  body: body("ChangeMatchTypeRequest", { keywordId: Id("keyword"), matchType: MatchType })
})

export const removeKeywords = declare({
  kind: "remove_keywords",
  path: "remove-keywords",
  operation: "proposeRemoveKeywords",
  title: "Remove keywords (cannot be reverted)",
  body: body("RemoveKeywordsRequest", { keywordIds: Ids("keyword") })
})

export const addNegativeKeywords = declare({
  kind: "add_negative_keywords",
  path: "add-negative-keywords",
  operation: "proposeAddNegativeKeywords",
  title: "Add negative keywords to a campaign or an ad group",
  body: body("AddNegativeKeywordsRequest", {
    campaignId: Id("campaign"),
    adGroupId: Schema.optional(Id("ad group")),
    keywords: Schema.Array(NewNegativeKeywordBody).pipe(Schema.minItems(1), Schema.maxItems(1000))
      .annotations({ description: "Negatives to add; in the ad group if given, else the campaign" })
  })
})

export const removeNegativeKeywords = declare({
  kind: "remove_negative_keywords",
  path: "remove-negative-keywords",
  operation: "proposeRemoveNegativeKeywords",
  title: "Remove negative keywords",
  body: body("RemoveNegativeKeywordsRequest", { negativeKeywordIds: Ids("negative keyword") })
})

export const harvestSearchTerms = declare({
  kind: "harvest_search_terms",
  path: "harvest-search-terms",
  operation: "proposeHarvestSearchTerms",
  title: "Harvest search terms: EXACT keywords, negated where they came from",
  body: body("HarvestSearchTermsRequest", {
    terms: Schema.Array(Schema.Struct({
      text: Text,
      sourceAdGroupId: Id("source ad group"),
      targetAdGroupId: Id("target ad group"),
      bidMicros: Schema.optional(Schema.NullOr(Micros("Bid (null: the ad group's default)")))
    })).pipe(Schema.minItems(1), Schema.maxItems(1000)).annotations({ description: "Search terms to harvest" }),
    negateAtSource: Schema.optional(Schema.Boolean).annotations({ description: "Default true" })
  })
})

export const adStatus = declare({
  kind: "ad_status",
  path: "ad-status",
  operation: "proposeAdStatus",
  title: "Enable or pause an ad",
  body: body("AdStatusRequest", { adId: Id("ad"), status: EntityStatus })
})

const RecommendationId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
  .annotations({ description: "Apple's recommendation id" })

export const applyRecommendation = declare({
  kind: "apply_recommendation",
  path: "apply-recommendation",
  operation: "proposeApplyRecommendation",
  title: "Apply one of Apple's recommendations",
  body: body("ApplyRecommendationRequest", {
    recommendationId: RecommendationId,
    appliedDailyBudgetMicros: Schema.optional(Micros("Daily cap instead of Apple's")),
    appliedTargetCpaMicros: Schema.optional(Micros("Target CPA instead of Apple's"))
  })
})

export const dismissRecommendation = declare({
  kind: "dismiss_recommendation",
  path: "dismiss-recommendation",
  operation: "proposeDismissRecommendation",
  title: "Dismiss one of Apple's recommendations",
  body: body("DismissRecommendationRequest", { recommendationId: RecommendationId })
})

/** Every proposal kind, in the contract's order (docs/contract.md 2.1). */
export const proposalKinds = [
  budgetChange,
  campaignStatus,
  bidStrategyChange,
  targetCpaChange,
  createCampaign,
  cloneCampaign,
  rename,
  adGroupStatus,
  cpaGoalChange,
  defaultBidChange,
  searchMatchChange,
  createAdGroup,
  cloneAdGroup,
  addKeywords,
  keywordBidChange,
  keywordStatus,
  changeMatchType,
  removeKeywords,
  addNegativeKeywords,
  removeNegativeKeywords,
  harvestSearchTerms,
  adStatus,
  applyRecommendation,
  dismissRecommendation
] as const

export type ProposalKind = (typeof proposalKinds)[number]
export type ProposalKindName = ProposalKind["kind"]
export type ProposalOperationName = ProposalKind["operation"]

/** Kinds that exist only as the compensating change of a revert (deleting what a create or clone made). */
export const compensationKinds = ["delete_campaign", "delete_ad_group", "unharvest_search_terms"] as const
export type CompensationKindName = (typeof compensationKinds)[number]
export type KindName = ProposalKindName | CompensationKindName

/** Kinds only the ledger holds: a change made outside acs, read from the platform's change history. */
export const ledgerOnlyKinds = ["external_change"] as const
export type LedgerOnlyKindName = (typeof ledgerOnlyKinds)[number]
/** Every kind a ledger row can have. */
export type ActionKindName = KindName | LedgerOnlyKindName

/** A proposal kind by name (`budget_change`, …), as a changeset's `members` call names it. */
export const ProposalKindLiteral = Schema.Literal(...proposalKinds.map((k) => k.kind))

export const ActionKind = Schema.Literal(...proposalKinds.map((k) => k.kind), ...compensationKinds, ...ledgerOnlyKinds)
