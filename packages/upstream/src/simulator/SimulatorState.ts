/**
 * The simulator's mutable state: the generated world, id indexes over it, the restatement counter and
 * the clock. Lookups are scoped the way the platform scopes them (a campaign belongs to an org, an ad
 * group to a campaign), so a wrong parent reads as "not found".
 */
import { ChangeHistory } from "./SimulatorChangeHistory.ts"
import { localNow, type LocalNow } from "./SimulatorCalendar.ts"
import { currencyProfile, minorUnitsFromUsCents } from "./SimulatorCatalog.ts"
import { AccountMetrics } from "./SimulatorMetrics.ts"
import type { SimAccount, SimAd, SimAdGroup, SimCampaign, SimKeyword, SimNegativeKeyword, SimWorld } from "./SimulatorModel.ts"
import { generateWorld } from "./SimulatorSeed.ts"
import { Scenarios } from "./SimulatorScenarios.ts"
import type { SimulatorSize } from "./SimulatorSize.ts"

export type SimEntity =
  | { readonly kind: "CAMPAIGN"; readonly entity: SimCampaign }
  | { readonly kind: "ADGROUP"; readonly entity: SimAdGroup }
  | { readonly kind: "KEYWORD"; readonly entity: SimKeyword }
  | { readonly kind: "NEGATIVE_KEYWORD"; readonly entity: SimNegativeKeyword }
  | { readonly kind: "AD"; readonly entity: SimAd }

export class SimulatorState {
  world: SimWorld
  restatement = 0
  /** How far the control API moved the simulated clock ahead of `clock` (ms). */
  advancedMs = 0
  /** Scenarios injected through the control API. */
  readonly scenarios = new Scenarios()
  /** Every write, by either API version or the "web UI" (see SimulatorChangeHistory). */
  readonly history = new ChangeHistory()
  /** Bumped by every request that may change the world: what cached report rows are keyed on. */
  version = 0
  private campaigns = new Map<number, SimCampaign>()
  private adGroups = new Map<number, SimAdGroup>()
  private keywords = new Map<number, SimKeyword>()
  private negatives = new Map<number, SimNegativeKeyword>()
  private ads = new Map<number, SimAd>()

  constructor(readonly seed: number, readonly size: SimulatorSize, readonly clock: () => number) {
    this.world = generateWorld(seed, size, clock())
    this.index()
  }

  /** Back to the seeded world (as of now), restatement 0, the clock unmoved and no scenarios. */
  reset(): void {
    this.version++
    this.advancedMs = 0
    this.world = generateWorld(this.seed, this.size, this.clock())
    this.restatement = 0
    this.scenarios.clear()
    this.history.clear()
    this.index()
  }

  private index(): void {
    this.campaigns = new Map()
    this.adGroups = new Map()
    this.keywords = new Map()
    this.negatives = new Map()
    this.ads = new Map()
    for (const account of this.world.accounts) {
      for (const campaign of account.campaigns) this.addCampaign(campaign)
    }
  }

  private addCampaign(campaign: SimCampaign): void {
    this.campaigns.set(campaign.id, campaign)
    for (const negative of campaign.negatives) this.negatives.set(negative.id, negative)
    for (const adGroup of campaign.adGroups) this.addAdGroup(adGroup)
  }

  private addAdGroup(adGroup: SimAdGroup): void {
    this.adGroups.set(adGroup.id, adGroup)
    for (const keyword of adGroup.keywords) this.keywords.set(keyword.id, keyword)
    for (const negative of adGroup.negatives) this.negatives.set(negative.id, negative)
    for (const ad of adGroup.ads) this.ads.set(ad.id, ad)
  }

  /** Any entity by its id (ids are unique across kinds), for the v1 flat routes and the change history. */
  entity(id: number): SimEntity | undefined {
    const campaign = this.campaigns.get(id)
    if (campaign !== undefined) return { kind: "CAMPAIGN", entity: campaign }
    const adGroup = this.adGroups.get(id)
    if (adGroup !== undefined) return { kind: "ADGROUP", entity: adGroup }
    const keyword = this.keywords.get(id)
    if (keyword !== undefined) return { kind: "KEYWORD", entity: keyword }
    const negative = this.negatives.get(id)
    if (negative !== undefined) return { kind: "NEGATIVE_KEYWORD", entity: negative }
    const ad = this.ads.get(id)
    if (ad !== undefined) return { kind: "AD", entity: ad }
    return undefined
  }

  /** The campaign an entity belongs to (itself for a campaign). */
  campaignOf(found: SimEntity): SimCampaign | undefined {
    return found.kind === "CAMPAIGN" ? found.entity : this.campaigns.get(found.entity.campaignId)
  }

  allocateId(): number {
    return this.world.nextId++
  }

  get accounts(): ReadonlyArray<SimAccount> {
    return this.world.accounts
  }

  account(orgId: number): SimAccount | undefined {
    return this.world.accounts.find((account) => account.orgId === orgId)
  }

  now(account: SimAccount): LocalNow {
    return localNow(account.timeZone, this.nowMs())
  }

  /** The simulated "now" in epoch ms: the clock plus what the control API advanced it by. */
  nowMs(): number {
    return this.clock() + this.advancedMs
  }

  metrics(account: SimAccount): AccountMetrics {
    const { day, hour } = this.now(account)
    return new AccountMetrics({
      seed: this.seed,
      today: day,
      todayHour: hour,
      restatement: this.restatement,
      minorUnitMicros: account.minorUnitMicros,
      typicalCptMinor: minorUnitsFromUsCents(currencyProfile(account.currency), 150),
      scenarios: (entityId) => this.scenarios.of(entityId)
    })
  }

  campaign(account: SimAccount, id: number): SimCampaign | undefined {
    const campaign = this.campaigns.get(id)
    return campaign?.orgId === account.orgId ? campaign : undefined
  }

  adGroup(campaign: SimCampaign, id: number): SimAdGroup | undefined {
    const adGroup = this.adGroups.get(id)
    return adGroup?.campaignId === campaign.id ? adGroup : undefined
  }

  keyword(adGroup: SimAdGroup, id: number): SimKeyword | undefined {
    const keyword = this.keywords.get(id)
    return keyword?.adGroupId === adGroup.id ? keyword : undefined
  }

  /** A negative of the campaign (adGroup null) or of one of its ad groups. */
  negative(campaign: SimCampaign, adGroup: SimAdGroup | null, id: number): SimNegativeKeyword | undefined {
    const negative = this.negatives.get(id)
    if (negative === undefined || negative.campaignId !== campaign.id) return undefined
    return negative.adGroupId === (adGroup?.id ?? null) ? negative : undefined
  }

  ad(adGroup: SimAdGroup, id: number): SimAd | undefined {
    const ad = this.ads.get(id)
    return ad?.adGroupId === adGroup.id ? ad : undefined
  }

  insertCampaign(account: SimAccount, campaign: SimCampaign): void {
    account.campaigns.push(campaign)
    this.addCampaign(campaign)
  }

  insertAdGroup(campaign: SimCampaign, adGroup: SimAdGroup): void {
    campaign.adGroups.push(adGroup)
    this.addAdGroup(adGroup)
  }

  insertKeyword(adGroup: SimAdGroup, keyword: SimKeyword): void {
    adGroup.keywords.push(keyword)
    this.keywords.set(keyword.id, keyword)
  }

  insertNegative(owner: SimCampaign | SimAdGroup, negative: SimNegativeKeyword): void {
    owner.negatives.push(negative)
    this.negatives.set(negative.id, negative)
  }

  insertAd(adGroup: SimAdGroup, ad: SimAd): void {
    adGroup.ads.push(ad)
    this.ads.set(ad.id, ad)
  }

  /** Live (not deleted) keyword counts, for the control summary and the bench check. */
  keywordCount(account: SimAccount): number {
    let count = 0
    for (const campaign of account.campaigns) {
      if (campaign.deleted) continue
      for (const adGroup of campaign.adGroups) {
        if (adGroup.deleted) continue
        for (const keyword of adGroup.keywords) if (!keyword.deleted) count++
      }
    }
    return count
  }
}
