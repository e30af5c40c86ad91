/**
 * Traces, metrics and request logs as an operator sees them (docs/operations.md): the real server
 * exporting its spans over OTLP/HTTP to a receiver in this test, `/metrics` read by a Prometheus text-format
 * parser, and the request log lines on the process's output.
 */
import { spawn } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import parsePrometheus, { type MetricFamily } from "parse-prometheus-text-format"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toolName } from "../src/mcp/McpTools.ts"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./support/otlpReceiver.ts"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { freePort } from "./support/postgres.ts"
import { nodeArgs } from "./support/entries.ts"
import { BOOTSTRAP_KEY, call, repoRoot, stopProcess } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let receiver: OtlpReceiver
let metricsPort: number

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  metricsPort = await freePort()
  p = await startPipeline({
    seed: 15,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "acs-telemetry-test",
      // Spans leave in small batches, soon: the test waits on what arrived.
      OTEL_BSP_SCHEDULE_DELAY: "100",
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      METRICS_ENABLED: "true",
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: "info"
    }
  })
})

afterAll(async () => {
  await p?.close()
  await receiver?.close()
})

/** A budget cut a person proposes (auto-applied); the action id once it is applied. */
const proposeAndApply = async () => {
  const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
  const campaign = campaigns.find((c) => !c.deleted && c.dailyBudgetMicros !== null)!
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9),
    reason: "telemetry"
  })
  expect(answer.status, answer.text).toBe(201)
  expect(answer.body).toMatchObject({ mode: "auto_applied", status: "approved" })
  const actionId = proposalOf(answer).actionId
  const settled = await p.settle(actionId)
  expect(settled.status).toBe("applied")
  return actionId
}

const spansNamed = (name: string, where: (span: ReceivedSpan) => boolean = () => true) =>
  receiver.spans().filter((span) => span.name === name && where(span))

const inTrace = (traceId: string) => receiver.spans().filter((span) => span.traceId === traceId)

describe("traces over OTLP/HTTP", () => {
  it("exports a proposal's trace and its apply's, the apply linked to the proposal", async () => {
    const actionId = await proposeAndApply()
    const apply = await waitFor(
      "the apply's span at the receiver",
      async () => spansNamed("worker.apply", (span) => span.attributes["actionId"] === actionId),
      (found) => found.length > 0,
      { show: () => `${receiver.requests().slice(-5).join("\n")}\n${[...new Set(receiver.spans().map((s) => s.name))].join(", ")}` }
    )
    const link = apply[0]!.links.find((l) => l.attributes["acs.link"] === "proposal")
    expect(link, JSON.stringify(apply[0])).toBeDefined()

    // The proposal's trace: the request, the operation named after the operation table, the service
    // method under it, and SQL statements; all reported as this service.
    const proposal = await waitFor(
      "the proposal's trace at the receiver",
      async () => inTrace(link!.traceId),
      (spans) => spans.some((s) => s.name === "operation.proposeBudgetChange") && spans.some((s) => s.name === "Proposals.propose"),
      { show: (spans) => spans.map((s) => s.name).join(", ") }
    )
    const operation = proposal.find((s) => s.name === "operation.proposeBudgetChange")!
    const propose = proposal.find((s) => s.name === "Proposals.propose")!
    const byId = new Map(proposal.map((s) => [s.spanId, s]))
    const ancestors = (span: ReceivedSpan): Array<string> => {
      const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId)
      return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
    }
    expect(ancestors(propose)).toContain("operation.proposeBudgetChange")
    expect(ancestors(operation).some((name) => name.startsWith("http.server"))).toBe(true)
    expect(proposal.some((s) => s.name === "sql.execute" && ancestors(s).includes("Proposals.propose"))).toBe(true)
    expect(proposal.every((s) => s.serviceName === "acs-telemetry-test")).toBe(true)
    // The link names a span of that trace.
    expect(byId.has(link!.spanId)).toBe(true)

    // The apply's trace: the apply itself, its SQL and the upstream write.
    const applied = await waitFor(
      "the apply's trace at the receiver",
      async () => inTrace(apply[0]!.traceId),
      (spans) => spans.some((s) => s.name === "Apply.apply") && spans.some((s) => s.name.startsWith("Upstream.PUT")),
      { show: (spans) => spans.map((s) => s.name).join(", ") }
    )
    expect(applied.some((s) => s.name === "sql.execute")).toBe(true)
    expect(apply[0]!.traceId).not.toBe(link!.traceId)

    // No secret leaves in a span: neither the callers' keys nor the upstream client secret (in the token URL).
    const exported = JSON.stringify(receiver.spans().map((s) => s.attributes))
    expect(exported).toContain("http.request.header.authorization")
    expect(exported).not.toContain("client_secret")
    expect(exported).not.toContain(BOOTSTRAP_KEY)
  })

  it("links a queued proposal's apply to the proposal and to the approval", async () => {
    const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
    const campaign = campaigns.filter((c) => !c.deleted && c.dailyBudgetMicros !== null).at(-1)!
    // A key's proposal queues for review; another principal approves it.
    const proposed = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.95),
      reason: "telemetry, queued"
    }, { as: "key" })
    expect(proposed.status, proposed.text).toBe(201)
    const actionId = proposalOf(proposed).actionId
    const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    expect((await p.settle(actionId)).status).toBe("applied")
    const [apply] = await waitFor(
      "the apply's span at the receiver",
      async () => spansNamed("worker.apply", (span) => span.attributes["actionId"] === actionId),
      (found) => found.length > 0
    )
    const linked = (kind: string) => apply!.links.find((l) => l.attributes["acs.link"] === kind)
    const traces = await waitFor(
      "the proposal's and the approval's operations at the receiver",
      async () => ({
        proposal: inTrace(linked("proposal")?.traceId ?? "").map((s) => s.name),
        approval: inTrace(linked("queued_by")?.traceId ?? "").map((s) => s.name)
      }),
      ({ proposal, approval }) => proposal.includes("operation.proposeBudgetChange") && approval.includes("operation.approveAction"),
      { show: (names) => `${JSON.stringify(apply)}\n${JSON.stringify(names)}` }
    )
    expect(traces.approval).toContain("Jobs.enqueue")
  })
})

const scrape = async (url: string) => {
  const answer = await call(url)
  expect(answer.status, answer.text).toBe(200)
  expect(answer.headers.get("content-type")).toContain("text/plain")
  return parsePrometheus(answer.text)
}

/**
 * The sum of the samples of `name` whose labels include `labels` (0 when none). For a histogram, its `+Inf`
 * bucket (its count): the parser keeps the buckets of a histogram with a single label set only.
 */
const valueOf = (families: ReadonlyArray<MetricFamily>, name: string, labels: Record<string, string> = {}) => {
  const family = families.find((f) => f.name === name)
  if (family?.type === "HISTOGRAM") return Number(family.metrics[0]?.buckets?.["+Inf"] ?? 0)
  const samples = family?.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)) ?? []
  return samples.reduce((sum, sample) => sum + Number(sample.value), 0)
}

describe("traces of webhook deliveries", () => {
  it("links a delivery to the trace of the change its event describes, and sends the receiver its trace context", async () => {
    // A receiver that takes every delivery, and keeps each one's traceparent by event id.
    const traceparents = new Map<string, string | undefined>()
    const hooks = createServer((request, response) => {
      const traceparent = request.headers["traceparent"]
      traceparents.set(String(request.headers["acs-event-id"]), Array.isArray(traceparent) ? traceparent[0] : traceparent)
      request.resume().on("end", () => response.writeHead(204).end())
    })
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve))
    try {
      const created = await p.api("key", (client) =>
        client.webhooks.createWebhook({
          payload: { url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`, events: ["action.applied"] }
        })
      )
      const actionId = await proposeAndApply()
      const [apply] = await waitFor(
        "the apply's span",
        async () => spansNamed("worker.apply", (span) => span.attributes["actionId"] === actionId),
        (found) => found.length > 0
      )
      // The action.applied event was written by the apply: the delivery links to the apply's trace.
      const delivery = await waitFor(
        "a delivery span linked to the apply's trace",
        async () => spansNamed("webhook.deliver", (span) => span.links.some((l) => l.traceId === apply!.traceId)),
        (found) => found.length > 0,
        { show: () => JSON.stringify(spansNamed("webhook.deliver")).slice(0, 2000) }
      )
      expect(delivery[0]!.links[0]!.attributes["acs.link"]).toBe("event")
      // The receiver got the attempt's own span as its parent (W3C traceparent).
      const eventId = String(delivery[0]!.attributes["eventId"])
      expect(traceparents.get(eventId)).toBe(`00-${delivery[0]!.traceId}-${delivery[0]!.spanId}-01`)
      await p.api("key", (client) => client.webhooks.deleteWebhook({ path: { webhookId: created.webhook.webhookId } }))
    } finally {
      await new Promise((resolve) => hooks.close(resolve))
    }
  })
})

describe("/metrics", () => {
  it("shows the counters moving after a proposal and its apply", async () => {
    const url = `${p.server.baseUrl}/metrics`
    const before = await scrape(url)
    await proposeAndApply()
    // The apply's own counters move in the worker, after the status the test saw: wait for them.
    const after = await waitFor(
      "the apply's metrics",
      () => scrape(url),
      (families) => valueOf(families, "acs_apply_lag_seconds") > valueOf(before, "acs_apply_lag_seconds")
    )
    const moved = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels)
    expect(moved("acs_proposals_total", { kind: "budget_change", mode: "auto_applied" })).toBe(1)
    expect(moved("acs_http_requests_total", { operation: "proposeBudgetChange", status: "201" })).toBe(1)
    expect(moved("acs_actions_total", { status: "applied" })).toBeGreaterThanOrEqual(1)
    expect(moved("acs_apply_lag_seconds")).toBe(1)
    // The apply's write (the token and the reads may come from before: the client is kept per org).
    expect(moved("acs_upstream_requests_total", { endpoint: "PUT /campaigns/:id", status: "200" })).toBe(1)
    expect(valueOf(after, "acs_webhook_deliveries_total", { result: "delivered" })).toBeGreaterThanOrEqual(1)
    for (const name of ["acs_jobs_ready", "acs_sync_rows_total"]) expect(after.map((f) => f.name)).toContain(name)
    expect(after.find((f) => f.name === "acs_http_requests_total")?.type).toBe("COUNTER")
    expect(after.find((f) => f.name === "acs_http_request_duration_seconds")?.type).toBe("HISTOGRAM")
  })

  it("counts only what committed: a proposal or an approval rolled back moves no counter", async () => {
    const url = `${p.server.baseUrl}/metrics`
    const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
    const campaign = campaigns.find((c) => !c.deleted && c.dailyBudgetMicros !== null)!
    const cut = (share: number, reason: string) => ({
      campaignId: campaign.campaignId,
      // Whole cents (USD).
      newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * share / 10_000) * 10_000,
      reason
    })
    const queued = await p.propose("budget-change", cut(0.93, "telemetry, rolled back"), { as: "key" })
    expect(queued.status, queued.text).toBe(201)
    const actionId = proposalOf(queued).actionId
    const approve = () => p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    const approvedCount = (families: ReadonlyArray<MetricFamily>) => valueOf(families, "acs_actions_total", { status: "approved" })
    const autoApplied = (families: ReadonlyArray<MetricFamily>) =>
      valueOf(families, "acs_proposals_total", { kind: "budget_change", mode: "auto_applied" })

    // The database refuses every job while this trigger exists: an approval fails after its transition (the job
    // is written after it, in the same transaction), an auto-applied proposal in its one statement.
    await p.sql(`CREATE FUNCTION telemetry_refuse_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'jobs refused by telemetry.test.ts'; END $$`)
    await p.sql("CREATE TRIGGER telemetry_refuse_jobs BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION telemetry_refuse_jobs()")
    const before = await scrape(url)
    try {
      expect((await approve()).status).toBe(500)
      expect((await p.propose("budget-change", cut(0.92, "telemetry, rolled back too"))).status).toBe(500)
    } finally {
      await p.sql("DROP TRIGGER telemetry_refuse_jobs ON jobs")
      await p.sql("DROP FUNCTION telemetry_refuse_jobs()")
    }
    expect((await p.action(actionId)).status).toBe("proposed")
    const rolledBack = await scrape(url)
    expect(approvedCount(rolledBack)).toBe(approvedCount(before))
    expect(autoApplied(rolledBack)).toBe(autoApplied(before))

    // The same approval and a proposal, committed this time, count once each.
    const approved = await approve()
    expect(approved.status, approved.text).toBe(200)
    const proposed = await p.propose("budget-change", cut(0.92, "telemetry, committed"))
    expect(proposed.status, proposed.text).toBe(201)
    expect(proposed.body).toMatchObject({ mode: "auto_applied" })
    const committed = await scrape(url)
    expect(approvedCount(committed) - approvedCount(rolledBack)).toBe(2)
    expect(autoApplied(committed) - autoApplied(rolledBack)).toBe(1)
    // Both on one campaign: the second to apply may meet drift and queue again; either way the worker is done.
    for (const settled of [actionId, proposalOf(proposed).actionId]) await p.settle(settled)
  })

  it("moves the sync, rate-limit and queue metrics when a sync runs, a caller is refused, a job waits for a worker process", async () => {
    const url = () => `${p.server.baseUrl}/metrics`
    const before = await scrape(url())

    // A sync started by hand: its rows and its duration.
    const path = { projectId: p.account.projectId }
    const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path }))
    const sync = await waitFor(
      "the sync to finish",
      () => p.api("key", (client) => client.warehouse.getSync({ path: { ...path, syncId } })),
      (s) => s.status !== "running"
    )
    expect(sync.status).toBe("succeeded")
    const synced = await scrape(url())
    expect(valueOf(synced, "acs_sync_rows_total") - valueOf(before, "acs_sync_rows_total")).toBe(sync.rowsWritten)
    expect(sync.rowsWritten).toBeGreaterThan(0)
    expect(valueOf(synced, "acs_sync_duration_seconds") - valueOf(before, "acs_sync_duration_seconds")).toBe(1)

    // Sign-ins for one address past the login limit (10 a minute): the eleventh is refused.
    const tries: Array<number> = []
    for (let i = 0; i < 11; i++) {
      tries.push((await call(`${p.server.api}/auth/login`, {
        method: "POST",
        body: { email: "metrics-limited@example.com", password: "not the password" }
      })).status)
    }
    expect(tries.at(-1)).toBe(429)
    const limited = await scrape(url())
    expect(valueOf(limited, "acs_rate_limited_total", { bucket: "login" }) - valueOf(before, "acs_rate_limited_total", { bucket: "login" }))
      .toBe(1)

    // A job waits while no worker runs on the instance.
    await p.restart({ WORKER_CONCURRENCY: "0" })
    let working = false
    try {
      const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
      const campaign = campaigns.filter((c) => !c.deleted && c.dailyBudgetMicros !== null).at(1)!
      const proposed = await p.propose("budget-change", {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.97 / 10_000) * 10_000,
        reason: "telemetry, a job waits"
      })
      expect(proposed.status, proposed.text).toBe(201)
      expect(valueOf(await scrape(url()), "acs_jobs_ready")).toBeGreaterThanOrEqual(1)

      // A worker process of its own (`acs worker`) applies it and serves its own counters on METRICS_PORT.
      const workerPort = await freePort()
      const workerMetrics = `http://127.0.0.1:${workerPort}/metrics`
      let workerLogs = ""
      const worker = spawn(process.execPath, [...nodeArgs("cli"), "worker"], {
        cwd: repoRoot,
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: process.env["HOME"] ?? "",
          ACS_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
          DATABASE_URL: p.database,
          SIMULATOR_URL: p.simulator.url,
          WORKER_POLL_MS: "200",
          METRICS_PORT: String(workerPort)
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      worker.stdout.on("data", (chunk: Buffer) => (workerLogs += chunk.toString()))
      worker.stderr.on("data", (chunk: Buffer) => (workerLogs += chunk.toString()))
      try {
        expect((await p.settle(proposalOf(proposed).actionId)).status, workerLogs).toBe("applied")
        const counted = await waitFor("the worker's apply lag", () => scrape(workerMetrics), (f) => valueOf(f, "acs_apply_lag_seconds") === 1, {
          ignoreErrors: true
        })
        expect(valueOf(counted, "acs_actions_total", { status: "applied" })).toBe(1)
        expect(valueOf(counted, "acs_upstream_requests_total", { endpoint: "PUT /campaigns/:id", status: "200" })).toBe(1)
        expect(valueOf(counted, "acs_jobs_ready")).toBe(0)
      } finally {
        expect(await stopProcess(worker)).toBe(0)
      }
      await p.restart()
      working = true
    } finally {
      // The later tests need the workers back.
      if (!working) await p.restart()
    }
  })

  it("is off by default", async () => {
    const plain = await p.startTwin({ METRICS_ENABLED: "false", METRICS_PORT: "", OTEL_EXPORTER_OTLP_ENDPOINT: "" })
    try {
      const answer = await call(`${plain.baseUrl}/metrics`)
      expect(answer.status).toBe(404)
      expect(answer.text).not.toContain("acs_http_requests_total")
    } finally {
      await plain.stop()
    }
  })

  it("serves the same on METRICS_PORT, and nothing else there", async () => {
    const own = `http://127.0.0.1:${metricsPort}`
    const families = await scrape(`${own}/metrics`)
    expect(families.map((f) => f.name)).toContain("acs_http_requests_total")
    expect((await call(`${own}/api/v1/accounts`, { key: BOOTSTRAP_KEY })).status).toBe(404)
  })
})

interface LogLine {
  readonly message: unknown
  readonly annotations?: Readonly<Record<string, unknown>>
}

const requestLines = (): Array<Readonly<Record<string, unknown>>> =>
  p.server.logs().split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return []
    try {
      const parsed = JSON.parse(line) as LogLine
      return parsed.message === "request" && parsed.annotations !== undefined ? [parsed.annotations] : []
    } catch {
      return []
    }
  })

describe("request log lines", () => {
  it("carry the principal, the operation, the MCP tool or RPC procedure, and the trace id", async () => {
    const [bootstrap] = await p.sql<{ keyId: string }>(
      "SELECT key_id AS \"keyId\" FROM api_keys WHERE secret_hash = encode(sha256($1::bytea), 'hex')",
      [BOOTSTRAP_KEY]
    )
    const requestId = "telemetry-log-1"
    const listed = await call(`${p.server.api}/accounts`, { key: BOOTSTRAP_KEY, headers: { "x-request-id": requestId } })
    expect(listed.status).toBe(200)
    const line = await waitFor("the request's log line", async () => requestLines().find((l) => l["requestId"] === requestId), (l) => l !== undefined)
    expect(line).toMatchObject({ keyId: bootstrap!.keyId, operation: "listAccounts", status: 200, path: "/api/v1/accounts" })
    expect(String(line!["traceId"])).toMatch(/^[0-9a-f]{32}$/)

    // A person, by their session.
    const personRequest = "telemetry-log-2"
    expect((await p.as("person", "GET", "/accounts", undefined, { "x-request-id": personRequest })).status).toBe(200)
    const personLine = await waitFor("the person's log line", async () => requestLines().find((l) => l["requestId"] === personRequest), (l) => l !== undefined)
    expect(personLine).toMatchObject({ operation: "listAccounts" })
    expect(String(personLine!["personId"])).not.toBe("")
    expect(personLine!["keyId"]).toBeUndefined()

    // An MCP tool call.
    const mcpRequest = "telemetry-log-3"
    const tool = toolName("listAccounts")
    const answered = await call(`${p.server.baseUrl}/mcp`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      headers: { accept: "application/json, text/event-stream", "x-request-id": mcpRequest },
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } }
    })
    expect(answered.status, answered.text).toBe(200)
    const mcpLine = await waitFor("the MCP call's log line", async () => requestLines().find((l) => l["requestId"] === mcpRequest), (l) => l !== undefined)
    expect(mcpLine).toMatchObject({ keyId: bootstrap!.keyId, tool, operation: "listAccounts", path: "/mcp" })

    // An RPC procedure.
    const rpcRequest = "telemetry-log-4"
    const rpc = await call(`${p.server.baseUrl}/rpc`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      headers: { "content-type": "application/ndjson", "x-request-id": rpcRequest },
      body: `${JSON.stringify({ _tag: "Request", id: "1", tag: "listAccounts", payload: {}, headers: [] })}\n`
    })
    expect(rpc.status, rpc.text).toBe(200)
    const rpcLine = await waitFor("the RPC call's log line", async () => requestLines().find((l) => l["requestId"] === rpcRequest), (l) => l !== undefined)
    expect(rpcLine).toMatchObject({ keyId: bootstrap!.keyId, rpc: "listAccounts", operation: "listAccounts", path: "/rpc" })
  })
})
