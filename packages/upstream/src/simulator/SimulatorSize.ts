/**
 * How big the generated org tree is. Sizes are data: "demo" (the embedded default, a few thousand
 * entities), "bench" (one account with 100,000 keywords), or any custom list of account plans.
 */

export interface AccountPlan {
  readonly name: string
  /** ISO 4217; JPY has no minor unit, every other currency here has cents. */
  readonly currency: string
  /** IANA time zone: the account's reporting day ("ORTZ"). */
  readonly timeZone: string
  readonly roleNames: ReadonlyArray<string>
  readonly countriesOrRegions: ReadonlyArray<string>
  readonly campaigns: number
  readonly adGroupsPerCampaign: number
  readonly keywordsPerAdGroup: number
  /** 0–1: how much keyword counts vary between ad groups (0 = exactly `keywordsPerAdGroup` each). */
  readonly keywordSpread?: number
  /** 0–1: share of campaigns bidding MAX_CONVERSIONS (the rest MANUAL_CPT). */
  readonly maxConversionsShare?: number
}

export interface SimulatorSize {
  readonly accounts: ReadonlyArray<AccountPlan>
}

export const ACCOUNT_MANAGER = "API Account Manager"
export const READ_ONLY = "API Read Only"

const readOnlyUk: AccountPlan = {
  name: "UK (read only)",
  currency: "GBP",
  timeZone: "Europe/London",
  roleNames: [READ_ONLY],
  countriesOrRegions: ["GB"],
  campaigns: 2,
  adGroupsPerCampaign: 2,
  keywordsPerAdGroup: 20,
  keywordSpread: 0.3,
  maxConversionsShare: 0.5
}

export const demoSize: SimulatorSize = {
  accounts: [
    {
      name: "US",
      currency: "USD",
      timeZone: "America/Los_Angeles",
      roleNames: [ACCOUNT_MANAGER],
      countriesOrRegions: ["US"],
      campaigns: 6,
      adGroupsPerCampaign: 5,
      keywordsPerAdGroup: 50,
      keywordSpread: 0.4,
      maxConversionsShare: 0.34
    },
    {
      name: "DACH",
      currency: "EUR",
      timeZone: "Europe/Berlin",
      roleNames: [ACCOUNT_MANAGER],
      countriesOrRegions: ["DE", "AT", "CH"],
      campaigns: 4,
      adGroupsPerCampaign: 4,
      keywordsPerAdGroup: 25,
      keywordSpread: 0.4,
      maxConversionsShare: 0.25
    },
    {
      name: "Japan",
      currency: "JPY",
      timeZone: "Asia/Tokyo",
      roleNames: [ACCOUNT_MANAGER],
      countriesOrRegions: ["JP"],
      campaigns: 2,
      adGroupsPerCampaign: 3,
      keywordsPerAdGroup: 15,
      keywordSpread: 0.3,
      maxConversionsShare: 0.5
    },
    readOnlyUk
  ]
}

export const benchSize: SimulatorSize = {
  accounts: [
    {
      name: "Bench US",
      currency: "USD",
      timeZone: "America/New_York",
      roleNames: [ACCOUNT_MANAGER],
      countriesOrRegions: ["US"],
      campaigns: 20,
      adGroupsPerCampaign: 50,
      keywordsPerAdGroup: 100,
      maxConversionsShare: 0.25
    },
    readOnlyUk
  ]
}

export type SimulatorSizeOption = "demo" | "bench" | SimulatorSize

export const resolveSize = (size: SimulatorSizeOption | undefined): SimulatorSize =>
  size === undefined || size === "demo" ? demoSize : size === "bench" ? benchSize : size

/** Roles that may write (matched loosely); anything else is read-only. */
export const isReadOnly = (roleNames: ReadonlyArray<string>): boolean =>
  !roleNames.some((role) => /admin|manager|read\s*&\s*write/i.test(role))
