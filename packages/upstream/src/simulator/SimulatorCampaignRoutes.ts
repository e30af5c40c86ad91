/** Campaigns, ad groups and ads: list, find, get, create, partial update, delete. */
import { WireAd, WireAdGroup, WireCampaign, WireSelector } from "../Wire.ts"
import { momentOf } from "./SimulatorCalendar.ts"
import { decodeInput, failure, invalid, notFound, ok, pageFromQuery, pageOf } from "./SimulatorHttp.ts"
import { AdCreate, AdGroupCreate, AdGroupUpdate, AdUpdate, CampaignCreate, CampaignUpdate } from "./SimulatorInputs.ts"
import { adGroupAt, campaignAt, unwrap } from "./SimulatorLookup.ts"
import {
  type EntityStatus,
  recordChange,
  resumeServing,
  type Serving,
  setStatus,
  type SimAd,
  type SimAdGroup,
  type SimCampaign,
  stopServing
} from "./SimulatorModel.ts"
import { idAt, type OrgRequest, readRoute, type Route, writeRoute } from "./SimulatorRouter.ts"
import { runSelector } from "./SimulatorSelector.ts"
import { adGroupToWire, adToWire, campaignToWire, microsFromRequest } from "./SimulatorWire.ts"

const CAMPAIGN_FIELDS = new Set(Object.keys(WireCampaign.fields))
const AD_GROUP_FIELDS = new Set(Object.keys(WireAdGroup.fields))
const AD_FIELDS = new Set(Object.keys(WireAd.fields))

/** The moment of a write (see momentOf): changes apply from its hour on. */
const today = (request: OrgRequest): number => momentOf(request.state.now(request.account))

const uniqueName = (name: string, siblings: ReadonlyArray<{ readonly name: string; readonly deleted: boolean; readonly id: number }>, self: number | null) => {
  if (siblings.some((sibling) => !sibling.deleted && sibling.id !== self && sibling.name === name)) {
    throw failure(400, "DUPLICATE_NAME", `the name "${name}" is already in use`, "name")
  }
}

const initialServing = (status: string, paused: string, day: number): Serving => ({
  createdDay: day,
  offPeriods: status === paused ? [{ from: day, until: null }] : null
})

const listCampaigns = (request: OrgRequest) => {
  const live = request.account.campaigns.filter((campaign) => !campaign.deleted)
  const { items, pagination } = pageOf(live, pageFromQuery(request.query))
  return ok(items.map((campaign) => campaignToWire(request.account, campaign)), pagination)
}

const createCampaign = (request: OrgRequest) => {
  const { account, state } = request
  const body = decodeInput(CampaignCreate, request.body)
  const app = state.world.apps.find((candidate) => candidate.adamId === body.adamId)
  if (app === undefined || app.ownerOrgId !== account.orgId) throw invalid("adamId is not an app of this org", "adamId")
  uniqueName(body.name, account.campaigns, null)
  const strategy = body.biddingStrategy ?? "MANUAL_CPT"
  const budget = microsFromRequest(body.dailyBudgetAmount, account, "dailyBudgetAmount")
  if (budget === 0) throw invalid("dailyBudgetAmount must be greater than zero", "dailyBudgetAmount")
  const targetCpa = body.targetCpa === undefined || body.targetCpa === null ? null : microsFromRequest(body.targetCpa, account, "targetCpa")
  if (strategy === "MAX_CONVERSIONS" && (targetCpa === null || targetCpa === 0)) {
    throw invalid("MAX_CONVERSIONS campaigns need a targetCpa", "targetCpa")
  }
  const status = body.status ?? "ENABLED"
  const campaign: SimCampaign = {
    id: state.allocateId(),
    orgId: account.orgId,
    name: body.name,
    adamId: body.adamId,
    countriesOrRegions: [...body.countriesOrRegions],
    dailyBudgetMicros: budget,
    status,
    biddingStrategy: strategy,
    targetCpaMicros: targetCpa,
    deleted: false,
    ...initialServing(status, "PAUSED", today(request)),
    adGroups: [],
    negatives: []
  }
  state.insertCampaign(account, campaign)
  return ok(campaignToWire(account, campaign))
}

const updateCampaign = (request: OrgRequest) => {
  const { account } = request
  const campaign = campaignAt(request, true)
  const change = decodeInput(CampaignUpdate, unwrap(request.body, "campaign"), "campaign")
  // Everything is checked before anything changes: a refused update leaves the campaign as it was.
  if (change.name !== undefined) uniqueName(change.name, account.campaigns, campaign.id)
  const budget = change.dailyBudgetAmount === undefined ? campaign.dailyBudgetMicros : microsFromRequest(change.dailyBudgetAmount, account, "campaign.dailyBudgetAmount")
  if (budget === 0) throw invalid("dailyBudgetAmount must be greater than zero", "campaign.dailyBudgetAmount")
  const strategy = change.biddingStrategy ?? campaign.biddingStrategy
  const targetCpa = change.targetCpa === undefined
    ? campaign.targetCpaMicros
    : change.targetCpa === null ? null : microsFromRequest(change.targetCpa, account, "campaign.targetCpa")
  if (strategy === "MAX_CONVERSIONS" && (targetCpa === null || targetCpa === 0)) {
    throw invalid("MAX_CONVERSIONS campaigns need a targetCpa", "campaign.targetCpa")
  }
  if (change.name !== undefined) campaign.name = change.name
  if (change.countriesOrRegions !== undefined) campaign.countriesOrRegions = [...change.countriesOrRegions]
  const pastBudgets = recordChange(campaign.pastBudgets, campaign.dailyBudgetMicros, budget, today(request))
  if (pastBudgets !== undefined) campaign.pastBudgets = pastBudgets
  campaign.dailyBudgetMicros = budget
  campaign.biddingStrategy = strategy
  campaign.targetCpaMicros = targetCpa
  if (change.status !== undefined) setStatus<EntityStatus>(campaign, change.status, "PAUSED", today(request))
  return ok(campaignToWire(account, campaign))
}

const deleteCampaign = (request: OrgRequest) => {
  const campaign = campaignAt(request, true)
  campaign.deleted = true
  stopServing(campaign, today(request))
  return ok(null)
}

const findIn = (request: OrgRequest, items: ReadonlyArray<Readonly<Record<string, unknown>>>, fields: ReadonlySet<string>) => {
  const selector = decodeInput(WireSelector, request.body, "selector")
  const { items: found, pagination } = runSelector(items, selector, fields)
  return ok(found, pagination)
}

const createAdGroup = (request: OrgRequest) => {
  const { account, state } = request
  const campaign = campaignAt(request, true)
  const body = decodeInput(AdGroupCreate, request.body)
  uniqueName(body.name, campaign.adGroups, null)
  const defaultBid = microsFromRequest(body.defaultBidAmount, account, "defaultBidAmount")
  if (defaultBid === 0) throw invalid("defaultBidAmount must be greater than zero", "defaultBidAmount")
  const cpaGoal = body.cpaGoal === undefined || body.cpaGoal === null ? null : microsFromRequest(body.cpaGoal, account, "cpaGoal")
  const status = body.status ?? "ENABLED"
  const day = today(request)
  const searchMatch = body.automatedKeywordsOptIn ?? false
  const adGroup: SimAdGroup = {
    id: state.allocateId(),
    campaignId: campaign.id,
    orgId: account.orgId,
    name: body.name,
    status,
    defaultBidMicros: defaultBid,
    cpaGoalMicros: cpaGoal,
    searchMatch,
    deleted: false,
    ...initialServing(status, "PAUSED", day),
    searchMatchServing: { createdDay: day, offPeriods: searchMatch ? null : [{ from: day, until: null }] },
    theme: state.world.apps.find((app) => app.adamId === campaign.adamId)?.theme ?? 0,
    keywords: [],
    negatives: [],
    ads: []
  }
  state.insertAdGroup(campaign, adGroup)
  return ok(adGroupToWire(account, adGroup))
}

const updateAdGroup = (request: OrgRequest) => {
  const { account } = request
  const { campaign, adGroup } = adGroupAt(request, true)
  const change = decodeInput(AdGroupUpdate, unwrap(request.body, "adGroup"))
  if (change.name !== undefined) uniqueName(change.name, campaign.adGroups, adGroup.id)
  const defaultBid = change.defaultBidAmount === undefined ? adGroup.defaultBidMicros : microsFromRequest(change.defaultBidAmount, account, "defaultBidAmount")
  if (defaultBid === 0) throw invalid("defaultBidAmount must be greater than zero", "defaultBidAmount")
  const cpaGoal = change.cpaGoal === undefined
    ? adGroup.cpaGoalMicros
    : change.cpaGoal === null ? null : microsFromRequest(change.cpaGoal, account, "cpaGoal")
  const day = today(request)
  if (change.name !== undefined) adGroup.name = change.name
  const pastDefaultBids = recordChange(adGroup.pastDefaultBids, adGroup.defaultBidMicros, defaultBid, day)
  if (pastDefaultBids !== undefined) adGroup.pastDefaultBids = pastDefaultBids
  adGroup.defaultBidMicros = defaultBid
  adGroup.cpaGoalMicros = cpaGoal
  if (change.automatedKeywordsOptIn !== undefined && change.automatedKeywordsOptIn !== adGroup.searchMatch) {
    adGroup.searchMatch = change.automatedKeywordsOptIn
    if (adGroup.searchMatch) resumeServing(adGroup.searchMatchServing, day)
    else stopServing(adGroup.searchMatchServing, day)
  }
  if (change.status !== undefined) setStatus<EntityStatus>(adGroup, change.status, "PAUSED", day)
  return ok(adGroupToWire(account, adGroup))
}

const deleteAdGroup = (request: OrgRequest) => {
  const { adGroup } = adGroupAt(request, true)
  adGroup.deleted = true
  stopServing(adGroup, today(request))
  return ok(null)
}

const adAt = (request: OrgRequest, live: boolean): SimAd => {
  const { adGroup } = adGroupAt(request, true)
  const ad = request.state.ad(adGroup, idAt(request, 2))
  if (ad === undefined || (live && ad.deleted)) throw notFound("Ad")
  return ad
}

const createAd = (request: OrgRequest) => {
  const { adGroup } = adGroupAt(request, true)
  const body = decodeInput(AdCreate, request.body)
  const status = body.status ?? "ENABLED"
  const ad: SimAd = {
    id: request.state.allocateId(),
    campaignId: adGroup.campaignId,
    adGroupId: adGroup.id,
    creativeId: body.creativeId,
    name: body.name,
    creativeType: body.creativeType ?? "CUSTOM_PRODUCT_PAGE",
    status,
    deleted: false,
    ...initialServing(status, "PAUSED", today(request))
  }
  request.state.insertAd(adGroup, ad)
  return ok(adToWire(ad))
}

const updateAd = (request: OrgRequest) => {
  const ad = adAt(request, true)
  const change = decodeInput(AdUpdate, unwrap(request.body, "ad"))
  if (change.name !== undefined) ad.name = change.name
  if (change.status !== undefined) setStatus<EntityStatus>(ad, change.status, "PAUSED", today(request))
  return ok(adToWire(ad))
}

const deleteAd = (request: OrgRequest) => {
  const ad = adAt(request, true)
  ad.deleted = true
  stopServing(ad, today(request))
  return ok(null)
}

export const campaignRoutes: ReadonlyArray<Route> = [
  readRoute("GET", "/campaigns", listCampaigns),
  writeRoute("POST", "/campaigns", createCampaign),
  readRoute("POST", "/campaigns/find", (request) =>
    findIn(request, request.account.campaigns.map((campaign) => campaignToWire(request.account, campaign)), CAMPAIGN_FIELDS)),
  readRoute("GET", "/campaigns/:id", (request) => ok(campaignToWire(request.account, campaignAt(request, false)))),
  writeRoute("PUT", "/campaigns/:id", updateCampaign),
  writeRoute("DELETE", "/campaigns/:id", deleteCampaign),

  readRoute("GET", "/campaigns/:id/adgroups", (request) => {
    const campaign = campaignAt(request, true)
    const { items, pagination } = pageOf(campaign.adGroups.filter((adGroup) => !adGroup.deleted), pageFromQuery(request.query))
    return ok(items.map((adGroup) => adGroupToWire(request.account, adGroup)), pagination)
  }),
  writeRoute("POST", "/campaigns/:id/adgroups", createAdGroup),
  readRoute("POST", "/campaigns/:id/adgroups/find", (request) => {
    const campaign = campaignAt(request, true)
    return findIn(request, campaign.adGroups.map((adGroup) => adGroupToWire(request.account, adGroup)), AD_GROUP_FIELDS)
  }),
  readRoute("GET", "/campaigns/:id/adgroups/:id", (request) => ok(adGroupToWire(request.account, adGroupAt(request, false).adGroup))),
  writeRoute("PUT", "/campaigns/:id/adgroups/:id", updateAdGroup),
  writeRoute("DELETE", "/campaigns/:id/adgroups/:id", deleteAdGroup),

  readRoute("GET", "/campaigns/:id/adgroups/:id/ads", (request) => {
    const { adGroup } = adGroupAt(request, true)
    const { items, pagination } = pageOf(adGroup.ads.filter((ad) => !ad.deleted), pageFromQuery(request.query))
    return ok(items.map(adToWire), pagination)
  }),
  writeRoute("POST", "/campaigns/:id/adgroups/:id/ads", createAd),
  readRoute("POST", "/campaigns/:id/adgroups/:id/ads/find", (request) => {
    const { adGroup } = adGroupAt(request, true)
    return findIn(request, adGroup.ads.map(adToWire), AD_FIELDS)
  }),
  readRoute("GET", "/campaigns/:id/adgroups/:id/ads/:id", (request) => ok(adToWire(adAt(request, false)))),
  writeRoute("PUT", "/campaigns/:id/adgroups/:id/ads/:id", updateAd),
  writeRoute("DELETE", "/campaigns/:id/adgroups/:id/ads/:id", deleteAd)
]
