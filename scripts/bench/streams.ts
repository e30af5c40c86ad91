/**
 * What idle event streams cost acs's API process (docs/decisions/events-and-webhooks.md): 200 `GET /events/stream` opened across 40 read
 * keys (5 each, the per-key cap), nothing happening on them. The process's heap after a full collection (and its
 * RSS) is read before they open, while they are open and after they closed, through scripts/bench/heapProbe.ts
 * loaded into it; the difference over the streams is the memory per idle stream. Then events are sequenced one
 * at a time, as another instance would, and pg_stat_statements counts acs's reads of the events table per event
 * while the 200 streams follow it. acs runs with its own database in the bench cluster and no accounts.
 */
import * as Path from "node:path"
import { repoRoot } from "../../packages/server/test/support/server.ts"
import { openSse, type SseClient } from "../../packages/server/test/support/sse.ts"
import { startAcs } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { makePool } from "./pg.ts"
import { statementSnapshot } from "./statements.ts"

export const STREAMS_DATABASE = "acs_bench_streams"
const BOOTSTRAP_KEY = "acs_bench_streams_key_0123456789abcdefghijklmnopqrst"
const STREAMS = 200
const PER_KEY = 5
const EVENTS = 10

interface MemoryReading {
  readonly heapUsed: number
  readonly rss: number
  readonly external: number
}

export interface StreamsResult {
  readonly streams: number
  readonly keys: number
  readonly before: MemoryReading
  readonly open: MemoryReading
  readonly closed: MemoryReading
  /** (open − before) / streams, after a full collection each time. */
  readonly heapPerStreamBytes: number
  readonly rssPerStreamBytes: number
  readonly events: number
  /** acs's statements reading the events table after a position, per event, with every stream following. */
  readonly eventReadsPerEvent: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`streams: ${what} did not happen in ${timeoutMs / 1000} s`)
    await sleep(50)
  }
}

export const benchStreams = async (cluster: BenchCluster, log: (message: string) => void): Promise<StreamsResult> => {
  await cluster.createDatabase(STREAMS_DATABASE)
  const probe = Path.join(repoRoot, "scripts/bench/heapProbe.ts")
  const acs = await startAcs({
    DATABASE_URL: cluster.url(STREAMS_DATABASE),
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    SYNC_INTERVAL_MINUTES: "0",
    RATE_LIMIT_READ: "100000000",
    RATE_LIMIT_WRITE: "100000000",
    EVENTS_MAX_STREAMS_PER_INSTANCE: String(STREAMS * 2),
    LOG_LEVEL: "warn",
    NODE_OPTIONS: `--expose-gc --import tsx --import ${probe}`
  }, BOOTSTRAP_KEY)
  const pool = makePool({ connectionString: cluster.benchUrl(STREAMS_DATABASE), max: 1 })
  // pg_stat_statements is created in the cluster's `postgres` database; its view there shows every database.
  const stats = makePool({ connectionString: cluster.benchUrl("postgres"), max: 1 })
  const streams: Array<SseClient> = []
  try {
    let probes = 0
    const memory = async (): Promise<MemoryReading> => {
      const lines = () => acs.logs().split("\n").filter((line) => line.startsWith("{\"heapProbe\""))
      probes++
      process.kill(acs.pid!, "SIGUSR2")
      await until("the heap probe's answer", () => lines().length >= probes)
      const reading = (JSON.parse(lines()[probes - 1]!) as { heapProbe: MemoryReading & { collected: boolean } }).heapProbe
      if (!reading.collected) throw new Error("streams: the heap probe could not collect (no --expose-gc)")
      return { heapUsed: reading.heapUsed, rss: reading.rss, external: reading.external }
    }
    /** Three probes a second apart, the median heap: what a collection leaves settles within them. */
    const settled = async (): Promise<MemoryReading> => {
      const readings: Array<MemoryReading> = []
      for (let i = 0; i < 3; i++) {
        await sleep(1_000)
        readings.push(await memory())
      }
      return readings.sort((a, b) => a.heapUsed - b.heapUsed)[1]!
    }

    /** acs's reads of events after a position so far (the streams' reads; GET /events reads before one). */
    const eventReads = async () => {
      const snapshot = await statementSnapshot(stats, STREAMS_DATABASE)
      return [...snapshot.byQuery.values()]
        .filter((s) => /FROM events e/.test(s.query) && /e\.position > \$\d+::bigint/.test(s.query))
        .reduce((sum, s) => sum + s.calls, 0)
    }

    const readKey = async (name: string) => ((await acs.client.sendJson("POST", `${acs.api}/keys`, { name, scope: "read" })) as { secret: string }).secret
    const keys: Array<string> = []
    for (let i = 0; i < STREAMS / PER_KEY; i++) keys.push(await readKey(`stream reader ${i}`))
    const open = async (key: string) => {
      const client = await openSse(`${acs.api}/events/stream`, { authorization: `Bearer ${key}` })
      if (client.status !== 200) throw new Error(`streams: a stream answered ${client.status}: ${client.refusal}`)
      return client
    }
    // Warm-up: the code paths a stream takes are compiled and their caches filled before the first reading. Keys
    // of its own: the server gives a closed stream's slot back when it sees the connection go, a moment later.
    const warmKeys = [await readKey("warm-up 1"), await readKey("warm-up 2")]
    const warm = await Promise.all(warmKeys.flatMap((key) => Array.from({ length: PER_KEY }, () => open(key))))
    warm.forEach((s) => s.close())
    await Promise.all(warm.map((s) => s.ended))

    const before = await settled()
    log(`streams: opening ${STREAMS} idle streams over ${keys.length} read keys`)
    for (const key of keys) streams.push(...(await Promise.all(Array.from({ length: PER_KEY }, () => open(key)))))
    const whileOpen = await settled()

    const [org] = (await pool.query<{ org_id: string }>("SELECT org_id FROM orgs ORDER BY created_at LIMIT 1")).rows
    const statementsBefore = await eventReads()
    for (let i = 0; i < EVENTS; i++) {
      const eventId = `evt_bench_stream_${i}`
      await pool.query("INSERT INTO events (event_id, org_id, project_id, type, data) VALUES ($1, $2, NULL, 'sync.failed', '{}')", [eventId, org!.org_id])
      // Sequenced as another instance's sequencer would: its NOTIFY wakes acs's streams.
      await until("the event's sequencing", async () =>
        (await pool.query<{ events: number }>("SELECT events FROM acs_sequence_events(1000, 86400, 'acs_events', 'bench')")).rows[0]!.events >= 0)
      await until(`event ${i} on every stream`, () => streams.every((s) => s.frames.some((f) => f.id === eventId)))
    }
    // The streams' watch reads the sequencer once more after the last event; its wake may read once more.
    await sleep(2_000)
    const reads = (await eventReads()) - statementsBefore

    streams.forEach((s) => s.close())
    await Promise.all(streams.map((s) => s.ended))
    const closed = await settled()
    const result: StreamsResult = {
      streams: STREAMS,
      keys: keys.length,
      before,
      open: whileOpen,
      closed,
      heapPerStreamBytes: Math.round((whileOpen.heapUsed - before.heapUsed) / STREAMS),
      rssPerStreamBytes: Math.round((whileOpen.rss - before.rss) / STREAMS),
      events: EVENTS,
      eventReadsPerEvent: reads / EVENTS
    }
    log(`streams: heap ${Math.round(result.heapPerStreamBytes / 1024)} KiB, RSS ${Math.round(result.rssPerStreamBytes / 1024)} KiB per idle stream; ` +
      `${result.eventReadsPerEvent} event reads per event`)
    return result
  } finally {
    streams.forEach((s) => s.close())
    await pool.end()
    await stats.end()
    await acs.stop()
  }
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

/** One line for the details under the table. */
export const describeStreams = (r: StreamsResult): string =>
  `idle event streams: ${r.streams} over ${r.keys} keys; heap after a full collection ${kib(r.before.heapUsed)} → ${kib(r.open.heapUsed)} open → ` +
  `${kib(r.closed.heapUsed)} closed; RSS ${kib(r.before.rss)} → ${kib(r.open.rss)} → ${kib(r.closed.rss)}`
