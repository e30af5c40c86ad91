/**
 * The Apple Search Ads simulator: an in-process HTTP server speaking the platform's wire formats
 * (token endpoint, Campaign Management API v5 under `/api/v5/...` and Apple Ads Platform API v1 under
 * `/v1/...`, over one world), seeded with a generated org tree and deterministic metrics, with fault
 * injection, a change history of every write and a control API for tests. The real acs clients talk
 * to it unchanged: point the token URL at `tokenUrl`, the API base at `apiUrl` (v5) or `apiV1Url` (v1)
 * and sign with `credentials`. `webUiWrite` makes a change as a person in Apple's web UI would.
 *
 *   const simulator = await startSimulator({ seed: 7, size: "demo" })
 *   ...
 *   await simulator.close()
 *
 * or, in Effect, `acquireSimulator(options)` (scoped) / `SimulatorInstance.layer(options)`.
 */
import { Context, Data, Effect, Layer, type Scope } from "effect"
import type { ReportLevel } from "../Upstream.ts"
import { isoFromDay } from "./SimulatorCalendar.ts"
import { ApiClients, registerDemoClient, type SimulatorCredentials, TokenStore } from "./SimulatorAuth.ts"
import { CallLog } from "./SimulatorCallLog.ts"
import { SimulatorControl } from "./SimulatorControl.ts"
import { type FaultSpec, FaultRegistry } from "./SimulatorFaults.ts"
import { JsonText } from "./SimulatorHttp.ts"
import { computeTotals, type SimulatorTotals } from "./SimulatorReports.ts"
import { API_PREFIX, SimulatorServer, TOKEN_PATH } from "./SimulatorServer.ts"
import { type RateLimitBudget, SimulatorRateLimit } from "./SimulatorRateLimit.ts"
import { isReadOnly, resolveSize, type SimulatorSizeOption } from "./SimulatorSize.ts"
import { SimulatorState } from "./SimulatorState.ts"

export type { SimulatorCredentials } from "./SimulatorAuth.ts"
export type { CallRecord } from "./SimulatorCallLog.ts"
export type { ScenarioInput, SimulatorControl, SimulatorSummary } from "./SimulatorControl.ts"
export type { Scenario } from "./SimulatorScenarios.ts"
export type { FaultSpec } from "./SimulatorFaults.ts"
export type { RateLimitBudget } from "./SimulatorRateLimit.ts"
export type { SimulatorTotals, SimulatorTotalsRow } from "./SimulatorReports.ts"
export type { AccountPlan, SimulatorSize, SimulatorSizeOption } from "./SimulatorSize.ts"
export { benchSize, demoSize } from "./SimulatorSize.ts"

export interface SimulatorOptions {
  /** Everything generated follows from it; default 1. */
  readonly seed?: number
  /** 0 (default) picks a free port. */
  readonly port?: number
  /** Default 127.0.0.1. */
  readonly host?: string
  /** "demo" (default), "bench" (one account with 100,000 keywords) or custom account plans. */
  readonly size?: SimulatorSizeOption
  /** Faults installed at start (see SimulatorFaults). */
  readonly faults?: ReadonlyArray<FaultSpec>
  /** Bearer token lifetime; default 3,600 s as on the platform. */
  readonly tokenLifetimeSeconds?: number
  /**
   * "Now" of the simulated calendar (which day is today, how much of it has passed), in epoch ms;
   * default Date.now. Fix it for report answers that do not move with the hour. Tokens and client
   * secrets always follow the wall clock.
   */
  readonly clock?: () => number
  /**
   * The request budget per API client, advertised in v1's `RateLimit-*` headers; default 600 per 60 s, not
   * enforced. With `enforce`, a request beyond it is answered 429 with `Retry-After`.
   */
  readonly rateLimit?: RateLimitBudget
}

export interface SimulatorAccount {
  readonly orgId: number
  readonly orgName: string
  readonly currency: string
  readonly timeZone: string
  readonly roleNames: ReadonlyArray<string>
  readonly readOnly: boolean
}

export interface Simulator {
  /** e.g. http://127.0.0.1:53211 */
  readonly url: string
  /** `${url}/api/v5`: the base the client puts resource paths on. */
  readonly apiUrl: string
  /** `${url}/v1`: the same world as the Apple Ads Platform API v1. */
  readonly apiV1Url: string
  /** `${url}/auth/oauth2/token`: stands in for https://appleid.apple.com/auth/oauth2/token. */
  readonly tokenUrl: string
  readonly seed: number
  readonly credentials: SimulatorCredentials
  readonly parentOrgId: number
  /** The accounts (child orgs) as they are now: roles change with faults and the control API. */
  readonly accounts: ReadonlyArray<SimulatorAccount>
  readonly control: SimulatorControl
  /**
   * A write "from the web UI" (userType CUSTOMER in the change history): a v1 call, e.g.
   * `{adAccountId, method: "PUT", path: "/v1/campaigns/123", body: {status: "PAUSED"}}`; also served
   * over HTTP as `POST /_control/web-ui`. Answers the v1 answer's status and body.
   */
  readonly webUiWrite: (input: WebUiWrite) => { readonly status: number; readonly body: unknown }
  /** The account's current day (YYYY-MM-DD in its time zone): the last day reports have data for. */
  readonly today: (accountId: number | string) => string
  /** The simulator's own totals: see `simulatorTotals`. */
  readonly totals: (
    accountId: number | string,
    level: ReportLevel,
    startDate: string,
    endDate: string,
    campaignId?: number | string
  ) => SimulatorTotals
  readonly close: () => Promise<void>
}

export interface WebUiWrite {
  readonly adAccountId: number
  readonly method: "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly body?: unknown
  /** Who the web UI user is; default web-ui-user@example.com. */
  readonly user?: string
}

export const startSimulator = async (options: SimulatorOptions = {}): Promise<Simulator> => {
  const seed = options.seed ?? 1
  const clock = options.clock ?? Date.now
  const state = new SimulatorState(seed, resolveSize(options.size), clock)
  const client = registerDemoClient(seed)
  const clients = new ApiClients(client)
  const tokens = new TokenStore(options.tokenLifetimeSeconds ?? 3600)
  const faults = new FaultRegistry()
  const calls = new CallLog()
  const rateLimit = new SimulatorRateLimit(options.rateLimit)
  const control = new SimulatorControl(state, faults, calls, tokens, clients, rateLimit)
  control.addFaults(options.faults ?? [])
  const server = new SimulatorServer({ state, clients, tokens, faults, calls, control, rateLimit })
  const url = await server.listen(options.port ?? 0, options.host ?? "127.0.0.1")
  const accountOf = (accountId: number | string) => {
    const account = state.account(Number(accountId))
    if (account === undefined) throw new Error(`no simulator account ${accountId}`)
    return account
  }
  return {
    url,
    apiUrl: `${url}${API_PREFIX}`,
    apiV1Url: `${url}/v1`,
    tokenUrl: `${url}${TOKEN_PATH}`,
    seed,
    credentials: client.credentials,
    get parentOrgId() {
      return state.world.parentOrgId
    },
    get accounts() {
      return state.accounts.map((account) => ({
        orgId: account.orgId,
        orgName: account.orgName,
        currency: account.currency,
        timeZone: account.timeZone,
        roleNames: [...account.roleNames],
        readOnly: isReadOnly(account.roleNames)
      }))
    },
    control,
    webUiWrite: (input) => {
      const answer = server.webUi(input, "web-ui")
      return { status: answer.status, body: answer.body instanceof JsonText ? answer.body.toJSON() : answer.body }
    },
    today: (accountId) => isoFromDay(state.now(accountOf(accountId)).day),
    totals: (accountId, level, startDate, endDate, campaignId) =>
      computeTotals(state, accountOf(accountId), level, startDate, endDate, campaignId === undefined ? undefined : Number(campaignId)),
    close: () => server.close()
  }
}

/**
 * The simulator's own totals for an account (ids as numbers or acs's strings) at a report level over
 * [startDate, endDate] (YYYY-MM-DD in the account's time zone), optionally for one campaign: the sum
 * plus one row per entity with metrics, in acs terms (installs = tapInstalls, spend in micros). Tests
 * compare a warehouse against it.
 */
export const simulatorTotals = (
  simulator: Simulator,
  accountId: number | string,
  level: ReportLevel,
  startDate: string,
  endDate: string,
  options: { readonly campaignId?: number | string } = {}
): SimulatorTotals => simulator.totals(accountId, level, startDate, endDate, options.campaignId)

export class SimulatorStartError extends Data.TaggedError("SimulatorStartError")<{ readonly cause: unknown }> {}

/** Starts a simulator for the scope and closes it when the scope closes. */
export const acquireSimulator = (options: SimulatorOptions = {}): Effect.Effect<Simulator, SimulatorStartError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => startSimulator(options), catch: (cause) => new SimulatorStartError({ cause }) }),
    (simulator) => Effect.promise(() => simulator.close())
  )

/** A running simulator as a service, for layers that need its URL and credentials. */
export class SimulatorInstance extends Context.Tag("@acs/upstream/SimulatorInstance")<SimulatorInstance, Simulator>() {
  static readonly layer = (options: SimulatorOptions = {}): Layer.Layer<SimulatorInstance, SimulatorStartError> =>
    Layer.scoped(SimulatorInstance, acquireSimulator(options))
}
