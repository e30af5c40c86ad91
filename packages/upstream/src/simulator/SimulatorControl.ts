/**
 * Test control, in process (`simulator.control`) and over HTTP under `/_control` (no auth):
 *
 *   GET    /_control/calls?method=&path=<regex>&since=<seq>  → {calls: CallRecord[]}
 *   DELETE /_control/calls                                   → {cleared}
 *   GET    /_control/faults                                  → {faults: [{id, spec, matched, fired, exhausted}]}
 *   POST   /_control/faults   body: FaultSpec | FaultSpec[] | {faults: FaultSpec[]} → {ids}
 *   DELETE /_control/faults                                  → {cleared}
 *   DELETE /_control/faults/{id}                             → {removed}
 *   POST   /_control/reset                                   → back to the seeded world; faults, calls
 *                                                              and restatement cleared (tokens stay valid)
 *   POST   /_control/restate                                 → {restatement}: the last 3 complete days change
 *   PUT    /_control/accounts/{orgId}/roles  body: {roleNames: string[]} → the account's acl
 *   POST   /_control/clock/advance  body: {hours?, days?}  → {advancedMs, now}: the simulated clock moves
 *                                                              ahead (never back); reports gain the new hours
 *   POST   /_control/scenarios  body: {entityId, installsPerTapPercent?, cptPercent?, everyDay?} → 201 {scenario}:
 *                                                              from the entity's today on, its (or its
 *                                                              children's) installs per tap / CPT change by X %,
 *                                                              and with everyDay it has no quiet day
 *   GET    /_control/scenarios                               → {scenarios}
 *   DELETE /_control/scenarios                               → {cleared}
 *   POST   /_control/tokens/expire                           → {expired}: every bearer token is refused
 *   GET    /_control/summary                                 → parent org, accounts, entity counts
 *   GET    /_control/credentials                             → the demo client's credentials, so another
 *                                                              process (acs with SIMULATOR_URL) can sign in
 *   POST   /_control/api-clients  body: {publicKeyPem}       → 201 {clientId, teamId, keyId}: an API client
 *                                                              created with a user-supplied public key, as
 *                                                              an Apple Ads admin does in the web UI (v1)
 *   PUT    /_control/rate-limit  body: {limit, windowSeconds, enforce} → the request budget per API client
 *                                                              (SimulatorRateLimit.ts); windows start afresh
 *
 * Entities are changed "outside acs" with the normal API and the demo credentials, like a person
 * using the platform's UI would.
 */
import { Either, Schema } from "effect"
import { momentOf } from "./SimulatorCalendar.ts"
import type { CallFilter, CallLog, CallRecord } from "./SimulatorCallLog.ts"
import { type FaultRegistry, type FaultSpec, FaultSpecError, type FaultStatus, decodeFaultSpec, firesOnInstall } from "./SimulatorFaults.ts"
import type { ApiClients, TokenStore } from "./SimulatorAuth.ts"
import type { RateLimitBudget, SimulatorRateLimit } from "./SimulatorRateLimit.ts"
import { type Answer, errorEnvelope } from "./SimulatorHttp.ts"
import type { Scenario } from "./SimulatorScenarios.ts"
import { READ_ONLY } from "./SimulatorSize.ts"
import type { SimulatorState } from "./SimulatorState.ts"
import { aclToWire } from "./SimulatorWire.ts"

export interface AccountSummary {
  readonly orgId: number
  readonly orgName: string
  readonly currency: string
  readonly timeZone: string
  readonly roleNames: ReadonlyArray<string>
  readonly campaigns: number
  readonly adGroups: number
  /** Live (not deleted) targeting keywords. */
  readonly keywords: number
}

export interface SimulatorSummary {
  readonly parentOrgId: number
  readonly restatement: number
  /** How far the clock was advanced through the control API. */
  readonly advancedMs: number
  readonly accounts: ReadonlyArray<AccountSummary>
}

const Positive = Schema.Int.pipe(Schema.greaterThan(0))
const RateLimitBody = Schema.Struct({ limit: Positive, windowSeconds: Positive, enforce: Schema.Boolean })

const RolesBody = Schema.Struct({ roleNames: Schema.Array(Schema.String) })

const NonNegative = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const AdvanceBody = Schema.Struct({ hours: Schema.optionalWith(NonNegative, { exact: true }), days: Schema.optionalWith(NonNegative, { exact: true }) })
/** Below -100 % a rate would be negative. */
const Percent = Schema.Number.pipe(Schema.finite(), Schema.greaterThanOrEqualTo(-100))
const ScenarioBody = Schema.Struct({
  entityId: Schema.Number.pipe(Schema.int()),
  installsPerTapPercent: Schema.optionalWith(Percent, { exact: true }),
  cptPercent: Schema.optionalWith(Percent, { exact: true }),
  everyDay: Schema.optionalWith(Schema.Boolean, { exact: true })
})

export interface ScenarioInput {
  /** A campaign, ad group or keyword id. */
  readonly entityId: number
  readonly installsPerTapPercent?: number
  readonly cptPercent?: number
  /** From then on it serves every day (no quiet days). */
  readonly everyDay?: boolean
}

export class SimulatorControl {
  constructor(
    private readonly state: SimulatorState,
    private readonly faults: FaultRegistry,
    private readonly calls: CallLog,
    private readonly tokens: TokenStore,
    private readonly clients: ApiClients,
    private readonly rateLimit: SimulatorRateLimit
  ) {}

  /** The request budget per API client from now on; every window starts afresh. */
  setRateLimit(budget: RateLimitBudget): void {
    this.rateLimit.set(budget)
  }

  /** Creates an API client for a user-supplied EC P-256 public key; null when the PEM is not one. */
  registerApiClient(publicKeyPem: string) {
    return this.clients.register(publicKeyPem)
  }

  /** Installs faults (a read-only switch without a trigger applies at once); returns their ids. */
  addFaults(specs: ReadonlyArray<FaultSpec>): Array<number> {
    return specs.map((spec) => {
      const id = this.faults.install(spec)
      if (firesOnInstall(spec)) {
        this.applyReadOnly(spec.orgId, spec.roleNames)
        this.faults.remove(id)
      }
      return id
    })
  }

  addFault(spec: FaultSpec): number {
    return this.addFaults([spec])[0]!
  }

  listFaults(): Array<FaultStatus> {
    return this.faults.list()
  }

  clearFaults(): number {
    return this.faults.clear()
  }

  listCalls(filter?: CallFilter): Array<CallRecord> {
    return this.calls.list(filter)
  }

  clearCalls(): number {
    return this.calls.clear()
  }

  reset(): void {
    this.state.reset()
    this.faults.clear()
    this.calls.clear()
  }

  /** Bumps the restatement counter: the last three complete days report slightly different values. */
  restate(): number {
    this.state.restatement += 1
    return this.state.restatement
  }

  /**
   * Moves the simulated clock ahead by hours and/or days (fractions allowed): the accounts' "today"
   * and hour follow, and reports gain the metrics of the new hours. Returns the total advance (ms).
   */
  advanceClock(by: { readonly hours?: number; readonly days?: number }): number {
    const ms = Math.round(((by.days ?? 0) * 24 + (by.hours ?? 0)) * 3_600_000)
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError("the clock only moves ahead")
    this.state.advancedMs += ms
    this.state.version++
    return this.state.advancedMs
  }

  /**
   * From the entity's current day on, its installs per tap and/or cost per tap change by the given
   * percentages (a campaign's or ad group's apply to everything under it); null when no such entity.
   */
  addScenario(input: ScenarioInput): Scenario | null {
    const found = this.state.entity(input.entityId)
    if (found === undefined || (found.kind !== "CAMPAIGN" && found.kind !== "ADGROUP" && found.kind !== "KEYWORD")) return null
    const campaign = this.state.campaignOf(found)
    const account = campaign === undefined ? undefined : this.state.account(campaign.orgId)
    if (account === undefined) return null
    const scenario: Scenario = {
      entityId: input.entityId,
      from: momentOf(this.state.now(account)),
      installsPerTapPercent: input.installsPerTapPercent ?? 0,
      cptPercent: input.cptPercent ?? 0,
      everyDay: input.everyDay ?? false
    }
    this.state.scenarios.add(scenario)
    this.state.version++
    return scenario
  }

  listScenarios(): Array<Scenario> {
    return this.state.scenarios.list()
  }

  clearScenarios(): number {
    this.state.version++
    return this.state.scenarios.clear()
  }

  /** Changes an account's roles (e.g. to "API Read Only"); false when there is no such account. */
  setRoles(orgId: number, roleNames: ReadonlyArray<string>): boolean {
    const account = this.state.account(orgId)
    if (account === undefined) return false
    account.roleNames = [...roleNames]
    return true
  }

  applyReadOnly(orgId: number, roleNames: ReadonlyArray<string> | undefined): void {
    this.setRoles(orgId, roleNames ?? [READ_ONLY])
  }

  expireTokens(): number {
    return this.tokens.expireAll()
  }

  summary(): SimulatorSummary {
    return {
      parentOrgId: this.state.world.parentOrgId,
      restatement: this.state.restatement,
      advancedMs: this.state.advancedMs,
      accounts: this.state.accounts.map((account) => ({
        orgId: account.orgId,
        orgName: account.orgName,
        currency: account.currency,
        timeZone: account.timeZone,
        roleNames: [...account.roleNames],
        campaigns: account.campaigns.filter((campaign) => !campaign.deleted).length,
        adGroups: account.campaigns.reduce((n, campaign) => n + (campaign.deleted ? 0 : campaign.adGroups.filter((a) => !a.deleted).length), 0),
        keywords: this.state.keywordCount(account)
      }))
    }
  }

  /** The `/_control/...` endpoints. */
  handle(method: string, path: string, query: URLSearchParams, body: unknown): Answer {
    const answer = (value: unknown): Answer => ({ status: 200, body: value })
    const refuse = (status: number, message: string): Answer => ({
      status,
      body: errorEnvelope([{ messageCode: status === 404 ? "NOT_FOUND" : "INVALID_INPUT", message, field: null }])
    })
    const route = `${method} ${path}`
    try {
      if (route === "GET /_control/calls") {
        const pathFilter = query.get("path")
        const method = query.get("method")
        const since = query.get("since")
        return answer({
          calls: this.calls.list({
            ...(method === null ? {} : { method }),
            ...(pathFilter === null ? {} : { path: new RegExp(pathFilter) }),
            ...(since === null ? {} : { since: Number(since) })
          })
        })
      }
      if (route === "DELETE /_control/calls") return answer({ cleared: this.clearCalls() })
      if (route === "GET /_control/faults") return answer({ faults: this.listFaults() })
      if (route === "POST /_control/faults") {
        const raw: unknown = typeof body === "object" && body !== null && !Array.isArray(body) && "faults" in body
          ? (body as { readonly faults: unknown }).faults
          : body
        const specs = (Array.isArray(raw) ? raw : [raw]).map(decodeFaultSpec)
        return answer({ ids: this.addFaults(specs) })
      }
      if (route === "DELETE /_control/faults") return answer({ cleared: this.clearFaults() })
      const faultId = /^DELETE \/_control\/faults\/(\d+)$/.exec(route)
      if (faultId) return answer({ removed: this.faults.remove(Number(faultId[1])) })
      if (route === "POST /_control/reset") {
        this.reset()
        return answer({ reset: true })
      }
      if (route === "POST /_control/restate") return answer({ restatement: this.restate() })
      if (route === "POST /_control/clock/advance") {
        const decoded = Schema.decodeUnknownEither(AdvanceBody)(body ?? {})
        if (Either.isLeft(decoded)) return refuse(400, "body must be {hours?: number ≥ 0, days?: number ≥ 0}")
        const advancedMs = this.advanceClock(decoded.right)
        return answer({ advancedMs, now: new Date(this.state.nowMs()).toISOString() })
      }
      if (route === "POST /_control/scenarios") {
        const decoded = Schema.decodeUnknownEither(ScenarioBody)(body)
        if (Either.isLeft(decoded)) return refuse(400, "body must be {entityId, installsPerTapPercent?, cptPercent?, everyDay?} (percentages ≥ -100)")
        const scenario = this.addScenario(decoded.right)
        return scenario === null ? refuse(404, `no campaign, ad group or keyword ${decoded.right.entityId}`) : { status: 201, body: { scenario } }
      }
      if (route === "GET /_control/scenarios") return answer({ scenarios: this.listScenarios() })
      if (route === "DELETE /_control/scenarios") return answer({ cleared: this.clearScenarios() })
      if (route === "POST /_control/tokens/expire") return answer({ expired: this.expireTokens() })
      if (route === "GET /_control/summary") return answer(this.summary())
      if (route === "GET /_control/credentials") return answer(this.clients.demo.credentials)
      if (route === "POST /_control/api-clients") {
        const pem = typeof body === "object" && body !== null && "publicKeyPem" in body ? body.publicKeyPem : undefined
        const ids = typeof pem === "string" ? this.registerApiClient(pem) : null
        return ids === null ? refuse(400, "expected {publicKeyPem}: an EC P-256 public key in PEM form") : { status: 201, body: ids }
      }
      if (route === "PUT /_control/rate-limit") {
        const decoded = Schema.decodeUnknownEither(RateLimitBody)(body)
        if (Either.isLeft(decoded)) return refuse(400, "body must be {limit: int > 0, windowSeconds: int > 0, enforce: boolean}")
        this.setRateLimit(decoded.right)
        return answer(decoded.right)
      }
      const roles = /^PUT \/_control\/accounts\/(\d+)\/roles$/.exec(route)
      if (roles) {
        const decoded = Schema.decodeUnknownEither(RolesBody)(body)
        if (Either.isLeft(decoded)) return refuse(400, "body must be {roleNames: string[]}")
        const account = this.state.account(Number(roles[1]))
        if (account === undefined) return refuse(404, `no account ${roles[1]}`)
        this.setRoles(account.orgId, decoded.right.roleNames)
        return answer(aclToWire(this.state.world, account))
      }
      return refuse(404, `no control endpoint ${route}`)
    } catch (error) {
      if (error instanceof FaultSpecError || error instanceof SyntaxError) return refuse(400, error.message)
      throw error
    }
  }
}
