/**
 * Builds the org tree for a seed and a size: a parent org, its accounts, apps, campaigns of both
 * bidding strategies, ad groups, keywords, negatives and ads. Deterministic: the same seed, size and
 * start day give the same world, ids included.
 */
import { localNow } from "./SimulatorCalendar.ts"
import {
  AD_GROUP_THEMES,
  CAMPAIGN_PURPOSES,
  type CurrencyProfile,
  currencyProfile,
  KEYWORD_PREFIXES,
  KEYWORD_SUFFIXES,
  minorUnitsFromUsCents,
  NEGATIVE_WORDS,
  PARENT_ORG_NAMES,
  THEMES
} from "./SimulatorCatalog.ts"
import { hash32, SeededRandom } from "./SimulatorHash.ts"
import type {
  MatchType,
  SimAccount,
  SimAd,
  SimAdGroup,
  SimApp,
  SimCampaign,
  SimKeyword,
  SimNegativeKeyword,
  SimWorld
} from "./SimulatorModel.ts"
import type { AccountPlan, SimulatorSize } from "./SimulatorSize.ts"

/** Seeded entities existed long before the metrics window. */
export const SEEDED_CREATED_DAY = 0

const KEYWORD_SPACE = KEYWORD_PREFIXES.length * KEYWORD_SUFFIXES.length * 10
// Coprime with KEYWORD_SPACE (1,440 = 2^5·3^2·5), so stepping by it visits every combination once.
const KEYWORD_STRIDE = 1001

/** The text of the n-th keyword of an ad group whose enumeration starts at `offset`. */
export const keywordText = (theme: number, offset: number, n: number): string => {
  const cores = THEMES[theme % THEMES.length]!.cores
  const index = (offset + n * KEYWORD_STRIDE) % KEYWORD_SPACE
  const prefix = KEYWORD_PREFIXES[index % KEYWORD_PREFIXES.length]!
  const rest = Math.floor(index / KEYWORD_PREFIXES.length)
  const core = cores[rest % cores.length]!
  const suffix = KEYWORD_SUFFIXES[Math.floor(rest / cores.length) % KEYWORD_SUFFIXES.length]!
  const round = Math.floor(n / KEYWORD_SPACE)
  const words = [prefix, core, suffix, round > 0 ? String(round + 1) : ""].filter((word) => word !== "")
  return words.join(" ")
}

class WorldBuilder {
  private readonly random: SeededRandom
  nextId: number

  constructor(private readonly seed: number, private readonly nowMs: number) {
    this.random = new SeededRandom(seed, 1)
    // Ids look like the platform's (nine digits) and differ between seeds.
    this.nextId = 100_000_000 + (hash32(seed, 7) % 400_000) * 1_000
  }

  id(): number {
    return this.nextId++
  }

  build(size: SimulatorSize): SimWorld {
    const random = this.random
    const parentOrgId = 10_000_000 + (hash32(this.seed, 11) % 80_000_000)
    const parentOrgName = random.pick(PARENT_ORG_NAMES)
    const apps: Array<SimApp> = []
    const themeOffset = random.int(0, THEMES.length - 1)
    const accounts = size.accounts.map((plan, index) => {
      const orgId = parentOrgId + 1 + index
      const ownedApps = Math.min(3, Math.max(1, plan.campaigns))
      const accountApps = Array.from({ length: ownedApps }, (_, n) => {
        const theme = (themeOffset + index * 3 + n) % THEMES.length
        const app: SimApp = {
          adamId: 1_000_000_000 + (hash32(this.seed, 13, orgId, n) % 900_000_000),
          appName: THEMES[theme]!.appName,
          developerName: parentOrgName,
          countryOrRegionCodes: [...plan.countriesOrRegions],
          theme,
          ownerOrgId: orgId
        }
        return app
      })
      apps.push(...accountApps)
      return this.account(plan, orgId, `${parentOrgName} ${plan.name}`, accountApps)
    })
    // Competitors' apps: found by `/search/apps` but owned by nobody here.
    THEMES.forEach((theme, themeIndex) =>
      theme.competitors.forEach((name, n) =>
        apps.push({
          adamId: 1_000_000_000 + (hash32(this.seed, 17, themeIndex, n) % 900_000_000),
          appName: name,
          developerName: `${name} Inc.`,
          countryOrRegionCodes: ["US", "GB", "DE", "JP"],
          theme: themeIndex,
          ownerOrgId: null
        })
      )
    )
    return {
      parentOrgId,
      parentOrgName,
      userId: 20_000_000 + (hash32(this.seed, 19) % 70_000_000),
      accounts,
      apps,
      nextId: this.nextId
    }
  }

  private account(plan: AccountPlan, orgId: number, orgName: string, apps: ReadonlyArray<SimApp>): SimAccount {
    const currency = currencyProfile(plan.currency)
    const today = localNow(plan.timeZone, this.nowMs).day
    const share = plan.maxConversionsShare ?? 0
    const usedNames = new Set<string>()
    const campaigns = Array.from({ length: plan.campaigns }, (_, index) => {
      const maxConversions = Math.floor((index + 1) * share) > Math.floor(index * share)
      const app = apps[index % apps.length]!
      const purpose = CAMPAIGN_PURPOSES[index % CAMPAIGN_PURPOSES.length]!
      let name = `${app.appName} - ${purpose} - ${plan.countriesOrRegions.join("/")}`
      for (let n = 2; usedNames.has(name); n++) name = `${app.appName} - ${purpose} ${n} - ${plan.countriesOrRegions.join("/")}`
      usedNames.add(name)
      return this.campaign(plan, orgId, currency, today, { name, app, purpose, maxConversions, index })
    })
    return {
      orgId,
      orgName,
      currency: plan.currency,
      timeZone: plan.timeZone,
      paymentModel: "PAYG",
      roleNames: [...plan.roleNames],
      minorUnitMicros: currency.minorUnitMicros,
      campaigns
    }
  }

  private campaign(
    plan: AccountPlan,
    orgId: number,
    currency: CurrencyProfile,
    today: number,
    shape: {
      readonly name: string
      readonly app: SimApp
      readonly purpose: string
      readonly maxConversions: boolean
      readonly index: number
    }
  ): SimCampaign {
    const random = this.random
    const micros = (usCents: number) => minorUnitsFromUsCents(currency, usCents) * currency.minorUnitMicros
    const id = this.id()
    // The first campaign always serves, so every account has spend; later ones are paused now and then.
    const paused = shape.index > 0 && id % 7 === 3
    const campaign: SimCampaign = {
      id,
      orgId,
      name: shape.name,
      adamId: shape.app.adamId,
      countriesOrRegions: [...plan.countriesOrRegions],
      dailyBudgetMicros: micros(random.int(5, 200) * 1_000),
      status: paused ? "PAUSED" : "ENABLED",
      biddingStrategy: shape.maxConversions ? "MAX_CONVERSIONS" : "MANUAL_CPT",
      targetCpaMicros: shape.maxConversions ? micros(random.int(200, 1_200)) : null,
      deleted: false,
      createdDay: SEEDED_CREATED_DAY,
      offPeriods: paused ? [{ from: today - random.int(3, 60), until: null }] : null,
      adGroups: [],
      negatives: []
    }
    const negativeCount = random.int(3, 8)
    const negativeStart = random.int(0, NEGATIVE_WORDS.length - 1)
    for (let n = 0; n < negativeCount; n++) {
      campaign.negatives.push(this.negative(campaign.id, null, NEGATIVE_WORDS[(negativeStart + n) % NEGATIVE_WORDS.length]!))
    }
    for (let index = 0; index < plan.adGroupsPerCampaign; index++) {
      campaign.adGroups.push(this.adGroup(plan, campaign, shape.app.theme, shape.purpose, index, currency, today))
    }
    return campaign
  }

  private adGroup(
    plan: AccountPlan,
    campaign: SimCampaign,
    theme: number,
    purpose: string,
    index: number,
    currency: CurrencyProfile,
    today: number
  ): SimAdGroup {
    const random = this.random
    const micros = (usCents: number) => minorUnitsFromUsCents(currency, usCents) * currency.minorUnitMicros
    const manual = campaign.biddingStrategy === "MANUAL_CPT"
    const searchMatch = purpose === "Discovery" ? index === 0 || random.chance(0.4) : random.chance(0.15)
    const paused = random.chance(0.08)
    const defaultBidMicros = micros(random.int(60, 400))
    const round = Math.floor(index / AD_GROUP_THEMES.length)
    const groupTheme = AD_GROUP_THEMES[index % AD_GROUP_THEMES.length]!
    const adGroup: SimAdGroup = {
      id: this.id(),
      campaignId: campaign.id,
      orgId: campaign.orgId,
      name: `${purpose} - ${groupTheme}${round > 0 ? ` ${round + 1}` : ""} - ${index % 2 === 0 ? "Exact" : "Broad"}`,
      status: paused ? "PAUSED" : "ENABLED",
      defaultBidMicros,
      cpaGoalMicros: manual && random.chance(0.3) ? micros(random.int(150, 900)) : null,
      searchMatch,
      deleted: false,
      createdDay: SEEDED_CREATED_DAY,
      offPeriods: paused ? [{ from: today - random.int(1, 80), until: null }] : null,
      searchMatchServing: {
        createdDay: SEEDED_CREATED_DAY,
        offPeriods: searchMatch ? null : [{ from: SEEDED_CREATED_DAY, until: null }]
      },
      theme,
      keywords: [],
      negatives: [],
      ads: []
    }
    const spread = plan.keywordSpread ?? 0
    const count = Math.max(1, Math.round(plan.keywordsPerAdGroup * (1 + spread * (2 * random.next() - 1))))
    const offset = random.int(0, KEYWORD_SPACE - 1)
    const exactGroup = index % 2 === 0
    for (let n = 0; n < count; n++) {
      adGroup.keywords.push(this.keyword(adGroup, keywordText(theme, offset, n), exactGroup, manual, currency, today))
    }
    const negatives = random.int(0, 4)
    const otherCores = THEMES[(theme + 1) % THEMES.length]!.cores
    for (let n = 0; n < negatives; n++) adGroup.negatives.push(this.negative(campaign.id, adGroup.id, otherCores[n]!))
    adGroup.ads.push(this.ad(adGroup, "Default product page", "DEFAULT_PRODUCT_PAGE", null))
    if (random.chance(0.4)) {
      const pausedSince = random.chance(0.15) ? today - random.int(1, 60) : null
      adGroup.ads.push(this.ad(adGroup, `CPP - ${THEMES[theme]!.cores[index % 10]}`, "CUSTOM_PRODUCT_PAGE", pausedSince))
    }
    return adGroup
  }

  private keyword(
    adGroup: SimAdGroup,
    text: string,
    exactGroup: boolean,
    manual: boolean,
    currency: CurrencyProfile,
    today: number
  ): SimKeyword {
    // Inlined draws rather than SeededRandom: 100,000 of these must build in well under a second.
    const id = this.id()
    const h = hash32(this.seed, 23, id)
    const matchType: MatchType = ((h & 0xff) < 218) === exactGroup ? "EXACT" : "BROAD"
    const paused = ((h >>> 8) & 0xff) < 30
    const ownBid = manual && ((h >>> 16) & 0xff) < 180
    const bidFactor = 0.5 + ((h >>> 24) & 0xff) / 170
    const unit = currency.minorUnitMicros
    return {
      id,
      adGroupId: adGroup.id,
      campaignId: adGroup.campaignId,
      text,
      matchType,
      status: paused ? "PAUSED" : "ACTIVE",
      bidMicros: ownBid ? Math.max(unit, Math.round((adGroup.defaultBidMicros * bidFactor) / unit) * unit) : null,
      deleted: false,
      createdDay: SEEDED_CREATED_DAY,
      offPeriods: paused ? [{ from: today - 1 - (h % 100), until: null }] : null
    }
  }

  private negative(campaignId: number, adGroupId: number | null, text: string): SimNegativeKeyword {
    return {
      id: this.id(),
      campaignId,
      adGroupId,
      text,
      matchType: this.random.chance(0.6) ? "EXACT" : "BROAD",
      status: "ACTIVE",
      deleted: false
    }
  }

  private ad(adGroup: SimAdGroup, name: string, creativeType: string, pausedSince: number | null): SimAd {
    return {
      id: this.id(),
      campaignId: adGroup.campaignId,
      adGroupId: adGroup.id,
      creativeId: this.id(),
      name,
      creativeType,
      status: pausedSince === null ? "ENABLED" : "PAUSED",
      deleted: false,
      createdDay: SEEDED_CREATED_DAY,
      offPeriods: pausedSince === null ? null : [{ from: pausedSince, until: null }]
    }
  }
}

/** The world for a seed, with paused entities' history relative to the day of `nowMs`. */
export const generateWorld = (seed: number, size: SimulatorSize, nowMs: number): SimWorld =>
  new WorldBuilder(seed, nowMs).build(size)
