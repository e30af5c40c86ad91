/**
 * The platform's change history (v1 `change-history`), kept by the simulator for every write through
 * either API version or the test-only "web UI", in the shapes of Apple's `AuditSummary` and
 * `ChangeDetails`: one record per entity changed per transaction, with the fields that changed (old and
 * new values, v1 field names); the query groups records by (userType, modifiedBy, transactionId,
 * eventType, entityType) with a `count`, and each entity's change is fetched by its `detailId`
 * (`<EntityType>.<entityId>.<transactionId>`). `userType` tells acs's API client (`CUSTOMER_API` +
 * its client id) from a person in the web UI (`CUSTOMER`).
 */
export type UserType = "CUSTOMER" | "CUSTOMER_API" | "APPLE_SUPPORT"

export interface Actor {
  readonly userType: UserType
  /** The API client id, or the web UI user. */
  readonly modifiedBy: string
}

/** Apple's audit entity type names (as its examples spell Campaign and AdGroup). */
export type AuditEntityType = "Campaign" | "AdGroup" | "Keyword" | "NegativeKeyword" | "Ad"

export interface ChangeRecord {
  readonly adAccountId: number
  readonly eventTime: string
  readonly actor: Actor
  readonly transactionId: string
  readonly eventType: "CREATE" | "UPDATE" | "DELETE"
  readonly entityType: AuditEntityType
  readonly entityId: number
  readonly campaignId: number | null
  readonly adGroupId: number | null
  /** The entity (v1 encoding) as the event left it: `metas[].meta` with `metadata: "snapshot"`. */
  readonly snapshot: Readonly<Record<string, unknown>>
  readonly oldValues: Readonly<Record<string, unknown>>
  readonly newValues: Readonly<Record<string, unknown>>
}

export interface ChangeSummary {
  readonly transactionId: string
  readonly eventType: string
  readonly eventTime: string
  readonly entityType: AuditEntityType
  readonly count: number
  readonly userType: UserType
  readonly modifiedBy: string
  readonly records: ReadonlyArray<ChangeRecord>
}

export const detailIdOf = (record: ChangeRecord): string => `${record.entityType}.${record.entityId}.${record.transactionId}`

/**
 * True only when `a` and `b` surely have the same JSON text: identical, or arrays / plain objects (no
 * `toJSON`) with the same keys in the same order and such values. False means "not proven".
 */
const surelySame = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!surelySame(a[i], b[i])) return false
    return true
  }
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype || "toJSON" in a || "toJSON" in b) {
    return false
  }
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  if (aKeys.length !== bKeys.length) return false
  for (let i = 0; i < aKeys.length; i++) {
    const key = aKeys[i]!
    if (key !== bKeys[i] || !surelySame((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false
  }
  return true
}

/** Equal as JSON; an unchanged field is told without writing both out. */
const same = (a: unknown, b: unknown): boolean => surelySame(a, b) || JSON.stringify(a) === JSON.stringify(b)

/** The fields that differ between two v1 encodings of an entity (all of them on create). */
export const changedFields = (
  before: Readonly<Record<string, unknown>> | null,
  after: Readonly<Record<string, unknown>>
): { readonly oldValues: Record<string, unknown>; readonly newValues: Record<string, unknown> } => {
  const oldValues: Record<string, unknown> = {}
  const newValues: Record<string, unknown> = {}
  for (const key of new Set([...Object.keys(before ?? {}), ...Object.keys(after)])) {
    const was = before?.[key]
    const is = after[key]
    if (before !== null && same(was, is)) continue
    if (before !== null) oldValues[key] = was ?? null
    newValues[key] = is ?? null
  }
  return { oldValues, newValues }
}

export class ChangeHistory {
  private records: Array<ChangeRecord> = []
  private transactions = 0

  clear(): void {
    this.records = []
  }

  private lastEventMs = 0

  /**
   * A new transaction id and its event time: the simulated clock, but strictly after the previous
   * transaction (a fixed test clock would otherwise give every change the same instant, and "changes
   * after the last mark" could not tell them apart).
   */
  nextTransaction(clockMs: number): { readonly transactionId: string; readonly eventTime: string } {
    this.transactions++
    this.lastEventMs = Math.max(clockMs, this.lastEventMs + 1)
    return { transactionId: String(900_000_000 + this.transactions), eventTime: new Date(this.lastEventMs).toISOString() }
  }

  add(record: ChangeRecord): void {
    this.records.push(record)
  }

  /** Summary rows of an account strictly after `after` and before `before` (ISO instants), oldest first. */
  summaries(adAccountId: number, after: string | null, before: string | null): Array<ChangeSummary> {
    const groups = new Map<string, ChangeSummary>()
    for (const record of this.records) {
      if (record.adAccountId !== adAccountId) continue
      if (after !== null && Date.parse(record.eventTime) <= Date.parse(after)) continue
      if (before !== null && Date.parse(record.eventTime) >= Date.parse(before)) continue
      const key = [record.actor.userType, record.actor.modifiedBy, record.transactionId, record.eventType, record.entityType].join("|")
      const known = groups.get(key)
      groups.set(key, known === undefined
        ? {
          transactionId: record.transactionId,
          eventType: record.eventType,
          eventTime: record.eventTime,
          entityType: record.entityType,
          count: 1,
          userType: record.actor.userType,
          modifiedBy: record.actor.modifiedBy,
          records: [record]
        }
        : { ...known, count: known.count + 1, records: [...known.records, record] })
    }
    return [...groups.values()]
  }

  detail(adAccountId: number, detailId: string): ChangeRecord | undefined {
    return this.records.find((record) => record.adAccountId === adAccountId && detailIdOf(record) === detailId)
  }
}
