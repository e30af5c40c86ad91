/**
 * Short-lived caches of per-request lookups (the API key, the account, the org's settings, the account's
 * target band and guardrails, a person's session), kept exact across instances by PostgreSQL. The statement that
 * changes one of them names the changed keys, and its table's owner module NOTIFYs `acs_invalidate` with them in the
 * same transaction (`invalidating`; docs/decisions/database.md "Invalidation and bookkeeping by the statements, not
 * triggers"), so the notification is queued when the change commits and dropped with a rollback. Every instance
 * LISTENs on one connection of its own and drops the entry named. A change made by hand on the database sends its own
 * (`SELECT pg_notify('acs_invalidate', 'a:<project id>')`), or is seen once the entry's TTL has passed.
 *
 * A notification is delivered after its commit, not with it: a client that saw a revocation commit on
 * instance A may reach instance B before B has read the notification. So a cached entry is served only after
 * a barrier: B notifies itself on a channel of its own and waits for that ping to come back. PostgreSQL
 * delivers notifications in commit order, so by then B has read every notification of every transaction that
 * committed before the request arrived. One ping in flight at a time serves every request waiting for it,
 * and a request pings once for all its lookups, so the barrier costs a wait, not a query per lookup. When the listener is down, or a ping does not come
 * back in time, nothing is served from the cache; a load that raced a notification is not stored; an entry
 * older than the TTL (LOOKUP_CACHE_TTL_MS, default 5 s, 0 = no caching) is loaded again. The embedded
 * database has one backend and no LISTEN: nothing is cached there.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Config, Duration, Effect, FiberId, FiberRef, Option, Redacted, Schedule } from "effect"
import * as Crypto from "node:crypto"
import Pg from "pg"
import { DatabaseMode } from "./Database.ts"

export const INVALIDATE_CHANNEL = "acs_invalidate"

/** How often an idle listener proves itself with a ping. */
const IDLE_PING_MS = 1_000
/** A ping not back within this is a broken listener: it is reconnected and nothing is cached meanwhile. */
const PING_TIMEOUT_MS = 2_000

/**
 * The cache's key prefixes in a notification's payload: `k:<secret hash>`, `a:<project id>`, `o:<org id>`
 * (the org's settings), `t:<project id>` (the account's target band), `g:<project id>` (the account's guardrails),
 * `s:<token hash>` (a person's session).
 * `<prefix>:*` drops that whole cache (a person's change, which every session of theirs carries).
 */
export type CacheName = "k" | "a" | "o" | "t" | "g" | "s"

/** The key of a notification that drops every entry of its cache. */
const ALL_KEYS = "*"

/** The column of a changing statement's rows that names the cache key to drop (`invalidateKey`). */
const KEY_COLUMN = "invalidate"

/**
 * For the `RETURNING` of a statement that changes what a cache holds: the key `invalidating` drops, an expression over
 * the changed row (NULL: nothing to drop for this row).
 */
export const invalidateKey = (sql: SqlClient.SqlClient, key: Statement.Fragment) => sql`${key} AS ${sql.unsafe(KEY_COLUMN)}`

/** Runs `effect` in the caller's transaction, or in one of its own when there is none. */
const inTransaction = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.serviceOption(SqlClient.TransactionConnection),
    (open) => Option.isSome(open) ? effect : sql.withTransaction(effect)
  )

/**
 * The notifications that drop `keys` of cache `name` on every instance: one statement naming no table, so on Citus it
 * runs on the coordinator, whose `acs_invalidate` the instances hear. Not in the changing statement's `RETURNING` or
 * a CTE of it: Citus refuses a volatile function in a modification's `RETURNING`, and runs a statement on one shard,
 * its CTEs included, on that shard's worker, whose notifications nobody hears.
 */
const notify = (sql: SqlClient.SqlClient, payloads: ReadonlyArray<string>) =>
  payloads.length === 0
    ? Effect.void
    : Effect.asVoid(sql`SELECT pg_notify(${INVALIDATE_CHANNEL}, payload) FROM unnest(${payloads}::text[]) AS payload`)

/**
 * Runs a statement that changes what cache `name` holds, each changed row naming its key (`invalidateKey`), then
 * notifies every instance to drop those keys, in the same transaction (the caller's, or one of its own): queued by
 * the changing transaction, the notifications are delivered when it commits and dropped with a rollback. Answers the
 * statement's rows.
 */
export const invalidating = <Row extends { readonly [column: string]: unknown }, E, R>(
  sql: SqlClient.SqlClient,
  name: CacheName,
  statement: Effect.Effect<ReadonlyArray<Row>, E, R>
) =>
  inTransaction(
    sql,
    Effect.tap(statement, (rows) =>
      notify(sql, [...new Set(rows.flatMap((row) => {
        const key = row[KEY_COLUMN]
        return typeof key === "string" ? [`${name}:${key}`] : []
      }))]))
  )

/** As `invalidating`, dropping every entry of each cache of `names` when the statement changed a row. */
export const invalidatingAll = <Row, E, R>(
  sql: SqlClient.SqlClient,
  names: ReadonlyArray<CacheName>,
  statement: Effect.Effect<ReadonlyArray<Row>, E, R>
) =>
  inTransaction(
    sql,
    Effect.tap(statement, (rows) => notify(sql, rows.length === 0 ? [] : names.map((name) => `${name}:${ALL_KEYS}`)))
  )

interface Entry {
  readonly value: unknown
  readonly storedAt: number
}

export interface LookupCache<V> {
  /** The cached value when it may be trusted, else `load`'s (stored when nothing changed meanwhile). */
  readonly get: <E, R>(key: string, load: Effect.Effect<Option.Option<V>, E, R>) => Effect.Effect<Option.Option<V>, E, R>
  /** Drops the key here at once (the writer's own instance need not wait for its notification). */
  readonly invalidate: (key: string) => void
}

type Waiter = (delivered: boolean) => void

/**
 * The fiber that last passed the barrier. A request runs in a fiber of its own on every surface, so a second
 * lookup of the same request (the account after the key) needs no second ping: the first was sent after the
 * request arrived. Another fiber (another request) never matches.
 */
const barrierPassedBy = FiberRef.unsafeMake<number>(-1)

const currentFiber = Effect.fiberIdWith((id) => Effect.succeed(FiberId.isRuntime(id) ? id.id : -2))

/** Whether the current fiber has passed the barrier (a lookup of its request was served after a ping). */
export const barrierPassed: Effect.Effect<boolean> = Effect.flatMap(currentFiber, (fiber) =>
  Effect.map(FiberRef.get(barrierPassedBy), (passed) => passed === fiber))

/**
 * Marks the current fiber as past the barrier: for a fiber that serves part of a request whose own fiber
 * passed it (an RPC procedure runs in the RPC server's fiber, not the request's), so that its lookups need no
 * second ping. Only with `barrierPassed` true for that request.
 */
export const assumeBarrierPassed: Effect.Effect<void> = Effect.flatMap(currentFiber, (fiber) => FiberRef.set(barrierPassedBy, fiber))

/**
 * A read request served from the cache before its barrier came back: its ping is in flight while the read
 * runs, and every cached entry it used is checked once the ping is back (`speculatively`).
 */
interface Speculation {
  barrier: Promise<boolean> | undefined
  readonly checks: Array<() => boolean>
}

const currentSpeculation = FiberRef.unsafeMake<Speculation | undefined>(undefined)

/**
 * Runs a read with its cached lookups answered at once, the barrier's ping sent alongside instead of waited
 * for first (a round trip off the read's latency). `settled` is true once the ping is back and no entry the
 * read used was dropped meanwhile: only then may its answer be given. Otherwise the caller runs the read again
 * without speculation (it then meets the change). Only for reads: nothing a speculative run does may outlive
 * a refusal it should have met.
 */
export const speculatively = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const speculation: Speculation = { barrier: undefined, checks: [] }
    const exit = yield* Effect.exit(Effect.locally(effect, currentSpeculation, speculation))
    const barrier = speculation.barrier
    const settled = barrier === undefined || ((yield* Effect.promise(() => barrier)) && speculation.checks.every((check) => check()))
    return { exit, settled } as const
  })

export class Invalidation extends Effect.Service<Invalidation>()("acs/Invalidation", {
  scoped: Effect.gen(function*() {
    const url = yield* DatabaseMode
    const ttlMs = yield* Config.integer("LOOKUP_CACHE_TTL_MS").pipe(Config.withDefault(5_000))
    const caches = new Map<CacheName, Map<string, Entry>>()
    const pingChannel = `acs_ping_${Crypto.randomBytes(8).toString("hex")}`
    // Bumped by every notification and every lapse: a load that began before a bump is not stored.
    let generation = 0
    let client: Pg.Client | undefined
    let connected = false
    let pings = 0
    // Set by the first lookup: a process that never looks anything up (`acs worker`) holds no listening
    // connection, which PostgreSQL would wake for every NOTIFY in the database.
    let wanted = false
    let inFlight: { readonly seq: number; readonly sentAt: number; readonly waiters: Array<Waiter> } | undefined
    let waiting: Array<Waiter> = []

    const dropAll = () => {
      generation++
      for (const entries of caches.values()) entries.clear()
    }

    const disconnect = () => {
      const wasConnected = connected || client !== undefined
      connected = false
      const old = client
      client = undefined
      const stranded = [...(inFlight?.waiters ?? []), ...waiting]
      inFlight = undefined
      waiting = []
      for (const waiter of stranded) waiter(false)
      if (wasConnected) dropAll()
      if (old !== undefined) {
        old.removeAllListeners()
        old.on("error", () => {})
        void old.end().catch(() => {})
      }
    }

    /** Sends the next ping for everyone waiting now; the ones arriving meanwhile wait for the ping after it. */
    const sendPing = () => {
      const current = client
      if (current === undefined || !connected || inFlight !== undefined) return
      const seq = ++pings
      inFlight = { seq, sentAt: Date.now(), waiters: waiting }
      waiting = []
      // Prepared once on the connection: a ping is then only bound and executed.
      current.query({ name: "acs_ping", text: "SELECT pg_notify($1, $2)", values: [pingChannel, String(seq)] }).catch(disconnect)
    }

    const onNotification = (channel: string, payload: string | undefined) => {
      if (channel === pingChannel) {
        if (inFlight === undefined || payload !== String(inFlight.seq)) return
        const { waiters } = inFlight
        inFlight = undefined
        for (const waiter of waiters) waiter(true)
        if (waiting.length > 0) sendPing()
        return
      }
      if (payload === undefined) return
      generation++
      const entries = caches.get(payload.slice(0, 1) as CacheName)
      const key = payload.slice(2)
      if (key === ALL_KEYS) entries?.clear()
      else entries?.delete(key)
    }

    const ping = Effect.async<boolean>((resume) => {
      if (!connected) return resume(Effect.succeed(false))
      waiting.push((delivered) => resume(Effect.succeed(delivered)))
      sendPing()
    })

    const pingPromise = () =>
      new Promise<boolean>((resolve) => {
        if (!connected) return resolve(false)
        waiting.push(resolve)
        // After the request's own statement is written (it is, synchronously, before the next tick): the
        // ping's write then overlaps the statement instead of delaying it (paired A/B: ~4 % off a cheap read).
        process.nextTick(sendPing)
      })

    /** True once this instance has read every notification committed before the request; false when it cannot tell. */
    const barrier = Effect.gen(function*() {
      const fiber = yield* currentFiber
      if ((yield* FiberRef.get(barrierPassedBy)) === fiber) return true
      const delivered = yield* ping
      if (delivered) yield* FiberRef.set(barrierPassedBy, fiber)
      return delivered
    })

    if (Option.isSome(url) && ttlMs > 0) {
      const connectionString = Redacted.value(url.value)
      const connect = Effect.tryPromise(async () => {
        const next = new Pg.Client({ connectionString, application_name: "acs invalidation", keepAlive: true, connectionTimeoutMillis: 5_000 })
        next.on("error", disconnect)
        next.on("end", disconnect)
        next.on("notification", (message) => onNotification(message.channel, message.payload))
        client = next
        await next.connect()
        await next.query(`LISTEN ${INVALIDATE_CHANNEL}`)
        await next.query(`LISTEN ${pingChannel}`)
        dropAll()
        connected = true
      }).pipe(Effect.catchAll(() => Effect.sync(disconnect)))
      // Keeps the listener up, and proves an idle one still delivers; a ping stuck past its time breaks it.
      const tick = Effect.gen(function*() {
        if (!wanted) return
        if (client === undefined) return yield* connect
        const now = yield* Clock.currentTimeMillis
        if (inFlight !== undefined && now - inFlight.sentAt > PING_TIMEOUT_MS) return disconnect()
        sendPing()
        for (const entries of caches.values()) {
          for (const [key, entry] of entries) if (now - entry.storedAt >= ttlMs) entries.delete(key)
        }
      })
      yield* tick.pipe(Effect.repeat(Schedule.spaced(Duration.millis(IDLE_PING_MS / 2))), Effect.forkScoped)
      yield* Effect.addFinalizer(() => Effect.sync(disconnect))
    }

    const cache = <V>(name: CacheName): LookupCache<V> => {
      // One map per name, whoever asks: a second service on the same cache must not detach the first from its notifications.
      const entries = caches.get(name) ?? new Map<string, Entry>()
      caches.set(name, entries)
      return {
        get: (key, load) =>
          Effect.gen(function*() {
            wanted = true
            if (!connected) return yield* load
            const now = yield* Clock.currentTimeMillis
            const hit = entries.get(key)
            if (hit !== undefined && now - hit.storedAt < ttlMs) {
              const speculation = yield* FiberRef.get(currentSpeculation)
              if (speculation !== undefined && (yield* FiberRef.get(barrierPassedBy)) !== (yield* currentFiber)) {
                // Served now, checked when the request's ping is back (`speculatively`).
                speculation.barrier ??= pingPromise()
                speculation.checks.push(() => entries.get(key) === hit)
                return Option.some(hit.value as V)
              }
              // Still there after the barrier: no change to it committed before this request.
              if ((yield* barrier) && entries.get(key) === hit) return Option.some(hit.value as V)
            }
            const before = generation
            const loaded = yield* load
            if (Option.isSome(loaded) && connected && generation === before) entries.set(key, { value: loaded.value, storedAt: now })
            return loaded
          }),
        invalidate: (key) => {
          generation++
          entries.delete(key)
        }
      }
    }

    return { cache } as const
  })
}) {}
