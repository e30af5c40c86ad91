/**
 * Event streams bounded (docs/contract.md 6), against the real server: one read key opening 200 streams gets 5 and 195
 * refusals (429 `rate_limited`, `Retry-After`, `retry_after_ms`), a closed stream's slot comes back, other keys
 * and people have their own 5 (a person's sessions share theirs), SSE and RPC streams count together, an
 * instance's cap holds on that instance only, and a revoked key's streams give their slots back. Then many
 * streams of one org, with different filters, each get exactly their events, in order, for one read of the
 * events table per event (pg_stat_statements), not one per stream.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { Cause, Effect, Exit, Fiber, Option, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { call, type RunningServer } from "./support/server.ts"
import { openSse, type SseClient } from "./support/sse.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let orgId: string
let accounts: ReadonlyArray<string>
const opened: Array<SseClient> = []

beforeAll(async () => {
  p = await startPipeline({ env: { EVENTS_HEARTBEAT_MS: "300", EVENTS_POLL_MS: "200" } })
  const [org] = await p.sql<{ orgId: string }>("SELECT org_id AS \"orgId\" FROM accounts WHERE project_id = $1", [p.account.projectId])
  orgId = org!.orgId
  accounts = (await p.api("key", (client) => client.accounts.listAccounts())).accounts.map((a) => a.projectId)
}, 600_000)

afterAll(async () => {
  opened.forEach((s) => s.close())
  await p?.close()
})

const readKey = (projectIds?: ReadonlyArray<string>) =>
  p.api("key", (client) =>
    client.keys.createKey({ payload: { name: "stream reader", scope: "read", ...(projectIds === undefined ? {} : { projectIds }) } }))

const signIn = async () => {
  const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } })
  const cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))
  if (cookie === undefined) throw new Error(`sign-in failed: ${login.status} ${login.text}`)
  return cookie.split(";")[0]!
}

/** Opens a stream (closed after the file); `server` is the main instance unless given. */
const open = async (credentials: { readonly key?: string; readonly cookie?: string }, query = "", server: RunningServer = p.server) => {
  const client = await openSse(`${server.api}/events/stream${query}`, {
    ...(credentials.key === undefined ? {} : { authorization: `Bearer ${credentials.key}` }),
    ...(credentials.cookie === undefined ? {} : { cookie: credentials.cookie })
  })
  opened.push(client)
  return client
}

const openMany = (n: number, credentials: { readonly key?: string; readonly cookie?: string }, query = "", server?: RunningServer) =>
  Promise.all(Array.from({ length: n }, () => open(credentials, query, server)))

/** A refusal as docs/contract.md 7 has it: 429 `rate_limited`, `retry_after_ms` in the body, `Retry-After` in seconds. */
const expectRefused = (client: SseClient, says: RegExp) => {
  expect(client.status, client.refusal).toBe(429)
  const body = JSON.parse(client.refusal!) as { error: { code: string; message: string }; retry_after_ms: number }
  expect(body.error.code).toBe("rate_limited")
  expect(body.error.message).toMatch(says)
  expect(body.retry_after_ms).toBeGreaterThan(0)
  expect(Number(client.headers.get("retry-after"))).toBe(Math.ceil(body.retry_after_ms / 1000))
}

/** Opens a stream until one is let in (a closed stream's slot comes back once the server sees it go). */
const openOnceFree = (credentials: { readonly key?: string; readonly cookie?: string }, server?: RunningServer) =>
  waitFor("a stream slot to be free again", () => open(credentials, "", server), (client) => client.status === 200, {
    intervalMs: 200,
    show: (client) => `${client.status} ${client.refusal}`
  })

/** An event of the org sequenced as another instance would (its NOTIFY wakes the server's streams); its id. */
let emitted = 0
const emit = async (type: string, projectId: string | null) => {
  const eventId = `evt_bounded_${++emitted}`
  await p.sql(`DO $$ DECLARE n int; BEGIN
    INSERT INTO events (event_id, org_id, project_id, type, data)
      VALUES ('${eventId}', '${orgId}', ${projectId === null ? "NULL" : `'${projectId}'`}, '${type}', '{"note": "streams bounded"}');
    LOOP
      SELECT events INTO n FROM acs_sequence_events(1000, 86400, 'acs_events', 'elsewhere');
      EXIT WHEN n >= 0;
      PERFORM pg_sleep(0.01);
    END LOOP;
  END $$`)
  return eventId
}

const withClient = <A, E>(key: string, use: (client: AcsClient["Type"]) => Effect.Effect<A, E>, server: RunningServer = p.server) =>
  Effect.flatMap(AcsClient, use).pipe(Effect.provide(AcsClient.layer({ url: server.baseUrl, key })), Effect.scoped)

/**
 * `streamEvents` over the wire (NDJSON, as http/RpcRoute.ts takes it), with a connection the test cuts: the
 * client services use keeps its connection after its fiber is interrupted, until it is collected.
 */
const rawRpcStream = (key: string) => {
  const abort = new AbortController()
  let text = ""
  const request = `${JSON.stringify({ _tag: "Request", id: "1", tag: "streamEvents", payload: {}, headers: [] })}\n`
  void fetch(`${p.server.baseUrl}/rpc`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/ndjson" },
    body: request,
    signal: abort.signal
  }).then(async (response) => {
    const decoder = new TextDecoder()
    for await (const chunk of response.body!) text += decoder.decode(chunk as Uint8Array, { stream: true })
  }).catch(() => undefined)
  return {
    /** The ids of the events the stream's chunks carried so far. */
    received: () => [...text.matchAll(/"eventId":"([^"]+)"/g)].map((m) => m[1]!),
    close: () => abort.abort()
  }
}

describe("stream slots", () => {
  it("200 streams from one read key: 5 open, 195 refused with 429 and Retry-After; closing one frees its slot", async () => {
    const { secret } = await readKey()
    const streams = await openMany(200, { key: secret })
    const granted = streams.filter((s) => s.status === 200)
    const refused = streams.filter((s) => s.status !== 200)
    expect(granted).toHaveLength(5)
    expect(refused).toHaveLength(195)
    for (const client of refused) expectRefused(client, /at most 5 event streams .* per key/)

    granted[0]!.close()
    const again = await openOnceFree({ key: secret })
    expect(again.contentType).toContain("text/event-stream")
    // Five open again: the next is refused.
    expectRefused(await open({ key: secret }), /per key/)
    // The five still follow the org's events.
    const eventId = await emit("sync.failed", null)
    for (const client of [...granted.slice(1), again]) {
      await waitFor("the event on every granted stream", () => Promise.resolve(client.frames.map((f) => f.id)), (ids) => ids.includes(eventId))
    }
  })

  it("another key and a person have their own 5; a person's sessions share theirs", async () => {
    const full = await readKey()
    expect((await openMany(5, { key: full.secret })).map((s) => s.status)).toEqual([200, 200, 200, 200, 200])
    expectRefused(await open({ key: full.secret }), /per key/)

    const other = await readKey()
    expect((await openMany(5, { key: other.secret })).map((s) => s.status)).toEqual([200, 200, 200, 200, 200])

    const first = await signIn()
    const second = await signIn()
    expect([...(await openMany(3, { cookie: first })), ...(await openMany(2, { cookie: second }))].map((s) => s.status)).toEqual([200, 200, 200, 200, 200])
    expectRefused(await open({ cookie: second }), /at most 5 event streams .* per person/)
    expectRefused(await open({ cookie: first }), /per person/)
  })

  it("SSE and RPC streams count together; an RPC refusal is RateLimited with retry_after_ms; a client gone frees its RPC stream's slot", async () => {
    const { secret } = await readKey()
    // Four RPC streams through the client services use, and one over the wire that the test can cut.
    const seen = Array.from({ length: 4 }, () => [] as Array<string>)
    const fibers = seen.map((ids) =>
      Effect.runFork(withClient(secret, (client) =>
        client.streamEvents({}).pipe(Stream.runForEach((event) => Effect.sync(() => ids.push(event.eventId)))))))
    const raw = rawRpcStream(secret)
    // They are open once each has an event (one sent before a stream opened is not its).
    await waitFor("an event on every RPC stream", async () => {
      await emit("sync.failed", null)
      return [...seen.map((ids) => ids.length), raw.received().length]
    }, (counts) => counts.every((n) => n > 0), { intervalMs: 500 })

    expectRefused(await open({ key: secret }), /per key/)
    const sixth = await Effect.runPromiseExit(withClient(secret, (client) => Stream.runHead(client.streamEvents({}))))
    expect(Exit.isFailure(sixth)).toBe(true)
    const failure = Exit.isFailure(sixth) ? Option.getOrUndefined(Cause.failureOption(sixth.cause)) : undefined
    expect(failure).toMatchObject({ _tag: "RateLimited", retry_after_ms: 10_000 })

    raw.close()
    expect((await openOnceFree({ key: secret })).status).toBe(200)
    await Promise.all(fibers.map((fiber) => Fiber.interrupt(fiber)))
  })

  it("the instance cap holds on its instance only; a revoked key's streams, SSE and RPC, give their slots back", async () => {
    const twin = await p.startTwin({ EVENTS_MAX_STREAMS_PER_INSTANCE: "3" })
    try {
      const [viaRpc, viaSse, revokedToo, other, fourth] = [await readKey(), await readKey(), await readKey(), await readKey(), await readKey()]
      const rpcIds: Array<string> = []
      const rpcStream = Effect.runFork(withClient(viaRpc.secret, (client) =>
        client.streamEvents({}).pipe(Stream.runForEach((event) => Effect.sync(() => rpcIds.push(event.eventId)))), twin))
      await waitFor("an event on the twin's RPC stream", async () => {
        await emit("sync.failed", null)
        return rpcIds.length
      }, (n) => n > 0, { intervalMs: 500 })
      expect((await open({ key: viaSse.secret }, "", twin)).status).toBe(200)
      expect((await open({ key: revokedToo.secret }, "", twin)).status).toBe(200)
      expectRefused(await open({ key: fourth.secret }, "", twin), /this instance serves at most 3 event streams/)
      // The first instance has its own count.
      expect((await open({ key: fourth.secret })).status).toBe(200)

      // A revoked key's stream ends at its next event or heartbeat (every 300 ms here), and its slot is free.
      expect((await p.as("key", "DELETE", `/keys/${viaRpc.key.keyId}`)).status).toBe(204)
      await Fiber.join(rpcStream)
      expect((await openOnceFree({ key: fourth.secret }, twin)).status).toBe(200)
      expect((await p.as("key", "DELETE", `/keys/${revokedToo.key.keyId}`)).status).toBe(204)
      expect((await openOnceFree({ key: other.secret }, twin)).status).toBe(200)
      expectRefused(await open({ key: other.secret }, "", twin), /this instance/)
    } finally {
      await twin.stop()
    }
  })
})

describe("one read per event batch", () => {
  it("20 streams of one org, with four filters, get exactly their events in order, for about one read per event, not one per stream", async () => {
    const [here, there] = [p.account.projectId, accounts.find((id) => id !== p.account.projectId)!]
    const orgWide = await readKey()
    const typed = await readKey()
    const bound = await readKey([here])
    const filtered = await readKey()
    const groups = {
      all: await openMany(5, { key: orgWide.secret }),
      failed: await openMany(5, { key: typed.secret }, "?type=sync.failed"),
      bound: await openMany(5, { key: bound.secret }),
      there: await openMany(5, { key: filtered.secret }, `?projectId=${there}`)
    }
    expect(Object.values(groups).flat().map((s) => s.status)).toEqual(Array.from({ length: 20 }, () => 200))

    await p.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    const reads = async () => {
      const rows = await p.sql<{ reads: string }>(`SELECT coalesce(sum(calls), 0)::text AS reads FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query LIKE '%FROM events e%e.position > $%::bigint%'`)
      return Number(rows[0]!.reads)
    }
    const before = await reads()
    const sent: Array<{ readonly eventId: string; readonly type: string; readonly projectId: string | null }> = []
    for (const [type, projectId] of [["sync.failed", here], ["sync.succeeded", there], ["connection.broken", null], ["sync.failed", there], ["sync.succeeded", here], ["sync.failed", null]] as const) {
      const eventId = await emit(type, projectId)
      sent.push({ eventId, type, projectId })
      // Each is its own batch: every org-wide stream has it before the next is sent.
      for (const client of groups.all) {
        await waitFor(`${eventId} on the org-wide streams`, () => Promise.resolve(client.frames.map((f) => f.id)), (ids) => ids.includes(eventId))
      }
    }
    // The last wake and the watch's may still read.
    const after = await waitFor("the streams' reads to settle", async () => [await reads(), await reads()] as const, ([a, b]) => a === b, { intervalMs: 1_000 })
    const perEvent = (after[0] - before) / sent.length
    // One read per event and wake (the NOTIFY's, the watch's), for all twenty; one per stream would be 20 or more.
    expect(perEvent, `${after[0] - before} reads for ${sent.length} events`).toBeLessThanOrEqual(3)

    const expected = {
      all: sent,
      failed: sent.filter((e) => e.type === "sync.failed"),
      bound: sent.filter((e) => e.projectId === here),
      there: sent.filter((e) => e.projectId === there)
    }
    for (const [name, clients] of Object.entries(groups) as Array<[keyof typeof groups, Array<SseClient>]>) {
      for (const client of clients) {
        await waitFor(`the ${name} stream's last event`, () => Promise.resolve(client.frames.length), (n) => n >= expected[name].length)
        expect(client.frames.map((f) => f.id), name).toEqual(expected[name].map((e) => e.eventId))
      }
    }
  })
})
