/**
 * The simulator's in-memory entities (mutable: writes change them in place). Ids are integers, as on
 * the wire. Each servable entity carries its serving history, so reports for past days stay stable
 * after a pause or delete while later days go quiet.
 *
 * Times of changes (`until`, `from`, `createdDay`) are moments: a day number plus the hour of the change
 * / 24 (SimulatorCalendar.momentOf), so a change applies from its hour on; seeded history is whole days.
 * Every `day` or `today` argument below is such a moment.
 */

/** A span of days during which an entity did not serve: [from, until), until null = still off. */
export interface OffPeriod {
  from: number
  until: number | null
}

/**
 * A value an entity had before a change: it held on the days before `until` (the day of the change).
 * Entities keep only these (null until the first change), so reports for past days use the value of
 * that day while the entity's own field is the value from the last change on.
 */
export interface PastValue<T> {
  readonly until: number
  readonly value: T
}

/** The value on `day`: the first past value that still held then, else the current one. */
export const valueOn = <T>(current: T, past: ReadonlyArray<PastValue<T>> | undefined, day: number): T => {
  if (past === undefined) return current
  for (const entry of past) if (day < entry.until) return entry.value
  return current
}

/** The value the entity started with (its reference for bid elasticity). */
export const firstValue = <T>(current: T, past: ReadonlyArray<PastValue<T>> | undefined): T =>
  past === undefined || past.length === 0 ? current : past[0]!.value

/** Keeps `previous` as the value before the moment `today`; a second change in one hour keeps the first. */
export const recordChange = <T>(past: Array<PastValue<T>> | undefined, previous: T, next: T, today: number): Array<PastValue<T>> | undefined => {
  if (previous === next) return past
  const list = past ?? []
  const last = list[list.length - 1]
  if (last === undefined || last.until < today) list.push({ until: today, value: previous })
  return list
}

export interface Serving {
  /** First day with metrics. Seeded entities existed before the data window. */
  readonly createdDay: number
  /** null for the common case of never paused (keeps 100,000 keywords cheap). */
  offPeriods: Array<OffPeriod> | null
}

export interface SimApp {
  readonly adamId: number
  readonly appName: string
  readonly developerName: string
  readonly countryOrRegionCodes: ReadonlyArray<string>
  /** Index into the theme catalogue: the words its keywords and search terms are made of. */
  readonly theme: number
  /** Owned by an account of this org tree (the others are what `/search/apps` finds besides). */
  readonly ownerOrgId: number | null
}

export interface SimAccount {
  readonly orgId: number
  readonly orgName: string
  readonly currency: string
  readonly timeZone: string
  readonly paymentModel: string
  roleNames: Array<string>
  /** Micros per smallest currency unit: 10,000 (cents) or 1,000,000 (JPY). */
  readonly minorUnitMicros: number
  readonly campaigns: Array<SimCampaign>
}

export type EntityStatus = "ENABLED" | "PAUSED"
export type KeywordStatus = "ACTIVE" | "PAUSED"
export type MatchType = "EXACT" | "BROAD"
export type BiddingStrategy = "MANUAL_CPT" | "MAX_CONVERSIONS"

export interface SimCampaign extends Serving {
  readonly id: number
  readonly orgId: number
  name: string
  readonly adamId: number
  countriesOrRegions: Array<string>
  dailyBudgetMicros: number
  /** Budgets before changes (see PastValue); absent while never changed. */
  pastBudgets?: Array<PastValue<number>>
  status: EntityStatus
  biddingStrategy: BiddingStrategy
  targetCpaMicros: number | null
  deleted: boolean
  readonly adGroups: Array<SimAdGroup>
  readonly negatives: Array<SimNegativeKeyword>
}

export interface SimAdGroup extends Serving {
  readonly id: number
  readonly campaignId: number
  readonly orgId: number
  name: string
  status: EntityStatus
  defaultBidMicros: number
  pastDefaultBids?: Array<PastValue<number>>
  cpaGoalMicros: number | null
  searchMatch: boolean
  deleted: boolean
  /** Search Match serves like a keyword of its own; this is its history (off while opted out). */
  readonly searchMatchServing: Serving
  /** Words the Search Match terms are made of. */
  readonly theme: number
  /** Every keyword ever created here, deleted ones included (their history stays in reports). */
  readonly keywords: Array<SimKeyword>
  readonly negatives: Array<SimNegativeKeyword>
  readonly ads: Array<SimAd>
}

export interface SimKeyword extends Serving {
  readonly id: number
  readonly adGroupId: number
  readonly campaignId: number
  readonly text: string
  readonly matchType: MatchType
  status: KeywordStatus
  /** null: the ad group's default bid applies. */
  bidMicros: number | null
  pastBids?: Array<PastValue<number | null>>
  deleted: boolean
}

export interface SimNegativeKeyword {
  readonly id: number
  readonly campaignId: number
  readonly adGroupId: number | null
  readonly text: string
  readonly matchType: MatchType
  status: KeywordStatus
  deleted: boolean
}

export interface SimAd extends Serving {
  readonly id: number
  readonly campaignId: number
  readonly adGroupId: number
  readonly creativeId: number
  name: string
  readonly creativeType: string
  status: EntityStatus
  deleted: boolean
}

/** The whole generated world: one parent org and its accounts. */
export interface SimWorld {
  readonly parentOrgId: number
  readonly parentOrgName: string
  readonly userId: number
  readonly accounts: Array<SimAccount>
  readonly apps: ReadonlyArray<SimApp>
  /** The next id to hand out; ids are unique across all entity kinds. */
  nextId: number
}

export const servesOn = (serving: Serving, day: number): boolean => {
  if (day < serving.createdDay) return false
  const periods = serving.offPeriods
  if (periods === null) return true
  for (const period of periods) {
    if (day >= period.from && (period.until === null || day < period.until)) return false
  }
  return true
}

/** Stop serving from `today` on (a pause or delete). Idempotent. */
export const stopServing = (serving: Serving, today: number): void => {
  const periods = serving.offPeriods ?? []
  const last = periods[periods.length - 1]
  if (last !== undefined && last.until === null) return
  periods.push({ from: today, until: null })
  serving.offPeriods = periods
}

/** A status write also moves the serving history, so reports go quiet from today on (or resume). */
export const setStatus = <S extends string>(entity: Serving & { status: S }, status: S, paused: S, today: number): void => {
  if (entity.status === status) return
  entity.status = status
  if (status === paused) stopServing(entity, today)
  else resumeServing(entity, today)
}

/** Serve again from `today` on. A pause and resume within one hour leaves no gap. */
export const resumeServing = (serving: Serving, today: number): void => {
  const periods = serving.offPeriods
  const last = periods?.[periods.length - 1]
  if (periods === null || last === undefined || last.until !== null) return
  if (last.from >= today) periods.pop()
  else last.until = today
  if (periods.length === 0) serving.offPeriods = null
}
