/**
 * The change pipeline end to end: a simulator, a fresh PostgreSQL database and the real server process
 * syncing the simulator's demo org; a person (whose proposals may auto-apply) and the bootstrap key (whose
 * never do); the real upstream client to look at and change the simulator "outside acs"; and polling helpers.
 */
import { makeAppleSearchAdsClient } from "@acs/upstream/AppleSearchAdsClient"
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import type { UpstreamClient, UpstreamFailure } from "@acs/upstream/Upstream"
import { type Account, AccountList } from "@acs/domain/Accounts"
import { ActionRecord, ProposalResponse } from "@acs/domain/Actions"
import { ErrorBodies, type ValidationFailed } from "@acs/domain/Errors"
import { SyncList } from "@acs/domain/Warehouse"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import { type Effect, ManagedRuntime, Schema } from "effect"
import { type ApiClient, withApi } from "./apiClient.ts"
import { createDatabase, query } from "./database.ts"
import { type Answer, BOOTSTRAP_KEY, call, type RunningServer, startServer } from "./server.ts"
import { waitFor } from "./wait.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "@acs/upstream/UpstreamTransport"

export const ADMIN_EMAIL = "admin@pipeline.example"
export const ADMIN_PASSWORD = "pipeline-password-0123456789"

/**
 * Who calls: the signed-in admin person, the bootstrap key, or a second approver (a write + canApprove key an
 * operator made, so four eyes counts it apart from both proposers).
 */
export type Caller = "person" | "key" | "approver"

const APPROVER_KEY = "acs_test_second_approver_0123456789abcdefghijklmn"

/** An action as the API answers it (the contract's schema). */
export type ActionView = ActionRecord

/** An account as the API lists it. */
export type AccountView = Account

export interface Pipeline {
  readonly simulator: Simulator
  readonly database: string
  server: RunningServer
  /** The USD account (writable), and the read-only one. */
  readonly account: AccountView
  readonly readOnlyAccount: AccountView
  /** Another writable account (EUR): room for a file's tests that must not share campaigns with `account`'s. */
  readonly secondAccount: AccountView
  /** The real client, connected to the simulator: the upstream as anyone else sees it. */
  readonly upstream: UpstreamClient
  readonly run: <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>) => Promise<A>
  /** Calls /api/v1 as the signed-in admin person or with the bootstrap key. */
  readonly as: (caller: Caller, method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>
  /** The same callers through the typed REST client (apiClient.ts), for tests of behaviour rather than of the wire. */
  readonly api: <A, E>(caller: Caller, use: (client: ApiClient) => Effect.Effect<A, E>) => Promise<A>
  /** POST /accounts/{account}/actions/{kindPath}. */
  readonly propose: (
    kindPath: string,
    body: Record<string, unknown>,
    options?: { readonly as?: Caller; readonly idempotencyKey?: string; readonly projectId?: string }
  ) => Promise<Answer>
  readonly action: (actionId: string, projectId?: string) => Promise<ActionView>
  /** The secret of the second approver's key (`as("approver", …)`), for the RPC and MCP clients. */
  readonly approverKey: () => Promise<string>
  /**
   * Sets a campaign's daily budget (whole cents) in Apple's web UI, as someone outside acs, in `account` unless
   * another is given; fails unless it took.
   */
  readonly setBudgetOutsideAcs: (campaignId: string, dailyBudgetMicros: number, inAccount?: AccountView) => void
  /**
   * Polls the action until its status is one of `statuses` (when not given: any state the worker leaves it in);
   * fails after minutes (wait.ts), naming the status it stayed in.
   */
  readonly settle: (actionId: string, statuses?: ReadonlyArray<string>, projectId?: string) => Promise<ActionView>
  readonly sql: <Row extends Record<string, unknown>>(text: string, values?: ReadonlyArray<unknown>) => Promise<Array<Row>>
  /** Starts another server process on the same database and simulator. */
  readonly startTwin: (extraEnv?: Record<string, string>) => Promise<RunningServer>
  readonly restart: (extraEnv?: Record<string, string>) => Promise<void>
  readonly close: () => Promise<void>
}

/** A proposal endpoint's answer, decoded with the contract's schema (it throws on anything else, a refusal included). */
export const proposalOf = (answer: Answer): ProposalResponse => Schema.decodeUnknownSync(ProposalResponse)(answer.body)

/** A 422 validation_failed's error (its reasons and the failed row's `action_id`), decoded with the contract's schema. */
export const validationFailureOf = (answer: Answer): ValidationFailed => Schema.decodeUnknownSync(ErrorBodies.ValidationFailed)(answer.body)

export const SETTLED = ["applied", "failed", "proposed", "rejected", "reverted"] as const

/** `database`: a database of another PostgreSQL (the Citus coordinator) instead of a fresh one of the suite's. */
export const startPipeline = async (
  options: { readonly seed?: number; readonly env?: Record<string, string>; readonly node?: string; readonly database?: string } = {}
): Promise<Pipeline> => {
  const simulator = await startSimulator({ seed: options.seed ?? 5, size: "demo" })
  const database = options.database ?? await createDatabase()
  const env = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    SIMULATOR_URL: simulator.url,
    ACS_DEMO: "true",
    SYNC_INTERVAL_MINUTES: "0",
    RATE_LIMIT_READ: "100000",
    RATE_LIMIT_WRITE: "100000",
    RATE_LIMIT_EXPENSIVE: "100000",
    WORKER_POLL_MS: "200",
    ...options.env,
    ...extra
  })
  const servers: Array<RunningServer> = []
  const launch = async (extra?: Record<string, string>) => {
    const started = await startServer(env(extra), options.node === undefined ? {} : { node: options.node })
    servers.push(started)
    return started
  }
  let server = await launch()

  // Wait for the demo import and every first sync.
  const imported = await waitFor(
    "the demo import and every account's first sync",
    async () => {
      const listed = await call(`${server.api}/accounts`, { key: BOOTSTRAP_KEY })
      const found = Schema.decodeUnknownSync(AccountList)(listed.body).accounts
      const syncs = await Promise.all(found.map(async (a) => {
        const answer = await call(`${server.api}/accounts/${a.projectId}/syncs`, { key: BOOTSTRAP_KEY })
        return Schema.decodeUnknownSync(SyncList)(answer.body).syncs[0]?.status ?? "none"
      }))
      return { accounts: found, syncs }
    },
    ({ accounts, syncs }) => accounts.length > 0 && syncs.every((status) => status === "succeeded"),
    { intervalMs: 250, show: ({ accounts, syncs }) => `${accounts.length} accounts, last syncs ${syncs.join(", ")}\n${server.logs().slice(-4000)}` }
  ).catch(async (error: unknown) => {
    await Promise.all([server.stop(), simulator.close()])
    throw error
  })
  const accounts = imported.accounts
  const account = accounts.find((a) => a.currency === "USD" && !a.readOnly)
  const readOnlyAccount = accounts.find((a) => a.readOnly)
  const secondAccount = accounts.find((a) => a.currency === "EUR" && !a.readOnly)
  if (account === undefined || readOnlyAccount === undefined || secondAccount === undefined) throw new Error(`demo accounts missing:\n${server.logs()}`)

  let cookie = ""
  const signIn = async () => {
    const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } })
    const line = login.headers.getSetCookie().find((l) => l.startsWith("acs_session="))
    if (line === undefined) throw new Error(`login failed: ${login.status} ${login.text}`)
    cookie = line.split(";")[0]!
  }
  await signIn()

  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>) => runtime.runPromise(effect)
  const upstream = await run(makeAppleSearchAdsClient(
    { apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl },
    simulator.credentials,
    // A generous timeout: only a hang detector on a busy machine (the simulator runs in this process).
    { maxRetries: 0, baseDelayMs: 10, maxDelayMs: 100, timeoutMs: 60_000 }
  ))

  let approverKey: Promise<string> | undefined
  const makeApproverKey = async () => {
    await query(
      database,
      `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, created_by)
       SELECT 'key_second_approver', org_id, 'second approver', encode(sha256($1::bytea), 'hex'), 'write', true, 'org', '[]', 'operator'
       FROM orgs ORDER BY created_at LIMIT 1`,
      [APPROVER_KEY]
    )
    return APPROVER_KEY
  }
  const secondApprover = () => (approverKey ??= makeApproverKey())

  const as: Pipeline["as"] = async (caller, method, path, body, headers = {}) =>
    call(`${pipeline.server.api}${path}`, {
      method,
      body,
      ...(caller === "person" ? { headers: { ...headers, cookie } } : {
        key: caller === "key" ? BOOTSTRAP_KEY : await secondApprover(),
        headers
      })
    })

  const api: Pipeline["api"] = async (caller, use) =>
    withApi(pipeline.server.baseUrl, caller === "person" ? { cookie } : caller === "key" ? BOOTSTRAP_KEY : await secondApprover(), use)

  const action = async (actionId: string, projectId = account.projectId) => {
    const answer = await as("key", "GET", `/accounts/${projectId}/actions/${actionId}`)
    if (answer.status !== 200) throw new Error(`GET action ${actionId}: ${answer.status} ${answer.text}`)
    return Schema.decodeUnknownSync(ActionRecord)(answer.body)
  }

  const pipeline: Pipeline = {
    simulator,
    database,
    server,
    account,
    readOnlyAccount,
    secondAccount,
    upstream,
    run,
    as,
    api,
    propose: (kindPath, body, opts = {}) =>
      as(
        opts.as ?? "person",
        "POST",
        `/accounts/${opts.projectId ?? account.projectId}/actions/${kindPath}`,
        body,
        opts.idempotencyKey === undefined ? {} : { "idempotency-key": opts.idempotencyKey }
      ),
    action,
    approverKey: secondApprover,
    setBudgetOutsideAcs: (campaignId, dailyBudgetMicros, inAccount = account) => {
      const answer = simulator.webUiWrite({
        adAccountId: Number(inAccount.upstreamAccountId),
        method: "PUT",
        path: `/v1/campaigns/${campaignId}`,
        body: { dailyBudget: { value: { amount: (dailyBudgetMicros / 1_000_000).toFixed(2), currency: inAccount.currency } } },
        user: "web-ui-user@example.com"
      })
      if (answer.status !== 200) throw new Error(`the web-UI write answered ${answer.status}: ${JSON.stringify(answer.body)}`)
    },
    settle: (actionId, statuses = SETTLED, projectId) =>
      waitFor(`action ${actionId} to be ${statuses.join(" or ")}`, () => action(actionId, projectId), (last) => statuses.includes(last.status), {
        intervalMs: 50,
        show: (last) => `${last.status}\n${pipeline.server.logs().slice(-4000)}`
      }),
    sql: (text, values) => query(database, text, values),
    startTwin: (extra) => launch(extra),
    restart: async (extra) => {
      await pipeline.server.stop()
      server = await launch(extra)
      pipeline.server = server
      await signIn()
    },
    close: async () => {
      await Promise.all(servers.map((s) => s.stop()))
      await runtime.dispose()
      await simulator.close()
    }
  }
  return pipeline
}

/**
 * For the tests of the apply under injected upstream faults: the account's circuit breaker (docs/contract.md 3.3)
 * would pause its auto-apply after their failures, so it opens only after many more. guardrails.test.ts tests it.
 */
export const tolerateUpstreamFaults = async (pipeline: Pipeline, projectId = pipeline.account.projectId) => {
  const answer = await pipeline.as("person", "PUT", `/accounts/${projectId}/guardrails`, {
    ...DEFAULT_GUARDRAILS,
    circuitBreaker: { failures: 1_000, windowMinutes: 1 }
  })
  if (answer.status !== 200) throw new Error(`PUT guardrails: ${answer.status} ${answer.text}`)
}
