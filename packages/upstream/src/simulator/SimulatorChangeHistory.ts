/**
 * The platform's change history (v1 `change-history`), kept by the simulator for every write through
 * either API version or the test-only "web UI": one record per entity changed, with the fields that
 * changed (old and new values, v1 field names), grouped into summary rows by transaction, event type
 * and entity type. `userType` tells acs's API client (`CUSTOMER_API` + its client id) from a person in
 * the web UI (`CUSTOMER`).
 */
export type UserType = "CUSTOMER" | "CUSTOMER_API" | "APPLE_SUPPORT"

export interface Actor {
  readonly userType: UserType
  /** The API client id, or the web UI user's name. */
  readonly modifier: string
}

export interface ChangeRecord {
  readonly adAccountId: number
  readonly eventTime: string
  readonly actor: Actor
  readonly transactionId: string
  readonly eventType: "CREATE" | "UPDATE" | "DELETE"
  readonly entityType: string
  readonly entityId: number
  readonly campaignId: number | null
  readonly adGroupId: number | null
  readonly oldValues: Readonly<Record<string, unknown>>
  readonly newValues: Readonly<Record<string, unknown>>
}

export interface ChangeSummary {
  readonly detailId: string
  readonly adAccountId: number
  readonly eventTime: string
  readonly userType: UserType
  readonly modifier: string
  readonly transactionId: string
  readonly eventType: string
  readonly entityType: string
  readonly count: number
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** The fields that differ between two v1 encodings of an entity (all of them on create and delete). */
export const changedFields = (
  before: Readonly<Record<string, unknown>> | null,
  after: Readonly<Record<string, unknown>> | null
): { readonly oldValues: Record<string, unknown>; readonly newValues: Record<string, unknown> } => {
  const oldValues: Record<string, unknown> = {}
  const newValues: Record<string, unknown> = {}
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])
  for (const key of keys) {
    const was = before?.[key]
    const is = after?.[key]
    if (before !== null && after !== null && same(was, is)) continue
    if (before !== null) oldValues[key] = was ?? null
    if (after !== null) newValues[key] = is ?? null
  }
  return { oldValues, newValues }
}

export class ChangeHistory {
  private records: Array<ChangeRecord> = []
  private transactions = 0

  clear(): void {
    this.records = []
  }

  nextTransaction(): string {
    this.transactions++
    return `tx-${this.transactions}`
  }

  add(record: ChangeRecord): void {
    this.records.push(record)
  }

  /** Summary rows of an account (grouped by transaction, event and entity type), oldest first. */
  summaries(adAccountId: number, from: string | null, to: string | null): Array<ChangeSummary> {
    const groups = new Map<string, ChangeSummary>()
    for (const record of this.records) {
      if (record.adAccountId !== adAccountId) continue
      if (from !== null && record.eventTime < from) continue
      if (to !== null && record.eventTime > to) continue
      const detailId = `${record.transactionId}.${record.eventType}.${record.entityType}`
      const known = groups.get(detailId)
      groups.set(detailId, known === undefined
        ? {
          detailId,
          adAccountId,
          eventTime: record.eventTime,
          userType: record.actor.userType,
          modifier: record.actor.modifier,
          transactionId: record.transactionId,
          eventType: record.eventType,
          entityType: record.entityType,
          count: 1
        }
        : { ...known, count: known.count + 1 })
    }
    return [...groups.values()]
  }

  /** The records behind one summary row. */
  details(adAccountId: number, detailId: string): Array<ChangeRecord> {
    return this.records.filter((record) =>
      record.adAccountId === adAccountId && `${record.transactionId}.${record.eventType}.${record.entityType}` === detailId
    )
  }
}
