/**
 * acs on a Citus cluster (docs/scale.md): Citus built from the vendored source (support/citus.ts, once per
 * machine), a coordinator and two workers on loopback, acs migrated onto the coordinator and the distribution
 * plan (src/db/Distribution.ts) applied; then the real server on the coordinator of that distributed database,
 * syncing the simulator's demo org.
 *
 * Every table of the plan is placed and every key between a group's tables stands again; anything Citus
 * refused would be reported with Citus's words (docs/scale.md's "Not yet distributed" must follow).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ACCOUNT_GROUP_KEYS,
  ACCOUNT_TABLES,
  DISTRIBUTION_STEPS,
  type DistributionOutcome,
  ORG_GROUP_KEYS,
  ORG_TABLES,
  PLACEMENT_STEPS,
  PLACEMENTS
} from "../src/db/Distribution.ts"
import { type CitusCluster, startCitusCluster } from "./support/citus.ts"
import { query } from "./support/database.ts"
import { migrateAndDistribute } from "./support/distributed.ts"
import { readRepoFile } from "./support/markdown.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, proposalOf, startPipeline, tolerateUpstreamFaults } from "./support/pipeline.ts"
import { startReceiver } from "./support/receiver.ts"
import { call } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let cluster: CitusCluster | undefined
/** acs's schema with the plan applied, where acs serves. */
let database: string
let outcome: DistributionOutcome
let p: Pipeline | undefined

beforeAll(async () => {
  // The first run on a machine builds Citus (a few minutes on two cores: bench/history.md); later runs reuse it.
  cluster = await startCitusCluster()
  database = await cluster.createDatabase("acs")
  outcome = await migrateAndDistribute(database)
  // Thirty proposals at once wait for one account's lock, each holding a pooled connection: on a busy machine the
  // last waits long for its connection, so the pool's patience is minutes (as pipelineConcurrency.test.ts's).
  // Every statement that runs on more than one shard is logged with its text, for the statement rule.
  await query(database, "ALTER DATABASE acs SET citus.multi_task_query_log_level = 'log'")
  await query(database, "ALTER DATABASE acs SET log_min_error_statement = 'log'")
  p = await startPipeline({ seed: 39, database, env: { DATABASE_CONNECT_TIMEOUT_MS: "120000", WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" } })
}, 30 * 60_000)

afterAll(async () => {
  try {
    await p?.close()
  } finally {
    await cluster?.stop()
  }
})

const sql = <Row extends Record<string, unknown>>(text: string, values: ReadonlyArray<unknown> = []) => query<Row>(database, text, values)

/** A sync of the account through the API, waited for until it succeeded. */
const syncOnce = async (pipeline: Pipeline, projectId: string) => {
  const path = { projectId }
  const { syncId } = await pipeline.api("key", (client) => client.warehouse.startSync({ path }))
  await waitFor(
    `sync ${syncId} to succeed`,
    async () => (await pipeline.api("key", (client) => client.warehouse.getSync({ path: { ...path, syncId } }))).status,
    (status) => status === "succeeded",
    { intervalMs: 250, show: (status) => `${status}\n${pipeline.server.logs().slice(-3000)}` }
  )
}

describe("the Citus cluster", () => {
  it("is a coordinator with two active workers", async () => {
    const workers = await sql<{ node_port: string }>("SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY node_port")
    expect(workers.map((w) => Number(w.node_port))).toEqual(cluster!.workers.map((w) => w.port).toSorted((a, b) => a - b))
  })

  it("spreads a distributed table's shards over both workers", async () => {
    const probe = await cluster!.createDatabase("probe")
    await query(probe, "CREATE TABLE probe (org_id text NOT NULL, n integer NOT NULL)")
    await query(probe, "SELECT create_distributed_table('probe', 'org_id')")
    await query(probe, "INSERT INTO probe SELECT 'org_' || i, i FROM generate_series(1, 1000) i")
    const placements = await query<{ nodeport: string; shards: string }>(
      probe,
      "SELECT nodeport, count(*) AS shards FROM pg_dist_shard_placement GROUP BY nodeport ORDER BY nodeport"
    )
    expect(placements.map((p) => Number(p.nodeport))).toEqual(cluster!.workers.map((w) => w.port).toSorted((a, b) => a - b))
    expect(await query(probe, "SELECT count(*)::int AS rows, sum(n)::int AS total FROM probe")).toEqual([{ rows: 1000, total: 500_500 }])
  })
})

describe("the distribution plan", () => {
  it("places every table of the migrated schema exactly once", async () => {
    // An account's partitions of the warehouse's partitioned tables, and a running sync's tables that become
    // them (warehouse/GenerationTables.ts), go where their parent goes.
    const tables = await sql<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
         AND c.relname !~ '^(daily_metrics|search_terms|spend_suffixes)_syn_' AND NOT relation_is_a_known_shard(c.oid)
       ORDER BY 1`
    )
    expect(tables.map((t) => t.name)).toEqual([...PLACEMENTS.keys()].toSorted())
    expect(new Set(PLACEMENT_STEPS.map((s) => s.table)).size).toBe(PLACEMENT_STEPS.length)
  })

  it("drops and creates again exactly the foreign keys between two tables of one group, as the migrations made them", async () => {
    const groups = [ACCOUNT_TABLES, ORG_TABLES].map((tables): ReadonlyArray<string> => tables)
    const keys = await sql<{ table: string; name: string; references: string; definition: string }>(
      `SELECT conrelid::regclass::text AS table, conname AS name, confrelid::regclass::text AS references,
         pg_get_constraintdef(oid) AS definition
       FROM pg_constraint
       WHERE contype = 'f' AND conrelid <> confrelid AND conparentid = 0 AND connamespace = 'public'::regnamespace
       ORDER BY 2`
    )
    const within = keys.filter((k) => groups.some((group) => group.includes(k.table) && group.includes(k.references)))
    const planned = [...ACCOUNT_GROUP_KEYS, ...ORG_GROUP_KEYS]
    expect(within).toEqual(planned.toSorted((a, b) => a.name.localeCompare(b.name)).map((k) => ({ ...k })))
    expect({ standing: outcome.keys.toSorted(), refused: outcome.keysRefused }).toEqual({ standing: planned.map((k) => k.name).toSorted(), refused: [] })
  })

  it("is the script docs/scale.md gives, statement for statement", () => {
    const script = /```sql\n([\s\S]*?)```/.exec(readRepoFile("docs/scale.md"))?.[1] ?? ""
    expect(script.trim().split("\n")).toEqual(DISTRIBUTION_STEPS.map((s) => `${s.statement};`))
  })

  it("places every table of the plan", () => {
    expect(outcome.refused).toEqual([])
    expect(outcome.placed).toEqual(PLACEMENT_STEPS.map((s) => s.table))
  })

  it("leaves each table where the outcome says: placed as planned, or on the coordinator alone", async () => {
    const rows = await sql<{ name: string; method: string; replication: string; column: string | null; colocation: number }>(
      `SELECT logicalrelid::text AS name, partmethod AS method, repmodel AS replication,
         column_to_column_name(logicalrelid, partkey) AS column, colocationid AS colocation
       FROM pg_dist_partition`
    )
    const citus = new Map(rows.map((r) => [r.name, r]))
    const groupOf = (anchor: string) => citus.get(anchor)?.colocation
    const where = (table: string) => {
      const row = citus.get(table)
      if (row === undefined) return "coordinator"
      if (row.method === "n" && row.replication === "t") return "reference"
      // A plain table a placed reference table's foreign key joins becomes a Citus-local table: still the coordinator's alone.
      if (row.method === "n" && row.replication === "s") return "coordinator"
      if (row.method === "h" && row.column === "project_id" && row.colocation === groupOf(ACCOUNT_TABLES[0])) return "account"
      if (row.method === "h" && row.column === "org_id" && row.colocation === groupOf(ORG_TABLES[0])) return "org"
      return `unexpected: ${JSON.stringify(row)}`
    }
    const placed = new Set(outcome.placed)
    for (const [table, placement] of PLACEMENTS) expect(where(table), table).toBe(placed.has(table) ? placement : "coordinator")
  })
})

describe("acs on the distributed schema", () => {
  it("imports and syncs the demo accounts, serves their reads, and applies a proposal a person approved", async () => {
    const pipeline = p!
    const campaigns = await pipeline.run(pipeline.upstream.campaigns(pipeline.account.upstreamAccountId))
    const campaign = campaigns.find((c) => !c.deleted && c.dailyBudgetMicros !== null)
    if (campaign === undefined) throw new Error("the demo account has no campaign with a daily budget")
    const listed = await pipeline.as("key", "GET", `/accounts/${pipeline.account.projectId}/campaigns`)
    expect(listed.status, listed.text).toBe(200)
    expect(listed.text, "the synced campaigns are read from the shards").toContain(campaign.campaignId)
    const cut = Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000

    // A key's proposal never applies itself: it waits for a person.
    const proposed = await pipeline.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: cut, reason: "on Citus" }, {
      as: "key"
    })
    expect(proposed.status, proposed.text).toBe(201)
    expect(proposed.body).toMatchObject({ mode: "queued" })
    const actionId = proposalOf(proposed).actionId
    expect((await pipeline.action(actionId)).status).toBe("proposed")

    const approved = await pipeline.as("person", "POST", `/accounts/${pipeline.account.projectId}/approvals/${actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    expect((await pipeline.settle(actionId, ["applied", "failed"])).status).toBe("applied")
    expect((await pipeline.run(pipeline.upstream.campaign(pipeline.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(cut)

    // Its events, sequenced on the coordinator, read from the org's shard, newest first.
    const events = await waitFor(
      `the events of ${actionId} in GET /events`,
      async () => (await pipeline.api("key", (client) => client.events.listEvents({ urlParams: { limit: 200 } }))).events,
      (listed) => listed.some((e) => e.type === "action.applied" && JSON.stringify(e.data).includes(actionId)),
      { intervalMs: 250, show: (listed) => `${listed.map((e) => e.type).join(", ")}\n${pipeline.server.logs().slice(-4000)}` }
    )
    expect(events.filter((e) => JSON.stringify(e.data).includes(actionId)).map((e) => e.type)).toEqual([
      "action.applied",
      "action.approved",
      "action.proposed"
    ])
  })

  it("applies a key's changeset a person approved", async () => {
    const pipeline = p!
    const account = pipeline.secondAccount
    const path = { projectId: account.projectId }
    const targets = (await pipeline.run(pipeline.upstream.campaigns(account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null).slice(0, 2)
    expect(targets).toHaveLength(2)
    const opened = await pipeline.api("key", (client) => client.changesets.openChangeset({ path, payload: { title: "on Citus" } }))
    for (const target of targets) {
      const member = await pipeline.propose("budget-change", {
        campaignId: target.campaignId,
        newDailyBudgetMicros: Math.round(target.dailyBudgetMicros! * 0.9 / 10_000) * 10_000,
        reason: "trim",
        changesetId: opened.changesetId
      }, { as: "key", projectId: account.projectId })
      expect(member.status, member.text).toBe(201)
    }
    const submitted = await pipeline.api("key", (client) =>
      client.changesets.submitChangeset({ path: { ...path, changesetId: opened.changesetId }, urlParams: {} }))
    await pipeline.api("person", (client) =>
      client.changesets.approveChangeset({ path: { ...path, changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
    const done = await waitFor(
      `changeset ${opened.changesetId} to end its apply`,
      () => pipeline.api("key", (client) => client.changesets.getChangeset({ path: { ...path, changesetId: opened.changesetId } })),
      (got) => ["applied", "partially_applied", "failed"].includes(got.changeset.status),
      { intervalMs: 250, show: (got) => `${got.changeset.status}\n${pipeline.server.logs().slice(-3000)}` }
    )
    expect(done.changeset.status).toBe("applied")
  })

  it("records a change made in Apple's web UI as an outside change after a sync", async () => {
    const pipeline = p!
    const campaign = (await pipeline.run(pipeline.upstream.campaigns(pipeline.account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null)[1]!
    pipeline.setBudgetOutsideAcs(campaign.campaignId, 123_450_000)
    const path = { projectId: pipeline.account.projectId }
    await syncOnce(pipeline, path.projectId)
    const outside = await waitFor(
      "the outside change in the ledger",
      async () =>
        (await pipeline.api("key", (client) => client.actions.listActions({ path, urlParams: { limit: 50, origin: "external" } }))).actions,
      (rows) => rows.some((a) => JSON.stringify(a.payload).includes(campaign.campaignId)),
      { intervalMs: 250 }
    )
    expect(outside.find((a) => JSON.stringify(a.payload).includes(campaign.campaignId))).toMatchObject({
      kind: "external_change",
      status: "applied",
      proposedBy: { kind: "external", id: "web-ui-user@example.com" }
    })
  })

  it("reviews the watch of an applied change at the sync that brings its day", async () => {
    const pipeline = p!
    const path = { projectId: pipeline.account.projectId }
    // The first test's change: its watch opened in the guard's pass after the sync above.
    const [watch] = await waitFor(
      "the applied change's watch",
      () => sql<{ watch_id: string; action_id: string; applied_day: string }>(
        `SELECT watch_id, action_ids[1] AS action_id, applied_day::text AS applied_day FROM watches
         WHERE project_id = $1 AND reviews_done = 0 AND changeset_id IS NULL`,
        [path.projectId]
      ),
      (rows) => rows.length > 0,
      { intervalMs: 250, show: () => pipeline.server.logs().slice(-3000) }
    )
    // acs's clock cannot be moved in its process: the change is made two days older instead, so that the warehouse
    // holds the day its first review reads (the days as values: Citus refuses a stable function over a column in an UPDATE).
    const daysBefore = (days: number) => new Date(Date.parse(`${watch!.applied_day}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10)
    await sql(
      `UPDATE watches SET applied_day = $3::date, next_review_day = $4::date,
         record = record || jsonb_build_object('appliedDay', $5::text, 'nextReviewDay', $6::text)
       WHERE project_id = $1 AND watch_id = $2`,
      [path.projectId, watch!.watch_id, daysBefore(2), daysBefore(1), daysBefore(2), daysBefore(1)]
    )
    await syncOnce(pipeline, path.projectId)
    const reviewed = await waitFor(
      `the first review of ${watch!.action_id}`,
      () => pipeline.action(watch!.action_id),
      (action) => (action.watch?.reviews.length ?? 0) > 0,
      { intervalMs: 250, show: (action) => `${JSON.stringify(action.watch)}\n${pipeline.server.logs().slice(-3000)}` }
    )
    expect(reviewed.watch!.reviews.map((r) => r.afterDays)).toEqual([1])
    expect(["passed", "failed", "inconclusive"]).toContain(reviewed.watch!.verdict)
    await waitFor(
      `the action.verdict event of ${watch!.action_id}`,
      async () => (await pipeline.api("key", (client) => client.events.listEvents({ urlParams: { limit: 200 } }))).events,
      (listed) => listed.some((e) => e.type === "action.verdict" && JSON.stringify(e.data).includes(watch!.action_id)),
      { intervalMs: 250 }
    )
  })

  it("writes an account's targets and audit, the org's settings, a person and a key, answering what each wrote", async () => {
    const pipeline = p!
    const projectId = pipeline.account.projectId
    const answered = async (method: string, path: string, body: unknown, status: number) => {
      const answer = await pipeline.as("person", method, path, body)
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(status)
      return answer.body as Record<string, unknown>
    }
    const band = { cpaBand: { minMicros: 1_000_000, maxMicros: 90_000_000 }, campaigns: {} }
    expect(await answered("PUT", `/accounts/${projectId}/targets`, band, 200)).toEqual(band)
    expect(await answered("POST", `/accounts/${projectId}/audits`, undefined, 201)).toMatchObject({ findings: expect.any(Array) })
    const settings = await answered("GET", "/settings", undefined, 200)
    expect(await answered("PUT", "/settings", { approvalTtlHours: settings["approvalTtlHours"] }, 200)).toMatchObject({
      approvalTtlHours: settings["approvalTtlHours"]
    })
    const person = await answered("POST", "/people", { email: "citus@people.example", name: "On Citus", role: "viewer" }, 201)
    const personId = (person["person"] as { readonly personId: string }).personId
    expect(await answered("PUT", `/people/${personId}`, { role: "editor" }, 200)).toMatchObject({ role: "editor" })
    const key = await answered("POST", "/keys", { name: "on Citus", scope: "read", canApprove: false }, 201)
    const keyId = (key["key"] as { readonly keyId: string }).keyId
    await answered("DELETE", `/keys/${keyId}`, undefined, 204)
  })

  it("reconciles an apply whose instance was killed (SIGKILL) mid-apply, and applies it once", async () => {
    const pipeline = p!
    const account = pipeline.secondAccount
    await tolerateUpstreamFaults(pipeline, account.projectId)
    // The serving instance applies nothing from here on; worker instances are started and killed instead.
    const workerEnv = { WORKER_CONCURRENCY: "2", WORKER_LEASE_MS: "1500", APPLY_MAX_ATTEMPTS: "5" }
    await pipeline.restart({ WORKER_CONCURRENCY: "0", WORKER_LEASE_MS: "1500" })
    const campaign = (await pipeline.run(pipeline.upstream.campaigns(account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null)[3]!
    const target = Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000
    const since = pipeline.simulator.control.listCalls().at(-1)?.seq ?? 0
    // The upstream takes the write but holds its answer long enough for the worker to be killed while it waits.
    pipeline.simulator.control.addFault({ kind: "timeout", delayMs: 4_000, process: true, method: "PUT", path: `/campaigns/${campaign.campaignId}$` })
    const proposed = await pipeline.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "trim" }, {
      projectId: account.projectId
    })
    expect(proposed.body).toMatchObject({ mode: "auto_applied", status: "approved" })
    const actionId = proposalOf(proposed).actionId
    const first = await pipeline.startTwin(workerEnv)
    const writes = () => pipeline.simulator.control.listCalls({ method: "PUT", path: new RegExp(`/campaigns/${campaign.campaignId}$`), since })
    // Killed once the upstream took the write and while the worker waits for its answer.
    await waitFor("the worker's write to reach the upstream", async () => writes(), (calls) => calls.length > 0, { intervalMs: 25 })
    await first.stop("SIGKILL")
    expect((await pipeline.action(actionId, account.projectId)).status).toBe("applying")
    const second = await pipeline.startTwin(workerEnv)
    try {
      expect((await pipeline.settle(actionId, ["applied", "failed"], account.projectId)).status).toBe("applied")
    } finally {
      await second.stop()
    }
    expect((await pipeline.run(pipeline.upstream.campaign(account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(target)
    expect(writes().filter((call) => call.status === 200), "the upstream changed once").toHaveLength(1)
  })

  it("lets exactly 20 of 30 simultaneous auto-eligible proposals on two instances auto-apply", async () => {
    const pipeline = p!
    const twin = await pipeline.startTwin()
    const login = await call(`${twin.api}/auth/login`, { method: "POST", body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } })
    const cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
    const campaign = (await pipeline.run(pipeline.upstream.campaigns(pipeline.account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null)[2]!
    const answers = await Promise.all(Array.from({ length: 30 }, (_, index) =>
      call(`${(index % 2 === 0 ? pipeline.server : twin).api}/accounts/${pipeline.account.projectId}/actions/budget-change`, {
        method: "POST",
        headers: { cookie },
        body: { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros! - 10_000 * (index + 1), reason: `cut ${index}` }
      })))
    expect(answers.map((a) => a.status), answers.find((a) => a.status !== 201)?.text ?? "").toEqual(Array(30).fill(201))
    expect(answers.map(proposalOf).filter((a) => a.mode === "auto_applied")).toHaveLength(20)
    const policy = await pipeline.api("key", (client) => client.actions.getPolicy({ path: { projectId: pipeline.account.projectId } }))
    expect(policy).toMatchObject({ autoApplies: { limitPer24h: 20, usedLast24h: 20, remaining: 0 } })
  })

})

describe("webhooks on the distributed schema", () => {
  it("delivers the events of a proposal's flow to an endpoint, signed, and logs them", async () => {
    const pipeline = p!
    const receiver = await startReceiver()
    try {
      const created = await pipeline.as("key", "POST", "/webhooks", {
        url: receiver.url,
        events: ["action.proposed", "action.approved", "action.applied"],
        description: "on Citus"
      })
      expect(created.status, `${created.text}\n${pipeline.server.logs().slice(-4000)}`).toBe(201)
      const { secret, webhook } = created.body as { readonly secret: string; readonly webhook: { readonly webhookId: string } }
      const campaign = (await pipeline.run(pipeline.upstream.campaigns(pipeline.account.upstreamAccountId)))
        .filter((c) => !c.deleted && c.dailyBudgetMicros !== null)[4]!
      const proposed = await pipeline.propose("budget-change", {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.8 / 10_000) * 10_000,
        reason: "webhooks on Citus"
      }, { as: "key" })
      expect(proposed.status, proposed.text).toBe(201)
      const actionId = proposalOf(proposed).actionId
      const approved = await pipeline.as("person", "POST", `/accounts/${pipeline.account.projectId}/approvals/${actionId}/approve`)
      expect(approved.status, approved.text).toBe(200)
      expect((await pipeline.settle(actionId, ["applied", "failed"])).status).toBe("applied")

      const ofAction = () => receiver.received.filter((r) => JSON.stringify(r.body["data"]).includes(actionId))
      const received = await waitFor(
        `the receiver to get the three events of ${actionId}`,
        () => Promise.resolve(ofAction()),
        (got) => new Set(got.map((r) => r.body["type"])).size === 3,
        { intervalMs: 250, show: (got) => `${got.map((r) => r.body["type"]).join(", ")}\n${pipeline.server.logs().slice(-4000)}` }
      )
      expect(new Set(received.map((r) => r.body["type"]))).toEqual(new Set(["action.proposed", "action.approved", "action.applied"]))
      for (const request of received) {
        // Acs-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")> (docs/contract.md 6).
        const [, t, v1] = /^t=(\d+),v1=([0-9a-f]+)$/.exec(request.signature ?? "") ?? []
        expect(v1, request.signature).toBe(Crypto.createHmac("sha256", secret).update(`${t}.${request.rawBody}`).digest("hex"))
        expect(request.eventId).toBe(request.body["eventId"])
      }
      // The endpoint's log, read from the org's shard, shows each as delivered.
      const logged = await waitFor(
        "the deliveries in the endpoint's log",
        async () => (await pipeline.api("key", (client) => client.webhooks.listWebhookDeliveries({ path: { webhookId: webhook.webhookId }, urlParams: {} }))).deliveries,
        (rows) => received.every((r) => rows.some((d) => d.eventId === r.eventId && d.status === "delivered")),
        { intervalMs: 250 }
      )
      expect(logged.length).toBeGreaterThanOrEqual(3)
      await pipeline.as("key", "DELETE", `/webhooks/${webhook.webhookId}`)
    } finally {
      await receiver.close()
    }
  })
})

/**
 * The statement rule (docs/scale.md): a statement on distributed tables names its tenant, so it runs on one shard;
 * the few that read or sweep every tenant by design are declared. The coordinator logs each statement that ran on
 * more than one shard (`citus.multi_task_query_log_level`); each must be one of these, by how it begins.
 */
const FAN_OUTS: ReadonlyArray<readonly [prefix: string, why: string]> = [
  ["SELECT events, deliveries FROM acs_sequence_events(", "the one counter that orders events across orgs"],
  ["SELECT project_id, (extract(epoch FROM min(GREATEST(run_at,", "which accounts have apply jobs due (queue/Jobs.ts readyAccounts)"],
  ["DELETE FROM webhook_deliveries WHERE delivery_id IN (", "retention's sweep of ended deliveries"],
  ["WITH running AS MATERIALIZED (SELECT sync_id FROM syncs WHERE status = 'running')", "the sweep of abandoned sync tables"],
  [
    "UPDATE syncs SET status = 'failed', finished_at = now(), error = 'abandoned: the instance running it stopped beating' WHERE status = 'running'",
    "the scheduler's sweep of syncs whose instance stopped beating"
  ],
  ["SELECT c.changeset_id, c.project_id, o.approval_ttl_hours FROM changesets c", "the approval expiry's sweep"],
  ["SELECT org_id, (extract(epoch FROM min(due) - statement_timestamp())", "which orgs have webhook deliveries due (webhooks/Deliveries.ts readyOrgs)"]
]

/** The statements the coordinator logged as run on more than one shard, whitespace folded, each once. */
const multiShardStatements = (log: string): ReadonlyArray<string> => {
  const entries = log.split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/)
  const statements = new Set<string>()
  entries.forEach((entry, index) => {
    if (!entry.includes("multi-task query about to be executed")) return
    const statement = entries.slice(index + 1, index + 4).map((next) => /STATEMENT:\s+([\s\S]*)/.exec(next)?.[1]).find((s) => s !== undefined)
    if (statement !== undefined) statements.add(statement.replace(/\s+/g, " ").replace(/^\/\* prepared \*\/ /, "").trim())
  })
  return [...statements]
}

describe("the statement rule", () => {
  it("runs every statement the flows above sent on one shard, but the declared fan-outs", async () => {
    const logged = multiShardStatements(await Fs.promises.readFile(cluster!.coordinatorLog, "utf8"))
    expect(logged.length, "the coordinator logs multi-shard statements").toBeGreaterThan(0)
    const declared = FAN_OUTS.map(([prefix]) => prefix)
    expect(logged.filter((statement) => !declared.some((prefix) => statement.startsWith(prefix)))).toEqual([])
  })
})

describe("a very large account on a shard of its own", () => {
  it("moves the account's rows of every co-located table to a shard of their own, and acs goes on syncing, reading and applying", async () => {
    const pipeline = p!
    const projectId = pipeline.account.projectId
    const shardOf = async (table: string) =>
      (await sql<{ min: string; max: string }>(
        `SELECT shardminvalue AS min, shardmaxvalue AS max FROM pg_dist_shard
         WHERE shardid = get_shard_id_for_distribution_column($1::regclass, $2::text)`,
        [table, projectId]
      ))[0]!
    const before = await shardOf("actions")
    expect(before.min, "the account shares its shard before").not.toBe(before.max)
    // docs/scale.md: without logical replication on the nodes, the account's writes wait while its rows move.
    await sql("SELECT isolate_tenant_to_new_shard('campaigns', $1::text, 'CASCADE', shard_transfer_mode => 'block_writes')", [projectId])
    for (const table of ["campaigns", "daily_metrics", "actions", "jobs"]) {
      const shard = await shardOf(table)
      expect(shard.min, `${table}: the account's hash alone`).toBe(shard.max)
    }
    await syncOnce(pipeline, projectId)
    const listed = await pipeline.as("key", "GET", `/accounts/${projectId}/campaigns`)
    expect(listed.status, listed.text).toBe(200)
    const campaign = (await pipeline.run(pipeline.upstream.campaigns(pipeline.account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null)[0]!
    expect(listed.text).toContain(campaign.campaignId)
    const cut = Math.round(campaign.dailyBudgetMicros! * 0.97 / 10_000) * 10_000
    const proposed = await pipeline.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: cut, reason: "isolated" }, { as: "key" })
    expect(proposed.status, proposed.text).toBe(201)
    const actionId = proposalOf(proposed).actionId
    const approved = await pipeline.as("person", "POST", `/accounts/${projectId}/approvals/${actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    expect((await pipeline.settle(actionId, ["applied", "failed"])).status).toBe("applied")
  })
})
