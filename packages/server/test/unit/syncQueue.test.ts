/**
 * The sync queue's rule (warehouse/SyncQueue.ts) as properties: over many passes of a simulated instance, an org
 * with 100 accounts never holds back a 1-account org's due sync past one round, the bounds per instance and per
 * org always hold, a rate-limited credential is never picked, and each org's syncs start most overdue first.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { dueAtOf, planSyncs, type QueueBounds, type QueuedAccount, type QueueInput } from "../../src/warehouse/SyncQueue.ts"

const HOUR = 3_600_000
const MINUTE = 60_000

const account = (orgId: string, n: number, overrides: Partial<QueuedAccount> = {}): QueuedAccount => ({
  projectId: `${orgId}-prj${String(n).padStart(3, "0")}`,
  orgId,
  credential: `cred-${orgId}`,
  lastFreshAt: null,
  createdAt: 0,
  freshnessTargetMs: HOUR,
  failedAt: null,
  running: false,
  lastStartedAt: null,
  ...overrides
})

const input = (accounts: ReadonlyArray<QueuedAccount>, overrides: Partial<QueueInput> = {}): QueueInput => ({
  now: 10 * HOUR,
  accounts,
  runningHere: 0,
  limitedUntil: new Map(),
  bounds: { instance: 4, perOrg: 2 },
  retryAfterFailureMs: 5 * MINUTE,
  ...overrides
})

interface Simulated {
  readonly starts: Array<{ readonly at: number; readonly orgId: string; readonly projectId: string }>
  readonly violations: Array<string>
  /** Per pass where the small org's account was due and idle, the other orgs' starts until it started. */
  readonly smallWaits: Array<ReadonlyMap<string, number>>
}

/**
 * One instance running the rule every minute for `minutes`: each sync takes its account's duration, then the
 * account is fresh. Bounds are checked after every pass.
 */
const simulate = (
  orgSizes: ReadonlyArray<number>,
  durations: ReadonlyArray<number>,
  bounds: QueueBounds,
  minutes: number,
  targetMs = HOUR
): Simulated => {
  let accounts: Array<QueuedAccount> = orgSizes.flatMap((size, o) =>
    Array.from({ length: size }, (_, n) => account(`org${o}`, n, { freshnessTargetMs: targetMs, createdAt: (n * 7919) % (30 * MINUTE) }))
  )
  const ends = new Map<string, number>()
  const result: Simulated = { starts: [], violations: [], smallWaits: [] }
  const small = `org${orgSizes.length - 1}`
  let pending: Map<string, number> | undefined
  for (let now = 0; now <= minutes * MINUTE; now += MINUTE) {
    accounts = accounts.map((a) => {
      const end = ends.get(a.projectId)
      if (!a.running || end === undefined || end > now) return a
      ends.delete(a.projectId)
      return { ...a, running: false, lastFreshAt: end }
    })
    const runningHere = accounts.filter((a) => a.running).length
    const smallAccount = accounts.find((a) => a.orgId === small)!
    if (pending === undefined && !smallAccount.running && dueAtOf(smallAccount) <= now) pending = new Map()
    const plan = planSyncs({ now, accounts, runningHere, limitedUntil: new Map(), bounds, retryAfterFailureMs: 5 * MINUTE })
    const started = new Set(plan.start.map((a) => a.projectId))
    accounts = accounts.map((a, i) => {
      if (!started.has(a.projectId)) return a
      ends.set(a.projectId, now + durations[i % durations.length]! * MINUTE)
      return { ...a, running: true, lastStartedAt: now }
    })
    for (const picked of plan.start) {
      result.starts.push({ at: now, orgId: picked.orgId, projectId: picked.projectId })
      if (pending === undefined) continue
      if (picked.orgId === small) {
        result.smallWaits.push(pending)
        pending = undefined
      } else pending.set(picked.orgId, (pending.get(picked.orgId) ?? 0) + 1)
    }
    const running = accounts.filter((a) => a.running)
    if (running.length > bounds.instance) result.violations.push(`${running.length} running on the instance at ${now}`)
    for (const orgId of new Set(running.map((a) => a.orgId))) {
      const inOrg = running.filter((a) => a.orgId === orgId).length
      if (inOrg > bounds.perOrg) result.violations.push(`${inOrg} running in ${orgId} at ${now}`)
    }
  }
  return result
}

describe("the sync queue", () => {
  it("starts nothing fresh, and a due account when a slot is free", () => {
    const fresh = account("a", 1, { lastFreshAt: 10 * HOUR - MINUTE })
    const due = account("a", 2, { lastFreshAt: 8 * HOUR })
    const plan = planSyncs(input([fresh, due]))
    expect(plan.start.map((a) => a.projectId)).toEqual([due.projectId])
    expect(plan.entries.map((e) => e.state)).toEqual(["fresh", "due"])
  })

  it("says why a due account waits: its org, the instance, its credential, a failure", () => {
    const now = 10 * HOUR
    const accounts = [
      account("a", 1, { running: true }),
      account("a", 2),
      account("b", 1, { credential: "limited" }),
      account("c", 1, { failedAt: now - MINUTE }),
      account("d", 1),
      account("e", 1)
    ]
    const plan = planSyncs(input(accounts, { bounds: { instance: 2, perOrg: 1 }, runningHere: 1, limitedUntil: new Map([["limited", now + MINUTE]]) }))
    expect(plan.entries.map((e) => [e.state, e.reason, e.until])).toEqual([
      ["running", null, null],
      ["waiting", "org_at_bound", null],
      ["waiting", "rate_limited", now + MINUTE],
      ["waiting", "after_failure", now + 4 * MINUTE],
      ["due", null, null],
      ["waiting", "instance_at_bound", null]
    ])
  })

  it("takes orgs in turns: the org served longest ago first, an org just served last", () => {
    const big = Array.from({ length: 100 }, (_, n) => account("big", n, { lastStartedAt: 10 * HOUR - MINUTE }))
    const small = account("small", 1, { createdAt: 9 * HOUR, lastStartedAt: 2 * HOUR })
    const plan = planSyncs(input([...big, small], { bounds: { instance: 1, perOrg: 10 } }))
    // The big org's accounts are all more overdue, but it was served a minute ago.
    expect(plan.start.map((a) => a.orgId)).toEqual(["small"])
  })

  it("never delays a 1-account org's due sync past one round of the others, whatever the big org holds (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 20, max: 100 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 0, maxLength: 5 }),
        fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 7 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        (bigSize, middle, durations, instance, perOrg) => {
          const sim = simulate([bigSize, ...middle, 1], durations, { instance, perOrg }, 240, 30 * MINUTE)
          expect(sim.violations).toEqual([])
          expect(sim.smallWaits.length).toBeGreaterThan(0)
          for (const wait of sim.smallWaits) {
            for (const [orgId, starts] of wait) expect(starts, `${orgId} started ${starts} syncs while the small org's waited`).toBeLessThanOrEqual(1)
          }
        }
      ),
      { numRuns: 40 }
    )
  })

  it("holds the bounds per instance and per org whatever runs already (property)", () => {
    const arbitraryAccount = fc.record({
      org: fc.integer({ min: 0, max: 4 }),
      fresh: fc.option(fc.integer({ min: 0, max: 20 * HOUR }), { nil: null }),
      running: fc.boolean(),
      credential: fc.integer({ min: 0, max: 3 })
    })
    fc.assert(
      fc.property(
        fc.array(arbitraryAccount, { maxLength: 60 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 4 }),
        (specs, runningHere, instance, perOrg, limited) => {
          const now = 10 * HOUR
          const accounts = specs.map((s, n) =>
            account(`org${s.org}`, n, { lastFreshAt: s.fresh, running: s.running, credential: `cred${s.credential}` })
          )
          const limitedUntil = new Map(limited.map((c) => [`cred${c}`, now + MINUTE]))
          const plan = planSyncs(input(accounts, { now, runningHere, limitedUntil, bounds: { instance, perOrg } }))
          expect(plan.start.length).toBeLessThanOrEqual(Math.max(0, instance - runningHere))
          for (const picked of plan.start) {
            expect(limitedUntil.has(picked.credential), "a rate-limited credential was picked").toBe(false)
            expect(picked.running).toBe(false)
            expect(dueAtOf(picked)).toBeLessThanOrEqual(now)
            const inOrg = accounts.filter((a) => a.orgId === picked.orgId && a.running).length +
              plan.start.filter((a) => a.orgId === picked.orgId).length
            expect(inOrg).toBeLessThanOrEqual(Math.max(perOrg, accounts.filter((a) => a.orgId === picked.orgId && a.running).length))
          }
          // Within an org, the most overdue go first: no account left waiting for its turn is more overdue than one picked.
          for (const picked of plan.start) {
            const passedOver = plan.entries.filter((e) =>
              e.orgId === picked.orgId && e.state === "waiting" && (e.reason === "org_at_bound" || e.reason === "instance_at_bound")
            )
            for (const entry of passedOver) expect(entry.dueAt).toBeGreaterThanOrEqual(dueAtOf(picked))
          }
          const limitedStates = plan.entries.filter((e) => limitedUntil.has(e.credential) && e.state === "due")
          expect(limitedStates).toEqual([])
        }
      ),
      { numRuns: 300 }
    )
  })

  it("keeps every account of 200 over 20 orgs within two targets once warm, one org holding 100 (simulation)", () => {
    const sizes = [100, ...Array.from({ length: 19 }, (_, i) => i < 5 ? 6 : 5)]
    const sim = simulate(sizes, [2, 3, 1, 4], { instance: 8, perOrg: 4 }, 6 * 60)
    expect(sim.violations).toEqual([])
    const startsOf = new Map<string, Array<number>>()
    for (const start of sim.starts) startsOf.set(start.projectId, [...(startsOf.get(start.projectId) ?? []), start.at])
    expect(startsOf.size).toBe(200)
    for (const [projectId, times] of startsOf) {
      const warm = times.filter((t) => t >= 2 * HOUR)
      for (let i = 1; i < warm.length; i++) expect(warm[i]! - warm[i - 1]!, projectId).toBeLessThanOrEqual(2 * HOUR)
    }
  })
})
