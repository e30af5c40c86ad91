/**
 * Which scheduled syncs start now, as one pure rule (docs/decisions/warehouse-and-reads.md "The sync queue: one freshness target, orgs in turns, two bounds"): an
 * account is due when its copy is older than its freshness target; due accounts start most overdue first, taken
 * round-robin across orgs (the org whose last sync started longest ago goes first, and an org served goes to the
 * back), at most `instance` running on this instance and `perOrg` running in an org anywhere, never on a credential
 * the platform rate-limited until a time still ahead, and not again within a short wait after a failed sync. The
 * same rule says, for every account, whether it is fresh, due, running or waiting, and why it waits.
 */

export interface QueuedAccount {
  readonly projectId: string
  readonly orgId: string
  /** The upstream credential its syncs call with (Connections.ts `credentialKeyOf`). */
  readonly credential: string
  /** When its copy was last fresh (its last successful sync); null: never synced. */
  readonly lastFreshAt: number | null
  /** When it was imported: an account never synced is due from then. */
  readonly createdAt: number
  /** How old its copy may grow before it is due again. */
  readonly freshnessTargetMs: number
  /** When its latest sync failed, if that is its latest outcome. */
  readonly failedAt: number | null
  /** A sync of it runs now, on any instance. */
  readonly running: boolean
  /** When its latest sync started (null: never); an org's turn is its latest start. */
  readonly lastStartedAt: number | null
}

export interface QueueBounds {
  /** Syncs running at once on this instance. */
  readonly instance: number
  /** Syncs running at once in one org, across instances. */
  readonly perOrg: number
}

export interface QueueInput {
  readonly now: number
  readonly accounts: ReadonlyArray<QueuedAccount>
  /** Syncs running on this instance now, started by hand included. */
  readonly runningHere: number
  /** Per credential, the time its rate limit resets (RateLimit-Reset, Retry-After), when it is limited. */
  readonly limitedUntil: ReadonlyMap<string, number>
  readonly bounds: QueueBounds
  /** How long an account whose sync failed waits before the next try. */
  readonly retryAfterFailureMs: number
}

export type QueueState = "fresh" | "due" | "running" | "waiting"
export type WaitReason = "rate_limited" | "org_at_bound" | "instance_at_bound" | "after_failure"

export interface QueueEntry {
  readonly projectId: string
  readonly orgId: string
  readonly credential: string
  /** `due`: it starts at the next pass; `waiting`: it is due but `reason` holds it. */
  readonly state: QueueState
  readonly reason: WaitReason | null
  readonly dueAt: number
  /** Until when it waits, when that is known (a rate limit's reset, the retry after a failure). */
  readonly until: number | null
}

export interface QueuePlan {
  /** Syncs to start now, in the order picked. */
  readonly start: ReadonlyArray<QueuedAccount>
  /** Every account's place in the queue, in the input's order. */
  readonly entries: ReadonlyArray<QueueEntry>
}

/** When the account is due: its target after its last fresh copy, or its import when it never synced. */
export const dueAtOf = (account: QueuedAccount): number =>
  account.lastFreshAt === null ? account.createdAt : account.lastFreshAt + account.freshnessTargetMs

const byOverdue = (a: QueuedAccount, b: QueuedAccount): number =>
  dueAtOf(a) - dueAtOf(b) || (a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : 0)

interface OrgTurn {
  readonly orgId: string
  /** Its due accounts nothing else holds, most overdue first. */
  readonly waiting: Array<QueuedAccount>
  running: number
  /** When it was last served, and in which pick of this pass (0: before it), ordering the round. */
  servedAt: number
  servedPick: number
}

/** The org whose turn comes first: served longest ago, then the most overdue head, then by id. */
const comesFirst = (a: OrgTurn, b: OrgTurn): boolean =>
  a.servedAt !== b.servedAt
    ? a.servedAt < b.servedAt
    : a.servedPick !== b.servedPick
    ? a.servedPick < b.servedPick
    : dueAtOf(a.waiting[0]!) !== dueAtOf(b.waiting[0]!)
    ? dueAtOf(a.waiting[0]!) < dueAtOf(b.waiting[0]!)
    : a.orgId < b.orgId

export const planSyncs = (input: QueueInput): QueuePlan => {
  const { now, bounds } = input
  const held = new Map<string, Pick<QueueEntry, "reason" | "until">>()
  const orgs = new Map<string, OrgTurn>()
  const orgOf = (orgId: string): OrgTurn => {
    let org = orgs.get(orgId)
    if (org === undefined) {
      org = { orgId, waiting: [], running: 0, servedAt: Number.NEGATIVE_INFINITY, servedPick: 0 }
      orgs.set(orgId, org)
    }
    return org
  }
  for (const account of input.accounts) {
    const org = orgOf(account.orgId)
    if (account.lastStartedAt !== null && account.lastStartedAt > org.servedAt) org.servedAt = account.lastStartedAt
    if (account.running) {
      org.running++
      continue
    }
    if (dueAtOf(account) > now) continue
    const retryAt = account.failedAt === null ? null : account.failedAt + input.retryAfterFailureMs
    const limited = input.limitedUntil.get(account.credential)
    if (retryAt !== null && retryAt > now) held.set(account.projectId, { reason: "after_failure", until: retryAt })
    else if (limited !== undefined && limited > now) held.set(account.projectId, { reason: "rate_limited", until: limited })
    else org.waiting.push(account)
  }
  for (const org of orgs.values()) org.waiting.sort(byOverdue)

  const start: Array<QueuedAccount> = []
  let slots = Math.max(0, bounds.instance - input.runningHere)
  let pick = 0
  while (slots > 0) {
    let next: OrgTurn | undefined
    for (const org of orgs.values()) {
      if (org.waiting.length === 0 || org.running >= bounds.perOrg) continue
      if (next === undefined || comesFirst(org, next)) next = org
    }
    if (next === undefined) break
    start.push(next.waiting.shift()!)
    next.running++
    next.servedAt = now
    next.servedPick = ++pick
    slots--
  }
  for (const org of orgs.values()) {
    const reason: WaitReason = org.running >= bounds.perOrg ? "org_at_bound" : "instance_at_bound"
    for (const account of org.waiting) held.set(account.projectId, { reason, until: null })
  }

  const starting = new Set(start.map((account) => account.projectId))
  const entries = input.accounts.map((account): QueueEntry => {
    const base = { projectId: account.projectId, orgId: account.orgId, credential: account.credential, dueAt: dueAtOf(account) }
    if (account.running) return { ...base, state: "running", reason: null, until: null }
    if (starting.has(account.projectId)) return { ...base, state: "due", reason: null, until: null }
    const hold = held.get(account.projectId)
    if (hold !== undefined) return { ...base, state: "waiting", ...hold }
    return { ...base, state: "fresh", reason: null, until: null }
  })
  return { start, entries }
}
