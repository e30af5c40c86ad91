/**
 * The access matrix (docs/contract.md 5 and 7): every operation of the operation table × every
 * kind of principal (API keys of each scope, grant and binding, people of each role, bad credentials, a
 * key of another org) × every way of naming an account, against the real started server, on each of its
 * three surfaces: REST, typed RPC (`/rpc`, with AcsClient) and the MCP tool server (`/mcp`, with the SDK client).
 *
 * The expected answer is derived from the operation table by `expectedAccess`, a small pure function
 * written here from the SPEC (not from the server's code); each operation has a sample request that
 * succeeds when access is granted. REST is held to `expectedAccess`; RPC and MCP are held to REST's answer
 * to the same case (one contract, docs/decisions/surfaces.md): the same SPEC envelope on a refusal, a success that
 * passes the same checks (and the same body where calls side by side cannot differ).
 *
 * The surfaces' own rules, from README.md and docs/decisions/surfaces.md: RPC and MCP take the Authorization header
 * only, so person principals (session cookies) are REST cases, and a valid session is checked to be refused
 * on both; a bad credential is RPC's `Unauthorized` and /mcp's HTTP 401 before MCP parses anything (a raw
 * tools/call per case, plus the SDK client's refused connection per principal); the human-only operations
 * are no tools: not listed, and a call answers `not_found`.
 *
 * The 23 proposal operations share one access row: it runs in full for the first, and each other keeps the
 * cases that fail when it is wired to any other check, on every surface (`WIRING_CASES`).
 *
 * All requests are made up front in parallel chunks, a case's surfaces side by side; each case is then its
 * own `it`, named `<surface>: operation × principal → account`.
 */
import { AcsClient, RPC_PATH } from "@acs/domain/AcsClient"
import { ApprovalList } from "@acs/domain/Actions"
import { Api } from "@acs/domain/Api"
import { ApiKey, CreatedKey } from "@acs/domain/ApiKeys"
import { isAcsError, toEnvelope } from "@acs/domain/Errors"
import { type Operation, type OperationName, Operations, type Scope } from "@acs/domain/Operations"
import { Event } from "@acs/domain/Events"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import type { Root } from "@acs/domain/FourEyes"
import { type ProposalKindName, proposalKinds, type ProposalOperationName } from "@acs/domain/ProposalKinds"
import { AcsErrorSchema, AcsRpcs, operationEndpoints, operationRpcGroup } from "@acs/domain/Rpcs"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Rpc, RpcClient, RpcGroup, RpcSerialization } from "@effect/rpc"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime, Option, Schema, Stream } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hashPassword } from "../src/auth/Secrets.ts"
import { createDatabase, insertAccount, insertOrg, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

// ---------------------------------------------------------------------------------------------------------
// The world: two orgs. The main org (seeded by the server) holds accounts A and B; the other org holds B2.
// ---------------------------------------------------------------------------------------------------------

type OrgName = "main" | "other"

const A = "prj_matrix_a"
const B = "prj_matrix_b"
const B2 = "prj_matrix_b2"
const CURRENT = "current"
const OTHER_ORG_ID = "org_matrix_other"
const ACCOUNT_ORG: Readonly<Record<string, OrgName>> = { [A]: "main", [B]: "main", [B2]: "other" }
/** Every way an account operation is called: an account in reach of a subset key, one outside it, another org's, `current`. */
const TARGETS = [A, B, B2, CURRENT] as const

const PASSWORD = "matrix-password-0123456789"

// ---------------------------------------------------------------------------------------------------------
// Principals
// ---------------------------------------------------------------------------------------------------------

type Binding =
  | { readonly kind: "org" }
  | { readonly kind: "subset"; readonly projectIds: ReadonlyArray<string> }
  | { readonly kind: "account"; readonly projectId: string }

type Role = "viewer" | "editor" | "approver" | "admin"

/** What a valid credential holds. */
interface Holder {
  readonly kind: "key" | "person"
  readonly scope: Scope
  readonly canApprove: boolean
  readonly binding: Binding
  readonly org: OrgName
  readonly role: Role | null
}

type Setup =
  | { readonly type: "key"; readonly state: "valid" | "expired" | "revoked" }
  /** A key its admin person made, after an admin disabled that person or demoted them to viewer. */
  | { readonly type: "personKey"; readonly creator: "disabled" | "demoted" }
  | { readonly type: "person"; readonly role: Role }
  | { readonly type: "session"; readonly state: "ended" | "expired" }
  | { readonly type: "unknownKey" }
  | { readonly type: "none" }

interface PrincipalSpec {
  readonly name: string
  /** Undefined for every credential that must be refused with 401. */
  readonly holder: Holder | undefined
  /** The org whose rows the principal lives in (for bad credentials: the main org). */
  readonly org: OrgName
  readonly setup: Setup
  /** Key rows: scope, grant and binding as stored. */
  readonly row?: { readonly scope: Scope; readonly canApprove: boolean; readonly binding: Binding }
}

/** docs/contract.md 5.4, restated here so that the server's own table is under test too. */
const ROLE_ACCESS: Readonly<Record<Role, { readonly scope: Scope; readonly canApprove: boolean }>> = {
  viewer: { scope: "read", canApprove: false },
  editor: { scope: "write", canApprove: false },
  approver: { scope: "write", canApprove: true },
  admin: { scope: "admin", canApprove: true }
}

const BINDINGS: ReadonlyArray<{ readonly label: string; readonly binding: Binding }> = [
  { label: "org-wide", binding: { kind: "org" } },
  { label: "subset[A]", binding: { kind: "subset", projectIds: [A] } },
  { label: "account[A]", binding: { kind: "account", projectId: A } }
]

const keyPrincipal = (name: string, org: OrgName, scope: Scope, canApprove: boolean, binding: Binding): PrincipalSpec => ({
  name,
  holder: { kind: "key", scope, canApprove, binding, org, role: null },
  org,
  setup: { type: "key", state: "valid" },
  row: { scope, canApprove, binding }
})

const badKey = (name: string, state: "expired" | "revoked"): PrincipalSpec => ({
  name,
  holder: undefined,
  org: "main",
  setup: { type: "key", state },
  // Everything a key can hold: only the credential's state may explain the refusal.
  row: { scope: "admin", canApprove: true, binding: { kind: "org" } }
})

const PRINCIPALS: ReadonlyArray<PrincipalSpec> = [
  ...(["read", "write", "admin"] as const).flatMap((scope) =>
    [false, true].flatMap((canApprove) =>
      BINDINGS.map(({ binding, label }) =>
        keyPrincipal(`key ${scope}${canApprove ? "+canApprove" : ""} ${label}`, "main", scope, canApprove, binding)
      )
    )
  ),
  ...(["viewer", "editor", "approver", "admin"] as const).map((role): PrincipalSpec => ({
    name: `person ${role}`,
    holder: { kind: "person", ...ROLE_ACCESS[role], binding: { kind: "org" }, org: "main", role },
    org: "main",
    setup: { type: "person", role }
  })),
  keyPrincipal("key admin+canApprove org-wide of ANOTHER org", "other", "admin", true, { kind: "org" }),
  badKey("key expired", "expired"),
  badKey("key revoked", "revoked"),
  // A key never holds more than its person holds now (docs/contract.md 5.2).
  { ...badKey("admin key of a disabled admin", "revoked"), setup: { type: "personKey", creator: "disabled" } },
  {
    name: "admin+canApprove key of an admin demoted to viewer",
    holder: { kind: "key", scope: "read", canApprove: false, binding: { kind: "org" }, org: "main", role: null },
    org: "main",
    setup: { type: "personKey", creator: "demoted" },
    row: { scope: "admin", canApprove: true, binding: { kind: "org" } }
  },
  { name: "key unknown", holder: undefined, org: "main", setup: { type: "unknownKey" } },
  { name: "no credentials", holder: undefined, org: "main", setup: { type: "none" } },
  { name: "session ended", holder: undefined, org: "main", setup: { type: "session", state: "ended" } },
  { name: "session expired", holder: undefined, org: "main", setup: { type: "session", state: "expired" } }
]

// ---------------------------------------------------------------------------------------------------------
// The expected answer, from the operation table and docs/contract.md 5 alone
// ---------------------------------------------------------------------------------------------------------

const RANK: Readonly<Record<Scope, number>> = { read: 1, write: 2, admin: 3 }

const reachesAccount = (binding: Binding, projectId: string): boolean =>
  binding.kind === "org" ||
  (binding.kind === "subset" && binding.projectIds.includes(projectId)) ||
  (binding.kind === "account" && binding.projectId === projectId)

type Expected =
  | { readonly allowed: true; readonly holder: Holder; readonly account: string | undefined }
  | {
    readonly allowed: false
    readonly status: number
    readonly code: string
    /** Fields the error must carry, with these values. */
    readonly fields?: Readonly<Record<string, string>>
    /** Fields the error must not carry. */
    readonly absent?: ReadonlyArray<string>
  }

/**
 * docs/contract.md 5, checked in this order: credentials (401), scope rank, the canApprove grant, org-level operations
 * refusing account-bound keys, `current` needing an account-bound key, then account reach (which includes
 * org isolation: another org's account is out of reach, never a 404).
 */
const expectedAccess = (op: Operation, holder: Holder | undefined, target: string | undefined): Expected => {
  if (holder === undefined) return { allowed: false, status: 401, code: "unauthorized" }
  if (RANK[holder.scope] < RANK[op.scope]) {
    return {
      allowed: false,
      status: 403,
      code: "forbidden_scope",
      fields: { required_scope: op.scope, key_scope: holder.scope },
      absent: ["required_grant"]
    }
  }
  if (op.grant === "approve" && !holder.canApprove) {
    return { allowed: false, status: 403, code: "forbidden_scope", fields: { required_grant: "approve" }, absent: ["required_scope"] }
  }
  if (op.orgLevel === true && holder.binding.kind === "account") return { allowed: false, status: 403, code: "forbidden_scope" }
  if (op.account !== true) return { allowed: true, holder, account: undefined }
  const projectId = target === CURRENT ? (holder.binding.kind === "account" ? holder.binding.projectId : undefined) : target
  if (projectId === undefined) return { allowed: false, status: 400, code: "invalid_request" }
  if (ACCOUNT_ORG[projectId] !== holder.org || !reachesAccount(holder.binding, projectId)) {
    return { allowed: false, status: 403, code: "account_mismatch" }
  }
  return { allowed: true, holder, account: projectId }
}

// ---------------------------------------------------------------------------------------------------------
// Runtime state, filled in by beforeAll
// ---------------------------------------------------------------------------------------------------------

let database: string
let server: RunningServer
const orgIds: Record<OrgName, string> = { main: "", other: OTHER_ORG_ID }
/** Request headers that present each principal's credential. */
const credentials = new Map<string, Record<string, string>>()
/** The key id of each key principal. */
const keyIds = new Map<string, string>()
/** Every key id inserted per org, for the isolation checks of listKeys. */
const keysOfOrg: Record<OrgName, Array<string>> = { main: [], other: [] }
const personIds = new Map<Role, string>()

const sha256 = (value: string): string => Crypto.createHash("sha256").update(value).digest("hex")
const randomToken = (): string => Crypto.randomBytes(24).toString("base64url")
let keyCounter = 0

const insertKey = async (
  org: OrgName,
  spec: { readonly scope: Scope; readonly canApprove: boolean; readonly binding: Binding },
  state: "valid" | "expired" | "revoked" = "valid",
  /** The person the key answers to (made by them); none: an org key. */
  rootPersonId: string | null = null
): Promise<{ readonly keyId: string; readonly secret: string }> => {
  const keyId = `key_matrix_${++keyCounter}_${Crypto.randomBytes(4).toString("hex")}`
  const secret = `acs_${randomToken()}`
  const projectIds = spec.binding.kind === "org" ? [] : spec.binding.kind === "subset" ? spec.binding.projectIds : [spec.binding.projectId]
  await query(
    database,
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, expires_at, revoked_at,
                           created_by, root_person_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb,
             CASE WHEN $9 = 'expired' THEN now() - interval '1 hour' ELSE now() + interval '1 day' END,
             CASE WHEN $9 = 'revoked' THEN now() ELSE NULL END,
             CASE WHEN $10::text IS NULL THEN 'operator' ELSE 'person:' || $10 END, $10)`,
    [keyId, orgIds[org], `matrix ${keyId}`, sha256(secret), spec.scope, spec.canApprove, spec.binding.kind, JSON.stringify(projectIds), state, rootPersonId]
  )
  keysOfOrg[org].push(keyId)
  return { keyId, secret }
}

const emailOf = (role: Role): string => `${role}@matrix.example`

let personCounter = 0

/** A viewer of the org, for the people operations to change. */
const insertPerson = async (org: OrgName): Promise<string> => {
  const personId = `psn_matrix_${++personCounter}_${Crypto.randomBytes(4).toString("hex")}`
  await query(
    database,
    "INSERT INTO people (person_id, org_id, email, name, role, password_hash) VALUES ($1, $2, $3, 'Matrix Person', 'viewer', 'unused')",
    [personId, orgIds[org], `${personId}@matrix.example`]
  )
  return personId
}

const sessionCookie = (answer: Answer): string => {
  const cookie = answer.headers.getSetCookie().find((line) => line.startsWith("acs_session="))
  if (cookie === undefined) throw new Error(`login set no acs_session cookie: ${answer.status} ${answer.text}`)
  return cookie.split(";")[0]!
}

/** Signs a person in with POST /auth/login; the headers that carry the session cookie. */
const login = async (role: Role): Promise<Record<string, string>> => {
  const answer = await call(`${server.api}/auth/login`, { method: "POST", body: { email: emailOf(role), password: PASSWORD } })
  if (answer.status !== 200) throw new Error(`login as ${role} failed: ${answer.status} ${answer.text}`)
  return { cookie: sessionCookie(answer) }
}

const insertSession = async (state: "ended" | "expired"): Promise<Record<string, string>> => {
  const token = randomToken()
  await query(
    database,
    `INSERT INTO sessions (token_hash, person_id, org_id, expires_at, ended_at)
     VALUES ($1, $2, $3, CASE WHEN $4 = 'expired' THEN now() - interval '1 minute' ELSE now() + interval '1 hour' END,
             CASE WHEN $4 = 'ended' THEN now() ELSE NULL END)`,
    [sha256(token), personIds.get("admin"), orgIds.main, state]
  )
  return { cookie: `acs_session=${token}` }
}

/** Two events per org, on its first account (main: A, other: B2), oldest first. */
const seededEvents: Record<OrgName, ReadonlyArray<string>> = { main: [], other: [] }
const webhooksOfOrg: Record<OrgName, Array<string>> = { main: [], other: [] }

const seedEvents = async () => {
  for (const [org, projectId] of [["main", A], ["other", B2]] as const) {
    const ids = [`evt_matrix_${org}_1`, `evt_matrix_${org}_2`]
    for (const eventId of ids) {
      await query(database, `INSERT INTO events (event_id, org_id, project_id, type, data) VALUES ($1, $2, $3, 'sync.failed', '{"sync": {}}')`, [
        eventId,
        orgIds[org],
        projectId
      ])
    }
    seededEvents[org] = ids
  }
  // The server's sequencer gives them their positions: only then are they read.
  await waitFor("the seeded events to be sequenced", () => query<{ n: string }>(database, "SELECT count(*) AS n FROM events WHERE position IS NULL"), (rows) =>
    Number(rows[0]!.n) === 0)
}

let webhookCounter = 0

/** A webhook endpoint of the org, as created (its secret is never opened: the server delivers nothing). */
const insertWebhook = async (org: OrgName, disabled = false): Promise<string> => {
  const webhookId = `whk_matrix_${++webhookCounter}`
  await query(
    database,
    `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by, disabled_at)
     VALUES ($1, $2, 'https://93.184.216.34/matrix', '["action.proposed"]', 'json', 'v1.sealed', 'matrix',
             CASE WHEN $3 THEN now() END)`,
    [webhookId, orgIds[org], disabled]
  )
  webhooksOfOrg[org].push(webhookId)
  return webhookId
}

// ---------------------------------------------------------------------------------------------------------
// One sample request per operation, which succeeds when access is granted
// ---------------------------------------------------------------------------------------------------------

interface Prepared {
  readonly params?: Readonly<Record<string, string>>
  readonly body?: unknown
  /** Replaces the principal's credential for this one request (a fresh session for logout). */
  readonly headers?: Record<string, string>
}

interface Granted {
  readonly principal: PrincipalSpec
  readonly holder: Holder
  /** The account the call resolved to (`current` resolved), for account operations. */
  readonly account: string | undefined
  /** The credential headers the request carried. */
  readonly headers: Record<string, string>
}

interface Sample {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  /** Relative to /api/v1, with `:param` placeholders as in Api.ts. */
  readonly path: string
  /** `target`: the account the case names, for an operation that takes it in the body (keyword ideas). */
  readonly prepare?: (principal: PrincipalSpec, target: string | undefined) => Promise<Prepared> | Prepared
  /** The answer when access is granted. */
  readonly granted: (holder: Holder) => { readonly status: number; readonly code?: string }
  readonly verify?: (answer: Answer, granted: Granted) => Promise<void> | void
}

/** An account the principal may name in a key request: A in the main org, B2 in the other. */
const homeAccount = (principal: PrincipalSpec): string => principal.org === "main" ? A : B2

const record = (value: unknown): Record<string, unknown> => {
  expect(typeof value === "object" && value !== null, "a JSON object").toBe(true)
  return value as Record<string, unknown>
}

const expectedBinding = (binding: Binding) =>
  binding.kind === "subset" ? { kind: "subset", projectIds: [...binding.projectIds] } : binding

/** A read of an account that was never synced: an empty slice that says so in its freshness. */
const emptyCollection = (path: string, name: string): Sample => ({
  method: "GET",
  path,
  granted: () => ({ status: 200 }),
  verify: (answer) => {
    const body = record(answer.body)
    expect(body[name]).toEqual([])
    expect(body).toMatchObject({ total: 0, truncated: false, dataFreshness: { lastSyncAt: null, coverage: "0 of 30 requested days" } })
  }
})

/**
 * A well-formed body per proposal kind. The world's accounts were never synced, so every kind that names an
 * existing entity (a recommendation too) answers 404 `not_found` once access is granted; create_campaign names none
 * and is recorded.
 */
const proposalBodies: Readonly<Record<ProposalKindName, Record<string, unknown>>> = {
  budget_change: { campaignId: "1", newDailyBudgetMicros: 1_000_000 },
  campaign_status: { campaignId: "1", status: "PAUSED" },
  bid_strategy_change: { campaignId: "1", bidStrategy: "MANUAL_CPT" },
  target_cpa_change: { campaignId: "1", newTargetCpaMicros: 1_000_000 },
  create_campaign: {
    name: "matrix campaign",
    adamId: "1",
    countriesOrRegions: ["US"],
    dailyBudgetMicros: 10_000_000,
    bidStrategy: "MANUAL_CPT",
    adGroups: [{ name: "matrix ad group", defaultBidMicros: 1_000_000, searchMatch: false, keywords: [], negativeKeywords: [] }]
  },
  clone_campaign: { sourceCampaignId: "1", name: "matrix clone" },
  rename: { entity: "campaign", id: "1", name: "matrix renamed" },
  ad_group_status: { adGroupId: "1", status: "PAUSED" },
  cpa_goal_change: { adGroupId: "1", newCpaGoalMicros: 1_000_000 },
  default_bid_change: { adGroupId: "1", newDefaultBidMicros: 1_000_000 },
  search_match_change: { adGroupId: "1", enabled: true },
  create_ad_group: { campaignId: "1", name: "matrix ad group", defaultBidMicros: 1_000_000, searchMatch: false, keywords: [], negativeKeywords: [] },
  clone_ad_group: { sourceAdGroupId: "1", name: "matrix clone" },
  add_keywords: { adGroupId: "1", keywords: [{ text: "matrix", matchType: "EXACT", bidMicros: 1_000_000 }] },
  keyword_bid_change: { keywordIds: ["1"], newBidMicros: 1_000_000 },
  keyword_status: { keywordIds: ["1"], status: "PAUSED" },
  change_match_type: { keywordId: "1", matchType: "BROAD" },
  remove_keywords: { keywordIds: ["1"] },
  add_negative_keywords: { campaignId: "1", keywords: [{ text: "matrix", matchType: "EXACT" }] },
  remove_negative_keywords: { negativeKeywordIds: ["1"] },
  ad_status: { adId: "1", status: "PAUSED" },
  apply_recommendation: { recommendationId: "rec-1" },
  dismiss_recommendation: { recommendationId: "rec-1" },
  harvest_search_terms: { terms: [{ text: "matrix", sourceAdGroupId: "1", targetAdGroupId: "2" }], negateAtSource: true }
}

/** What a granted proposal answers: recorded (create_campaign), else not found. */
const grantedProposal = (kind: ProposalKindName) => kind === "create_campaign" ? { status: 201 } : { status: 404, code: "not_found" }

const proposalSamples = () =>
  Object.fromEntries(proposalKinds.map((kind): [ProposalOperationName, Sample] => [kind.operation, {
    method: "POST",
    path: `/accounts/:projectId/actions/${kind.path}`,
    prepare: () => ({ body: { ...proposalBodies[kind.kind], reason: "access matrix" } }),
    granted: () => grantedProposal(kind.kind),
    verify: (answer: Answer) => {
      if (answer.status === 201) expect(record(answer.body)).toMatchObject({ kind: kind.kind, mode: "queued", riskTier: "high" })
    }
  }])) as Record<ProposalOperationName, Sample>

const samples: Record<OperationName, Sample> = {
  getMe: {
    method: "GET",
    path: "/auth/me",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder, principal }) => {
      expect(record(answer.body)["principal"]).toMatchObject({
        kind: holder.kind,
        orgId: orgIds[holder.org],
        scope: holder.scope,
        canApprove: holder.canApprove,
        binding: expectedBinding(holder.binding),
        role: holder.role,
        ...(holder.kind === "key" ? { id: keyIds.get(principal.name) } : {})
      })
    }
  },
  logout: {
    method: "POST",
    path: "/auth/logout",
    // A person signs in afresh, so the shared session stays usable for every other case.
    prepare: async (principal) =>
      principal.holder?.kind === "person" && principal.setup.type === "person" ? { headers: await login(principal.setup.role) } : {},
    // Logout ends a person's session; an API key is refused as a malformed request (docs/decisions/access-and-keys.md).
    granted: (holder) => holder.kind === "person" ? { status: 204 } : { status: 400, code: "invalid_request" },
    verify: async (_answer, { headers, holder }) => {
      if (holder.kind !== "person") return
      const after = await call(`${server.api}/auth/me`, { headers })
      expect(after.status, "the ended session no longer authenticates").toBe(401)
      expect(errorCode(after)).toBe("unauthorized")
    }
  },
  changePassword: {
    method: "POST",
    path: "/auth/password",
    // A wrong current password: the person's check is reached without ending the sessions every other case
    // shares (the change itself: passwordChange.test.ts). An API key has no password (400, as for logout).
    prepare: () => ({ body: { currentPassword: "not the password", newPassword: "matrix-new-password-0123" } }),
    granted: (holder) => holder.kind === "person" ? { status: 422, code: "validation_failed" } : { status: 400, code: "invalid_request" },
    verify: async (_answer, { headers, holder }) => {
      if (holder.kind !== "person") return
      const after = await call(`${server.api}/auth/me`, { headers })
      expect(after.status, "a refused change leaves the session as it was").toBe(200)
    }
  },
  // A person unlinks their own Slack user (linking: slackApprovals.test.ts); an API key has none (400, as for logout).
  linkSlackUser: {
    method: "PUT",
    path: "/auth/slack-user",
    prepare: () => ({ body: { slackUserId: null } }),
    granted: (holder) => holder.kind === "person" ? { status: 200 } : { status: 400, code: "invalid_request" },
    verify: (answer, { holder }) => {
      if (holder.kind === "person") expect(record(answer.body)["slackUserId"]).toBeNull()
    }
  },
  authorizeOAuthClient: {
    method: "POST",
    path: "/auth/oauth/consent",
    // A client nobody registered: the person's consent is reached and refused without a redirect (the flow: oauth.test.ts).
    prepare: () => ({
      body: {
        clientId: "ocl_aaaaaaaaaaaaaaaa",
        redirectUri: "https://client.example/callback",
        codeChallenge: "a".repeat(43),
        codeChallengeMethod: "S256",
        resource: "http://127.0.0.1/mcp",
        decision: "approve",
        scope: "read"
      }
    }),
    granted: () => ({ status: 400, code: "invalid_request" })
  },
  listMyKeys: {
    method: "GET",
    path: "/auth/keys",
    // A person's own keys, whatever their role; a key has none to list (400, as for logout).
    granted: (holder) => holder.kind === "person" ? { status: 200 } : { status: 400, code: "invalid_request" },
    verify: (answer, { holder }) => {
      if (holder.kind !== "person") return
      const keys = record(answer.body)["keys"] as Array<{ readonly root: { readonly kind: string; readonly id: string } }>
      expect(keys.every((key) => key.root.kind === "person" && key.root.id === personIds.get(holder.role!)), "only the person's own keys").toBe(true)
    }
  },
  revokeMyKey: {
    method: "DELETE",
    path: "/auth/keys/:keyId",
    // A fresh key of the person (one of an org key for a key caller: refused before it is looked at).
    prepare: async (principal) => {
      const owner = principal.holder?.kind === "person" && principal.holder.role !== null ? personIds.get(principal.holder.role) ?? null : null
      const { keyId } = await insertKey(principal.org, { scope: "read", canApprove: false, binding: { kind: "org" } }, "valid", owner)
      return { params: { keyId } }
    },
    granted: (holder) => holder.kind === "person" ? { status: 204 } : { status: 400, code: "invalid_request" }
  },
  listPeople: {
    method: "GET",
    path: "/people",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder }) => {
      const emails = (record(answer.body)["people"] as Array<{ email: string }>).map((p) => p.email)
      // Each org sees its own people only: the seeded roles live in the main org.
      expect(emails.includes(emailOf("viewer"))).toBe(holder.org === "main")
    }
  },
  createPerson: {
    method: "POST",
    path: "/people",
    prepare: () => ({ body: { email: `added-${randomToken().slice(0, 12)}@matrix.example`, name: "Matrix Added", role: "viewer" } }),
    granted: () => ({ status: 201 }),
    verify: (answer) => {
      const body = record(answer.body)
      expect(body["person"]).toMatchObject({ role: "viewer", disabledAt: null })
      expect(typeof body["password"], "a generated password is answered once").toBe("string")
    }
  },
  updatePerson: {
    method: "PUT",
    path: "/people/:personId",
    // A fresh person of the principal's own org.
    prepare: async (principal) => ({ params: { personId: await insertPerson(principal.org) }, body: { role: "editor" } }),
    granted: () => ({ status: 200 }),
    verify: (answer) => {
      expect(record(answer.body)).toMatchObject({ role: "editor", disabledAt: null })
    }
  },
  revokePersonKeys: {
    method: "POST",
    path: "/people/:personId/keys/revoke",
    // A fresh person of the principal's own org, with a key of theirs.
    prepare: async (principal) => {
      const personId = await insertPerson(principal.org)
      await insertKey(principal.org, { scope: "read", canApprove: false, binding: { kind: "org" } }, "valid", personId)
      return { params: { personId } }
    },
    granted: () => ({ status: 200 }),
    verify: async (answer) => {
      const revoked = record(answer.body)["revokedKeyIds"] as Array<string>
      expect(revoked).toHaveLength(1)
      const rows = await query<{ revoked: boolean }>(database, "SELECT revoked_at IS NOT NULL AS revoked FROM api_keys WHERE key_id = $1", [revoked[0]])
      expect(rows[0]?.revoked).toBe(true)
    }
  },
  createKey: {
    method: "POST",
    path: "/keys",
    prepare: (principal) => ({ body: { name: "matrix created", scope: "read", projectIds: [homeAccount(principal)] } }),
    granted: () => ({ status: 201 }),
    verify: (answer, { principal }) => {
      const body = record(answer.body)
      expect(body["key"]).toMatchObject({ scope: "read", canApprove: false, binding: { kind: "subset", projectIds: [homeAccount(principal)] } })
      expect(body["secret"]).toMatch(/^acs_/)
    }
  },
  listKeys: {
    method: "GET",
    path: "/keys",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder, principal }) => {
      const keys = record(answer.body)["keys"]
      expect(Array.isArray(keys)).toBe(true)
      const listed = (keys as Array<{ readonly keyId: string }>).map((key) => key.keyId)
      const own = keyIds.get(principal.name)
      if (own !== undefined) expect(listed).toContain(own)
      const foreign = keysOfOrg[holder.org === "main" ? "other" : "main"]
      expect(listed.filter((id) => foreign.includes(id)), "keys of another org").toEqual([])
      expect(answer.text).not.toContain("secret")
    }
  },
  revokeKey: {
    method: "DELETE",
    path: "/keys/:keyId",
    // A fresh key of the principal's own org, bound to an account the principal reaches.
    prepare: async (principal) => {
      const { keyId } = await insertKey(principal.org, { scope: "read", canApprove: false, binding: { kind: "subset", projectIds: [homeAccount(principal)] } })
      return { params: { keyId } }
    },
    granted: () => ({ status: 204 })
  },
  createAccountKey: {
    method: "POST",
    path: "/accounts/:projectId/keys",
    prepare: () => ({ body: { name: "matrix account key", scope: "read" } }),
    granted: () => ({ status: 201 }),
    verify: (answer, { account }) => {
      expect(record(answer.body)["key"]).toMatchObject({ scope: "read", canApprove: false, binding: { kind: "account", projectId: account } })
    }
  },
  getSettings: {
    method: "GET",
    path: "/settings",
    granted: () => ({ status: 200 }),
    verify: (answer) => {
      expect(typeof record(answer.body)["platformAutoApply"]).toBe("boolean")
    }
  },
  updateSettings: {
    method: "PUT",
    path: "/settings",
    prepare: () => ({ body: { platformAutoApply: true } }),
    granted: () => ({ status: 200 }),
    verify: (answer, { holder, principal }) => {
      const body = record(answer.body)
      expect(body["platformAutoApply"]).toBe(true)
      if (holder.kind === "key") expect(body["updatedBy"]).toBe(`key:${keyIds.get(principal.name)}`)
    }
  },
  getSlackIntegration: {
    method: "GET",
    path: "/settings/slack",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)["interactionsPath"]).toBe("/integrations/slack/interactions")
  },
  setSlackSigningSecret: {
    method: "PUT",
    path: "/settings/slack/signing-secret",
    prepare: () => ({ body: { signingSecret: "8f742231b10e8888abcd99yyyzzz85a5".replace(/[yz]/g, "0") } }),
    granted: () => ({ status: 200 }),
    // Shown set, never read back.
    verify: (answer) => {
      expect(record(answer.body)["signingSecretSet"]).toBe(true)
      expect(JSON.stringify(answer.body)).not.toContain("8f742231")
    }
  },
  listAccounts: {
    method: "GET",
    path: "/accounts",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder }) => {
      const accounts = record(answer.body)["accounts"]
      expect(Array.isArray(accounts)).toBe(true)
      const visible = Object.keys(ACCOUNT_ORG).filter((id) => ACCOUNT_ORG[id] === holder.org && reachesAccount(holder.binding, id))
      expect((accounts as Array<{ readonly projectId: string }>).map((a) => a.projectId).sort()).toEqual(visible.sort())
    }
  },
  getAccount: {
    method: "GET",
    path: "/accounts/:projectId",
    granted: () => ({ status: 200 }),
    verify: (answer, { account }) => {
      const body = record(answer.body)
      expect(body["account"]).toMatchObject({ projectId: account })
      expect(body).toHaveProperty("dataFreshness")
    }
  },
  getConnection: {
    method: "GET",
    path: "/connection",
    granted: () => ({ status: 200 }),
    verify: (answer) => {
      expect(record(answer.body)).toMatchObject({ connected: false, status: "not_connected" })
    }
  },
  // The world has no upstream connection, so the upstream operations answer, once access is granted, with
  // the refusal that proves the call reached the service: a malformed key, or no connection.
  updateConnection: {
    method: "PUT",
    path: "/connection",
    prepare: () => ({ body: { clientId: "SEARCHADS.x", teamId: "SEARCHADS.x", keyId: "k", privateKeyPem: "not a key" } }),
    granted: () => ({ status: 400, code: "invalid_request" })
  },
  createConnectionKeyPair: {
    method: "POST",
    path: "/connection/keypair",
    granted: () => ({ status: 201 }),
    verify: (answer) => expect(String(record(answer.body)["publicKeyPem"])).toContain("BEGIN PUBLIC KEY")
  },
  discoverAccounts: { method: "POST", path: "/connection/discover", granted: () => ({ status: 409, code: "connection_error" }) },
  importAccounts: {
    method: "POST",
    path: "/accounts/import",
    prepare: () => ({ body: { upstreamAccountIds: ["1"] } }),
    granted: () => ({ status: 409, code: "connection_error" })
  },
  listSyncs: {
    method: "GET",
    path: "/accounts/:projectId/syncs",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ syncs: [], total: 0, truncated: false })
  },
  getSync: {
    method: "GET",
    path: "/accounts/:projectId/syncs/:syncId",
    prepare: () => ({ params: { syncId: "syn_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  startSync: {
    method: "POST",
    path: "/accounts/:projectId/syncs",
    granted: () => ({ status: 409, code: "connection_error" })
  },
  // No org of the world is connected, so its queue holds no account; the bounds show the instance's settings.
  getSyncQueue: {
    method: "GET",
    path: "/sync-queue",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ accounts: [], total: 0, bounds: { instance: 4, perOrg: 2 } })
  },
  listCampaigns: emptyCollection("/accounts/:projectId/campaigns", "campaigns"),
  listAdGroups: emptyCollection("/accounts/:projectId/ad-groups", "adGroups"),
  listKeywords: emptyCollection("/accounts/:projectId/keywords", "keywords"),
  listSearchTerms: emptyCollection("/accounts/:projectId/search-terms", "searchTerms"),
  listAds: emptyCollection("/accounts/:projectId/ads", "ads"),
  listNegativeKeywords: emptyCollection("/accounts/:projectId/negative-keywords", "negativeKeywords"),
  listRecommendations: emptyCollection("/accounts/:projectId/recommendations", "recommendations"),
  ...proposalSamples(),
  listActions: {
    method: "GET",
    path: "/accounts/:projectId/actions",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toHaveProperty("actions")
  },
  getAction: {
    method: "GET",
    path: "/accounts/:projectId/actions/:actionId",
    prepare: () => ({ params: { actionId: "act_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  listApprovals: {
    method: "GET",
    path: "/accounts/:projectId/approvals",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toHaveProperty("approvals")
  },
  approveAction: {
    method: "POST",
    path: "/accounts/:projectId/approvals/:actionId/approve",
    prepare: () => ({ params: { actionId: "act_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  rejectAction: {
    method: "POST",
    path: "/accounts/:projectId/approvals/:actionId/reject",
    prepare: () => ({ params: { actionId: "act_unknown" }, body: {} }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  revertAction: {
    method: "POST",
    path: "/accounts/:projectId/actions/:actionId/revert",
    prepare: () => ({ params: { actionId: "act_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  openChangeset: {
    method: "POST",
    path: "/accounts/:projectId/changesets",
    prepare: () => ({ body: { title: "access matrix" } }),
    granted: () => ({ status: 201 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ status: "open", title: "access matrix", onFailure: "stop" })
  },
  addChangesetMembers: {
    method: "POST",
    path: "/accounts/:projectId/changesets/:changesetId/members",
    prepare: () => ({
      params: { changesetId: "cs_unknown" },
      body: { proposals: [{ kind: "budget_change", body: { ...proposalBodies.budget_change, reason: "access matrix" } }] }
    }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  submitChangeset: {
    method: "POST",
    path: "/accounts/:projectId/changesets/:changesetId/submit",
    prepare: () => ({ params: { changesetId: "cs_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  approveChangeset: {
    method: "POST",
    path: "/accounts/:projectId/changesets/:changesetId/approve",
    prepare: () => ({ params: { changesetId: "cs_unknown" }, body: { planHash: "sha256:unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  rejectChangeset: {
    method: "POST",
    path: "/accounts/:projectId/changesets/:changesetId/reject",
    prepare: () => ({ params: { changesetId: "cs_unknown" }, body: {} }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  revertChangeset: {
    method: "POST",
    path: "/accounts/:projectId/changesets/:changesetId/revert",
    prepare: () => ({ params: { changesetId: "cs_unknown" }, body: {} }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  listChangesets: {
    method: "GET",
    path: "/accounts/:projectId/changesets",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toHaveProperty("changesets")
  },
  getChangeset: {
    method: "GET",
    path: "/accounts/:projectId/changesets/:changesetId",
    prepare: () => ({ params: { changesetId: "cs_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  getPolicy: {
    method: "GET",
    path: "/accounts/:projectId/policy",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ killSwitch: { setting: "platformAutoApply" }, keyProposals: "always_review" })
  },
  // No change applied yet: every count is zero.
  getVerdicts: {
    method: "GET",
    path: "/accounts/:projectId/verdicts",
    granted: () => ({ status: 200 }),
    verify: (answer) =>
      expect(record(answer.body)).toMatchObject({ days: 30, total: { passed: 0, failed: 0, inconclusive: 0, pending: 0 }, byKind: [], byProposer: [] })
  },
  getTargets: {
    method: "GET",
    path: "/accounts/:projectId/targets",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toHaveProperty("campaigns")
  },
  updateTargets: {
    method: "PUT",
    path: "/accounts/:projectId/targets",
    prepare: () => ({ body: { cpaBand: { minMicros: 1_000_000, maxMicros: 5_000_000 }, campaigns: {} } }),
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ cpaBand: { minMicros: 1_000_000, maxMicros: 5_000_000 } })
  },
  getGuardrails: {
    method: "GET",
    path: "/accounts/:projectId/guardrails",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ evidence: { minDays: expect.any(Number) }, autoApplyPaused: null })
  },
  updateGuardrails: {
    method: "PUT",
    path: "/accounts/:projectId/guardrails",
    prepare: () => ({ body: { ...DEFAULT_GUARDRAILS, cooldownHours: { bid: 48, budget: 72, status: 0 } } }),
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ cooldownHours: { bid: 48 }, isDefault: false })
  },
  resumeAutoApply: {
    method: "DELETE",
    path: "/accounts/:projectId/guardrails/pause",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ autoApplyPaused: null })
  },
  // A never-synced account: an empty plan, an audit whose one finding says so, no such audit, a brief.
  getPlan: emptyCollection("/accounts/:projectId/plan", "items"),
  runAudit: {
    method: "POST",
    path: "/accounts/:projectId/audits",
    granted: () => ({ status: 201 }),
    verify: (answer) => {
      const body = record(answer.body)
      expect(body["auditId"]).toMatch(/^aud_/)
      expect(body["findings"]).toEqual([expect.objectContaining({ severity: "high", title: "The account was never synced", entity: null })])
    }
  },
  getAudit: {
    method: "GET",
    path: "/accounts/:projectId/audits/:auditId",
    prepare: () => ({ params: { auditId: "aud_unknown" } }),
    granted: () => ({ status: 404, code: "not_found" })
  },
  // updateBrief runs in the same request chunks: the text is either the empty brief or the one it writes.
  getBrief: {
    method: "GET",
    path: "/accounts/:projectId/brief",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(["", "matrix brief"]).toContain(record(answer.body)["text"])
  },
  updateBrief: {
    method: "PUT",
    path: "/accounts/:projectId/brief",
    prepare: () => ({ body: { text: "matrix brief" } }),
    granted: () => ({ status: 200 }),
    verify: (answer, { holder, principal }) => {
      const body = record(answer.body)
      expect(body).toMatchObject({ text: "matrix brief" })
      if (holder.kind === "key") expect(body["updatedBy"]).toBe(`key:${keyIds.get(principal.name)}`)
    }
  },
  // Events: the world's seeded events (two per org, on an account every key of the org reaches).
  listEvents: {
    method: "GET",
    path: "/events",
    granted: () => ({ status: 200 }),
    // Other cases' proposals add events as the matrix runs: nothing of another org or out of the holder's
    // reach, and the seeded ones newest first.
    verify: (answer, { holder }) => {
      const events = record(answer.body)["events"] as ReadonlyArray<{ readonly eventId: string; readonly orgId: string; readonly projectId: string | null }>
      const ids = events.map((e) => e.eventId)
      const [first, second] = seededEvents[holder.org]
      // A page of the default size may hold only newer events; where the seeded ones are, they are newest first.
      if (ids.includes(first!)) expect(ids.indexOf(second!), "the second seeded event, newest first").toBeLessThan(ids.indexOf(first!))
      expect(ids.length).toBeGreaterThan(0)
      expect(events.every((e) => e.orgId === orgIds[holder.org])).toBe(true)
      expect(events.every((e) => e.projectId !== null && reachesAccount(holder.binding, e.projectId))).toBe(true)
    }
  },
  // The stream, resumed after the org's first event: it answers the second at once (runRest, runRpc).
  streamEvents: {
    method: "GET",
    path: "/events/stream",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder }) => expect(record(answer.body)["eventId"]).toBe(seededEvents[holder.org][1])
  },
  createWebhook: {
    method: "POST",
    path: "/webhooks",
    // A public address literal: nothing to resolve, nothing delivered (the server's webhook workers are off).
    prepare: () => ({ body: { url: "https://93.184.216.34/matrix", events: ["action.proposed"] } }),
    granted: () => ({ status: 201 }),
    verify: (answer) => {
      expect(record(answer.body)["webhook"]).toMatchObject({ url: "https://93.184.216.34/matrix", events: ["action.proposed"], format: "json" })
      expect(String(record(answer.body)["secret"])).toMatch(/^whsec_/)
    }
  },
  listWebhooks: {
    method: "GET",
    path: "/webhooks",
    granted: () => ({ status: 200 }),
    verify: (answer, { holder }) => {
      const listed = record(answer.body)["webhooks"] as ReadonlyArray<{ readonly webhookId: string }>
      const foreign = webhooksOfOrg[holder.org === "main" ? "other" : "main"]
      expect(listed.filter((w) => foreign.includes(w.webhookId)), "webhooks of another org").toEqual([])
    }
  },
  deleteWebhook: {
    method: "DELETE",
    path: "/webhooks/:webhookId",
    prepare: async (principal) => ({ params: { webhookId: await insertWebhook(principal.org) } }),
    granted: () => ({ status: 204 })
  },
  testWebhook: {
    method: "POST",
    path: "/webhooks/:webhookId/test",
    prepare: async (principal) => ({ params: { webhookId: await insertWebhook(principal.org) } }),
    granted: () => ({ status: 202 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ eventType: "ping", status: "pending" })
  },
  enableWebhook: {
    method: "POST",
    path: "/webhooks/:webhookId/enable",
    prepare: async (principal) => ({ params: { webhookId: await insertWebhook(principal.org, true) } }),
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ disabledAt: null })
  },
  listWebhookDeliveries: {
    method: "GET",
    path: "/webhooks/:webhookId/deliveries",
    prepare: async (principal) => ({ params: { webhookId: await insertWebhook(principal.org) } }),
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toEqual({ deliveries: [] })
  },
  // No org of the world has an upstream connection: the upstream reads answer 409 once access is granted.
  runReport: {
    method: "POST",
    path: "/accounts/:projectId/reports",
    prepare: () => ({ body: { level: "campaigns", startDate: "2025-01-01", endDate: "2025-01-31", granularity: "MONTHLY" } }),
    granted: () => ({ status: 409, code: "connection_error" })
  },
  searchApps: {
    method: "POST",
    path: "/research/apps",
    prepare: () => ({ body: { query: "matrix" } }),
    granted: () => ({ status: 409, code: "connection_error" })
  },
  searchGeo: {
    method: "POST",
    path: "/research/geo",
    prepare: () => ({ body: { query: "matrix" } }),
    granted: () => ({ status: 409, code: "connection_error" })
  },
  keywordIdeas: {
    method: "POST",
    path: "/research/keyword-ideas",
    prepare: (_principal, target) => ({ body: { projectId: target, seeds: ["matrix"] } }),
    granted: () => ({ status: 200 }),
    verify: (answer) =>
      expect(record(answer.body)).toMatchObject({ ideas: [], total: 0, truncated: false, dataFreshness: { lastSyncAt: null } })
  }
}

const OPERATION_NAMES = Object.keys(Operations) as ReadonlyArray<OperationName>
const operationTable: Readonly<Record<string, Operation>> = Operations

// ---------------------------------------------------------------------------------------------------------
// The cases, and the three surfaces they are made on
// ---------------------------------------------------------------------------------------------------------

interface Case {
  readonly id: string
  readonly operation: OperationName
  readonly principal: PrincipalSpec
  readonly target: string | undefined
  /** The request carries a malformed body (docs/contract.md 5.3): every refusal still comes first. */
  readonly badBody?: true
}

/**
 * The 23 proposal operations share one access row (write scope, an account; the table makes them from the kind
 * declarations, and "the proposal operations share one access row" below holds it): the row runs in full for the
 * first of them. Each other one keeps the cases that fail when it is wired to any other check, on every surface:
 * the weakest principal the row allows (write, no grant, bound to one account, naming it as `current`: a higher
 * scope, the grant or org level would refuse it), a principal the scope alone refuses (read, with the grant,
 * org-wide) and one the account's reach alone refuses (admin, with the grant, bound to A, naming B).
 */
const PROPOSAL_OPERATIONS: ReadonlySet<OperationName> = new Set(proposalKinds.map((kind) => kind.operation))
const FULL_PROPOSAL: OperationName = proposalKinds[0]!.operation
const WIRING_CASES: ReadonlyArray<{ readonly principal: string; readonly target: string }> = [
  { principal: "key write account[A]", target: CURRENT },
  { principal: "key read+canApprove org-wide", target: A },
  { principal: "key admin+canApprove subset[A]", target: B }
]

/** Every principal × every way of naming an account, or only the wiring cases for a proposal operation after the first. */
const runsInFull = (operation: OperationName): boolean => !PROPOSAL_OPERATIONS.has(operation) || operation === FULL_PROPOSAL

const principalNamed = (name: string): PrincipalSpec => {
  const principal = PRINCIPALS.find((p) => p.name === name)
  if (principal === undefined) throw new Error(`no principal named ${name}`)
  return principal
}

const caseOf = (operation: OperationName, principal: PrincipalSpec, target: string | undefined): Case => ({
  id: `${operation} × ${principal.name}${target === undefined ? "" : ` → ${target}`}`,
  operation,
  principal,
  target
})

const CASES: ReadonlyArray<Case> = OPERATION_NAMES.flatMap((operation) =>
  runsInFull(operation)
    ? PRINCIPALS.flatMap((principal) =>
      (operationTable[operation]?.account === true ? [...TARGETS] : [undefined]).map((target) => caseOf(operation, principal, target))
    )
    : WIRING_CASES.map(({ principal, target }) => caseOf(operation, principalNamed(principal), target))
)

/**
 * Operations that take a body, each called with a malformed one. Keyword ideas names its account inside the
 * body, so its reach cannot be checked before the body is read: its bad bodies are left out.
 */
const BAD_BODY_OPERATIONS = OPERATION_NAMES.filter((operation) =>
  operation !== "keywordIdeas" && samples[operation].method !== "GET" &&
  Option.isSome(operationEndpoints.get(operation)?.payloadSchema ?? Option.none())
)

const BAD_BODY_CASES: ReadonlyArray<Case> = CASES.filter((testCase) => BAD_BODY_OPERATIONS.includes(testCase.operation))
  .map((testCase) => ({ ...testCase, id: `${testCase.id} [bad body]`, badBody: true }))

/** What each surface sends as a malformed body: REST a JSON array, RPC the same payload, MCP an unknown argument. */
const BAD_BODY = [1, 2, 3]

type Surface = "rest" | "rpc" | "mcp"

/**
 * RPC and MCP authenticate the Authorization header only (README.md, docs/decisions/surfaces.md
 * "/mcp takes Bearer keys only"): a person, signed in with a session cookie, is no client of theirs, so the person principals are
 * REST cases only, and "a person's session cookie on RPC and MCP" below checks that a valid session is
 * refused on both. The ended and expired sessions stay: they are bad credentials everywhere (the cookie is
 * sent and ignored), and the surfaces must answer them as REST does (401).
 */
const onSurface = (surface: Surface, principal: PrincipalSpec): boolean => surface === "rest" || principal.setup.type !== "person"

const caseId = (surface: Surface, testCase: Case): string => `${surface}: ${testCase.id}`

/**
 * docs/decisions/surfaces.md "MCP tools", restated: operations left out of the tool server, though a key may call them over
 * REST (keys, the upstream credentials, the guardrails people set for agents, sessions).
 */
const HUMAN_ONLY: ReadonlySet<OperationName> = new Set<OperationName>([
  "createKey",
  "listKeys",
  "revokeKey",
  "createAccountKey",
  "updateConnection",
  "createConnectionKeyPair",
  "updateSettings",
  "updateTargets",
  "getGuardrails",
  "updateGuardrails",
  "resumeAutoApply",
  "updateBrief",
  "createWebhook",
  "listWebhooks",
  "deleteWebhook",
  "testWebhook",
  "enableWebhook",
  "listWebhookDeliveries",
  // A stream is no tool call (agents page with platform_list_events).
  "streamEvents",
  "logout",
  "changePassword",
  "linkSlackUser",
  "getSlackIntegration",
  "setSlackSigningSecret",
  "authorizeOAuthClient",
  "listMyKeys",
  "revokeMyKey",
  "listPeople",
  "createPerson",
  "updatePerson",
  "revokePersonKeys"
])

/** README: `platform_<snake_case operation>`. */
const toolNameOf = (operation: OperationName): string =>
  `platform_${operation.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()}`

/** One answer, whatever the surface: RPC and MCP carry no HTTP status for a success. */
interface SurfaceAnswer {
  readonly ok: boolean
  /** REST's status; an RPC failure's SPEC status (`toEnvelope`); /mcp's own status when it refuses the key. */
  readonly status: number | undefined
  /** The success JSON, or the SPEC envelope. */
  readonly body: unknown
  readonly text: string
  /** An answer outside the contract (a defect, a transport or protocol error): always a failure. */
  readonly problem?: string
}

interface Result {
  readonly answer: SurfaceAnswer
  /** The credential headers the request carried. */
  readonly headers: Record<string, string>
}

const results = new Map<string, Result>()

const fillPath = (template: string, params: Readonly<Record<string, string>>): string =>
  template.replace(/:(\w+)/g, (_match, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} in ${template}`)
    return encodeURIComponent(value)
  })

/** The sample's request for one case; `prepare` runs per surface, so a fresh key to revoke is revoked once. */
const requestOf = async (testCase: Case) => {
  const sample = samples[testCase.operation]
  const prepared = (await sample.prepare?.(testCase.principal, testCase.target)) ?? {}
  const params: Record<string, string> = { ...(testCase.target === undefined ? {} : { projectId: testCase.target }), ...prepared.params }
  // What REST sends, once through JSON: fields left undefined (keywordIdeas without a projectId) are dropped.
  const body: unknown = prepared.body === undefined ? undefined : JSON.parse(JSON.stringify(prepared.body))
  return { sample, prepared, params, body, headers: credentials.get(testCase.principal.name) ?? {} }
}

const isOk = (status: number): boolean => status >= 200 && status < 300

/**
 * GET /events/stream resumed after the org's first seeded event: a refusal is a JSON envelope; a granted
 * stream's answer is its first event (the org's second), read as it arrives, and the stream is closed.
 */
const runRestStream = async (testCase: Case, headers: Record<string, string>): Promise<Result> => {
  const abort = new AbortController()
  const response = await fetch(`${server.api}/events/stream`, {
    headers: { ...headers, "last-event-id": seededEvents[testCase.principal.org][0]! },
    signal: abort.signal
  })
  if (!isOk(response.status)) {
    const text = await response.text()
    return { answer: { ok: false, status: response.status, body: parseText(text), text }, headers }
  }
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffered = ""
  let data: RegExpExecArray | null = null
  while (data === null) {
    const { done, value } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    data = /^data: (.*)$/m.exec(buffered)
  }
  abort.abort()
  const text = data?.[1] ?? ""
  return { answer: { ok: true, status: response.status, body: parseText(text), text }, headers }
}

const runRest = async (testCase: Case): Promise<Result> => {
  const request = await requestOf(testCase)
  const { params, prepared, sample } = request
  const body = testCase.badBody === true ? BAD_BODY : request.body
  const headers = prepared.headers ?? credentials.get(testCase.principal.name) ?? {}
  if (testCase.operation === "streamEvents") return runRestStream(testCase, headers)
  const answer = await call(`${server.api}${fillPath(sample.path, params)}`, {
    method: sample.method,
    headers,
    ...(body !== undefined ? { body } : {})
  })
  return { answer: { ok: isOk(answer.status), status: answer.status, body: answer.body, text: answer.text }, headers }
}

// RPC: one client runtime per principal, reused by all its cases. A key goes through AcsClient.layer, the
// client services use; a request without a key (none, a session cookie) needs the same layer with other headers.

/** The endpoint schemas need no services; the generic endpoint type cannot say so. */
type ContextFree = Schema.Schema<unknown, unknown, never>
/** The client's procedures by run-time name: the typed client is keyed by the operation's literal type. */
type ProceduresByName = Readonly<Record<string, ((input: unknown) => Effect.Effect<unknown, unknown>) | undefined>>

const rpcRuntimes = new Map<string, ManagedRuntime.ManagedRuntime<AcsClient, never>>()

const rpcLayer = (headers: Readonly<Record<string, string>>): Layer.Layer<AcsClient> => {
  const bearer = headers["authorization"]
  if (bearer?.startsWith("Bearer ") === true) return AcsClient.layer({ url: server.baseUrl, key: bearer.slice("Bearer ".length) })
  return Layer.scoped(AcsClient, RpcClient.make(AcsRpcs)).pipe(
    Layer.provide(RpcClient.layerProtocolHttp({
      url: `${server.baseUrl}${RPC_PATH}`,
      transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(headers))
    })),
    Layer.provide(RpcSerialization.layerNdjson),
    Layer.provide(FetchHttpClient.layer)
  )
}

const endpointOf = (operation: OperationName) => {
  const endpoint = operationEndpoints.get(operation)
  if (endpoint === undefined) throw new Error(`no RPC endpoint for ${operation}`)
  return endpoint
}

/** The procedure input `{path, payload}` for the sample (decoded: the client takes the schemas' types). */
const rpcInputOf = (operation: OperationName, params: Readonly<Record<string, string>>, body: unknown): Record<string, unknown> => {
  const endpoint = endpointOf(operation)
  const path = endpoint.pathSchema as Option.Option<ContextFree>
  const payload = endpoint.payloadSchema as Option.Option<ContextFree>
  return {
    ...(Option.isSome(path) ? { path: Schema.decodeUnknownSync(path.value)(params) } : {}),
    // A sample body for an endpoint without a payload is a mistake of this file: getOrThrow says so.
    ...(body === undefined ? {} : { payload: Schema.decodeUnknownSync(Option.getOrThrow(payload))(body) })
  }
}

/** The same procedures with undecoded payloads: what a hostile client can put on the wire. */
const RawRpcs = RpcGroup.make(
  ...[...operationRpcGroup.requests.values()].map((rpc) =>
    Rpc.make(rpc._tag, { payload: Schema.Unknown, success: Schema.Unknown, error: AcsErrorSchema })
  )
)

const makeRawRpcClient = RpcClient.make(RawRpcs)

class RawRpcClient extends Context.Tag("RawRpcClient")<RawRpcClient, Effect.Effect.Success<typeof makeRawRpcClient>>() {}

const rawRpcRuntimes = new Map<string, ManagedRuntime.ManagedRuntime<RawRpcClient, never>>()

const rawRpcLayer = (headers: Readonly<Record<string, string>>): Layer.Layer<RawRpcClient> =>
  Layer.scoped(RawRpcClient, makeRawRpcClient).pipe(
    Layer.provide(RpcClient.layerProtocolHttp({
      url: `${server.baseUrl}${RPC_PATH}`,
      transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(headers))
    })),
    Layer.provide(RpcSerialization.layerNdjson),
    Layer.provide(FetchHttpClient.layer)
  )

/** A malformed payload, straight onto the wire: the answer is an error class, or something outside the contract. */
const runRawRpc = async (testCase: Case): Promise<Result> => {
  const { headers, params } = await requestOf(testCase)
  const runtime = rawRpcRuntimes.get(testCase.principal.name)
  if (runtime === undefined) throw new Error(`no raw RPC client for ${testCase.principal.name}`)
  const path = Option.isSome(endpointOf(testCase.operation).pathSchema) ? { path: params } : {}
  const exit = await runtime.runPromiseExit(Effect.flatMap(RawRpcClient, (client) => {
    const procedure = (client as unknown as ProceduresByName)[testCase.operation]
    return procedure === undefined ? Effect.dieMessage(`no procedure ${testCase.operation}`) : procedure({ ...path, payload: BAD_BODY })
  }))
  return { answer: rpcAnswer(exit), headers }
}

const rpcAnswer = (exit: Exit.Exit<unknown, unknown>, successSchema?: ContextFree): SurfaceAnswer => {
  if (Exit.isSuccess(exit)) {
    // Encoded again with the endpoint's success schema: the JSON REST would have sent.
    const json: unknown = successSchema === undefined ? exit.value : Schema.encodeUnknownSync(successSchema)(exit.value)
    return { ok: true, status: undefined, body: json, text: json === undefined ? "" : JSON.stringify(json) }
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && isAcsError(failure.value)) {
    const envelope = toEnvelope(failure.value)
    return { ok: false, status: envelope.status, body: envelope.body, text: JSON.stringify(envelope.body) }
  }
  return { ok: false, status: undefined, body: undefined, text: "", problem: Cause.pretty(exit.cause) }
}

/** The streaming procedure, resumed as runRestStream is: its first event, or its refusal. */
const runRpcStream = async (testCase: Case, runtime: ManagedRuntime.ManagedRuntime<AcsClient, never>, headers: Record<string, string>) => {
  const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) =>
    Stream.runHead(client.streamEvents({ headers: { "last-event-id": seededEvents[testCase.principal.org][0]! } }))))
  return { answer: rpcAnswer(Exit.map(exit, (head) => Option.getOrUndefined(head)), Event as unknown as ContextFree), headers }
}

const runRpc = async (testCase: Case, runtime: ManagedRuntime.ManagedRuntime<AcsClient, never>): Promise<Result> => {
  const { body, headers, params } = await requestOf(testCase)
  if (testCase.operation === "streamEvents") return runRpcStream(testCase, runtime, headers)
  const endpoint = endpointOf(testCase.operation)
  const input = rpcInputOf(testCase.operation, params, body)
  const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) => {
    const procedure = (client as unknown as ProceduresByName)[testCase.operation]
    return procedure === undefined ? Effect.dieMessage(`no procedure ${testCase.operation}`) : procedure(input)
  }))
  return { answer: rpcAnswer(exit, endpoint.successSchema as ContextFree), headers }
}

// MCP: one SDK client connection per key principal, reused. A bad credential cannot connect (HTTP 401 before
// MCP parses anything), so its tool call is the raw JSON-RPC POST the SDK would send, answered by that 401.

const mcpClients = new Map<string, Client>()
/** The tools each connection lists. */
const mcpToolNames = new Map<string, ReadonlyArray<string>>()
const MCP_ACCEPT = "application/json, text/event-stream"

const connectMcp = async (headers: Readonly<Record<string, string>>): Promise<Client> => {
  const client = new Client({ name: "acs-access-matrix", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers: { ...headers } } }))
  return client
}

/** McpTools.ts: a tool's arguments are the path params, url params and body fields in one object. */
const mcpArgumentsOf = (params: Readonly<Record<string, string>>, body: unknown): Record<string, unknown> => ({
  ...params,
  ...(typeof body === "object" && body !== null ? body : {})
})

const parseText = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const runMcp = async (testCase: Case): Promise<Result> => {
  const { body, headers, params } = await requestOf(testCase)
  const name = toolNameOf(testCase.operation)
  const args = { ...mcpArgumentsOf(params, body), ...(testCase.badBody === true ? { notAnArgument: BAD_BODY } : {}) }
  const client = mcpClients.get(testCase.principal.name)
  if (client === undefined) {
    const answer = await call(`${server.baseUrl}/mcp`, {
      method: "POST",
      headers: { ...headers, accept: MCP_ACCEPT },
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }
    })
    return { answer: { ok: isOk(answer.status), status: answer.status, body: answer.body, text: answer.text }, headers }
  }
  try {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult
    const first = result.content[0]
    const text = first?.type === "text" ? first.text : ""
    return { answer: { ok: result.isError !== true, status: undefined, body: parseText(text), text }, headers }
  } catch (error) {
    return { answer: { ok: false, status: undefined, body: undefined, text: "", problem: String(error) }, headers }
  }
}

const runOn = (surface: Surface, testCase: Case): Promise<Result> => {
  switch (surface) {
    case "rest":
      return runRest(testCase)
    case "rpc": {
      if (testCase.badBody === true) return runRawRpc(testCase)
      const runtime = rpcRuntimes.get(testCase.principal.name)
      if (runtime === undefined) throw new Error(`no RPC client for ${testCase.principal.name}`)
      return runRpc(testCase, runtime)
    }
    case "mcp":
      return runMcp(testCase)
  }
}

const SURFACES: ReadonlyArray<Surface> = ["rest", "rpc", "mcp"]

/** A case's three requests side by side, so that they meet the same state of the shared world. */
const JOBS = [...CASES, ...BAD_BODY_CASES].flatMap((testCase) =>
  SURFACES.filter((surface) => onSurface(surface, testCase.principal)).map((surface) => ({ surface, testCase }))
)

const CHUNK = 32

beforeAll(async () => {
  database = await createDatabase()
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    RATE_LIMIT_READ: "100000",
    RATE_LIMIT_WRITE: "100000",
    RATE_LIMIT_EXPENSIVE: "100000",
    RATE_LIMIT_LOGIN: "100000",
    // Each person's wrong current password is asked on every case of changePassword.
    RATE_LIMIT_PASSWORD_CHECK: "100000",
    // Webhook samples point at a public address: nothing is sent from a test.
    WEBHOOK_CONCURRENCY: "0",
    // Every case that needs an endpoint makes one in the same two orgs: far more than an org's 20.
    WEBHOOK_MAX_ENDPOINTS_PER_ORG: "100000",
    EVENTS_POLL_MS: "200"
  })
  orgIds.main = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertOrg(database, OTHER_ORG_ID)
  await Promise.all([insertAccount(database, orgIds.main, A), insertAccount(database, orgIds.main, B), insertAccount(database, OTHER_ORG_ID, B2)])
  await seedEvents()

  const roles = ["viewer", "editor", "approver", "admin"] as const
  await Promise.all(roles.map(async (role) => {
    const personId = `psn_matrix_${role}`
    const hash = await Effect.runPromise(hashPassword(PASSWORD))
    await query(
      database,
      `INSERT INTO people (person_id, org_id, email, name, role, password_hash) VALUES ($1, $2, $3, $4, $5, $6)`,
      [personId, orgIds.main, emailOf(role), `Matrix ${role}`, role, hash]
    )
    personIds.set(role, personId)
  }))

  for (const principal of PRINCIPALS) {
    const setup = principal.setup
    switch (setup.type) {
      case "key": {
        const { keyId, secret } = await insertKey(principal.org, principal.row!, setup.state)
        keyIds.set(principal.name, keyId)
        credentials.set(principal.name, { authorization: `Bearer ${secret}` })
        break
      }
      case "personKey": {
        const personId = await insertPerson(principal.org)
        await query(database, "UPDATE people SET role = 'admin' WHERE person_id = $1 RETURNING pg_notify('acs_invalidate', 's:*'), pg_notify('acs_invalidate', 'k:*')", [personId])
        const { keyId, secret } = await insertKey(principal.org, principal.row!, "valid", personId)
        const change = setup.creator === "disabled" ? "disabled_at = now()" : "role = 'viewer'"
        // By hand, with the notifications People.ts's statements send (db/Invalidation.ts).
        await query(database, `UPDATE people SET ${change} WHERE person_id = $1 RETURNING pg_notify('acs_invalidate', 's:*'), pg_notify('acs_invalidate', 'k:*')`, [personId])
        keyIds.set(principal.name, keyId)
        credentials.set(principal.name, { authorization: `Bearer ${secret}` })
        break
      }
      case "person":
        credentials.set(principal.name, await login(setup.role))
        break
      case "session":
        credentials.set(principal.name, await insertSession(setup.state))
        break
      case "unknownKey":
        credentials.set(principal.name, { authorization: `Bearer acs_${randomToken()}` })
        break
      case "none":
        credentials.set(principal.name, {})
        break
    }
  }

  for (const principal of PRINCIPALS.filter((p) => onSurface("rpc", p))) {
    rpcRuntimes.set(principal.name, ManagedRuntime.make(rpcLayer(credentials.get(principal.name) ?? {})))
    rawRpcRuntimes.set(principal.name, ManagedRuntime.make(rawRpcLayer(credentials.get(principal.name) ?? {})))
  }
  await Promise.all(PRINCIPALS.filter((p) => onSurface("mcp", p) && p.holder !== undefined).map(async (principal) => {
    const client = await connectMcp(credentials.get(principal.name) ?? {})
    mcpClients.set(principal.name, client)
    mcpToolNames.set(principal.name, (await client.listTools()).tools.map((tool) => tool.name))
  }))

  for (let start = 0; start < JOBS.length; start += CHUNK) {
    const chunk = JOBS.slice(start, start + CHUNK)
    const answers = await Promise.all(chunk.map(({ surface, testCase }) => runOn(surface, testCase)))
    chunk.forEach(({ surface, testCase }, index) => results.set(caseId(surface, testCase), answers[index]!))
  }
}, 900_000)

afterAll(async () => {
  await Promise.all([...mcpClients.values()].map((client) => client.close().catch(() => undefined)))
  await Promise.all([...rpcRuntimes.values(), ...rawRpcRuntimes.values()].map((runtime) => runtime.dispose()))
  await server?.stop()
})

// ---------------------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------------------

describe("the operation table and the REST API agree", () => {
  const SKIPPED_GROUPS = ["system", "publicAuth"]
  const authenticatedEndpoints = Object.values(Api.groups)
    .filter((group) => !SKIPPED_GROUPS.includes(group.identifier))
    .flatMap((group) => Object.values(group.endpoints).map((endpoint) => ({ group: group.identifier, endpoint })))

  it("has a sample request for every operation", () => {
    const missing = Object.keys(Operations).filter((name) => !(name in samples))
    expect(missing, "operations without a sample in accessMatrix.test.ts").toEqual([])
  })

  it("has an operation for every endpoint of an authenticated group", () => {
    expect(authenticatedEndpoints.length).toBeGreaterThan(0)
    const orphans = authenticatedEndpoints.filter(({ endpoint }) => !(endpoint.name in Operations))
    expect(orphans.map(({ endpoint, group }) => `${group}.${endpoint.name}`), "endpoints without an operation").toEqual([])
  })

  it("puts the Authentication middleware on exactly the authenticated groups", () => {
    for (const group of Object.values(Api.groups)) {
      const authenticated = [...group.middlewares].some((middleware) => middleware.key === "Authentication")
      expect(authenticated, `group ${group.identifier}`).toBe(!SKIPPED_GROUPS.includes(group.identifier))
    }
  })

  it("sends each sample to the endpoint of the same name", () => {
    for (const name of OPERATION_NAMES) {
      const found = authenticatedEndpoints.find(({ endpoint }) => endpoint.name === name)
      expect(found, `endpoint for operation ${name}`).toBeDefined()
      expect(`${samples[name].method} /api/v1${samples[name].path}`, name).toBe(`${found!.endpoint.method} ${found!.endpoint.path}`)
    }
  })

  it("gives every proposal operation the same access row, so that one runs it in full for all", () => {
    const rowOf = (name: OperationName) => {
      // The access row: scope, grant and reach (the bucket, the summary and the MCP column aside).
      const { bucket: _bucket, summary: _summary, mcp: _mcp, ...row } = operationTable[name]!
      return row
    }
    expect(PROPOSAL_OPERATIONS.size).toBe(proposalKinds.length)
    for (const name of PROPOSAL_OPERATIONS) expect(rowOf(name), name).toEqual(rowOf(FULL_PROPOSAL))
  })

  it("gives each other proposal operation one allowed case and refusals by scope and by reach alone", () => {
    const expected = WIRING_CASES.map(({ principal, target }) => {
      const answer = expectedAccess(operationTable[FULL_PROPOSAL]!, principalNamed(principal).holder, target)
      return answer.allowed ? "allowed" : answer.code
    })
    expect(expected).toEqual(["allowed", "forbidden_scope", "account_mismatch"])
    // The count vitest prints: the full cases of every operation but the other proposal operations, and their wiring cases.
    const full = OPERATION_NAMES.filter(runsInFull)
      .reduce((sum, name) => sum + PRINCIPALS.length * (operationTable[name]?.account === true ? TARGETS.length : 1), 0)
    expect(CASES.length).toBe(full + (PROPOSAL_OPERATIONS.size - 1) * WIRING_CASES.length)
  })

  it("has an RPC procedure for every operation", () => {
    expect(OPERATION_NAMES.filter((name) => !operationEndpoints.has(name)), "operations without a procedure").toEqual([])
  })
})

const errorOf = (answer: SurfaceAnswer): Record<string, unknown> => record(record(answer.body)["error"])

/** The answer the SPEC gives this case (REST is held to it here; RPC and MCP are held to REST and to it). */
const expectedOf = (testCase: Case): Expected =>
  expectedAccess(operationTable[testCase.operation]!, testCase.principal.holder, testCase.target)

describe("access matrix over REST: operation × principal → account", () => {
  it.each(CASES.map((testCase) => [caseId("rest", testCase), testCase] as const))("%s", async (id, testCase) => {
    const result = results.get(id)
    expect(result, "the request was made").toBeDefined()
    const { answer, headers } = result!
    const context = `${id}: ${answer.status} ${answer.text}`
    const expected = expectedOf(testCase)
    if (!expected.allowed) {
      expect(answer.status, context).toBe(expected.status)
      const error = errorOf(answer)
      expect(error["code"], context).toBe(expected.code)
      expect(typeof error["message"], context).toBe("string")
      if (expected.fields) expect(error, context).toMatchObject(expected.fields)
      for (const field of expected.absent ?? []) expect(error, context).not.toHaveProperty(field)
      return
    }
    const sample = samples[testCase.operation]
    const outcome = sample.granted(expected.holder)
    expect(answer.status, context).toBe(outcome.status)
    if (outcome.code !== undefined) {
      expect(errorOf(answer)["code"], context).toBe(outcome.code)
      return
    }
    await sample.verify?.(asAnswer(answer, answer.status!), { principal: testCase.principal, holder: expected.holder, account: expected.account, headers })
  })
})

/** The shape a sample's `verify` reads; a surface without statuses stands in with REST's (the outcome agreed). */
const asAnswer = (answer: SurfaceAnswer, status: number): Answer => ({ status, headers: new Headers(), body: answer.body, text: answer.text })

/**
 * Operations whose success body may differ between two calls made side by side: each call creates its own
 * key, key pair, audit or action (new ids, times), or the ledger, key list, people list, brief, settings and connection (its
 * generated key pair) move with the calls around them. Their bodies are held to the sample's `verify`; every other success must equal REST's body exactly.
 */
const MOVING_BODIES: ReadonlySet<OperationName> = new Set<OperationName>([
  "getConnection",
  "createConnectionKeyPair",
  "createKey",
  "createAccountKey",
  "listKeys",
  "listMyKeys",
  "listPeople",
  "createPerson",
  "updatePerson",
  "revokePersonKeys",
  "getSettings",
  "updateSettings",
  "setSlackSigningSecret",
  "getSlackIntegration",
  "updateTargets",
  "updateGuardrails",
  "getGuardrails",
  "resumeAutoApply",
  "runAudit",
  "getBrief",
  "updateBrief",
  "listActions",
  "listApprovals",
  // Each call opens a changeset of its own; the list moves with them.
  "openChangeset",
  "listChangesets",
  "getPolicy",
  // Events accumulate while the matrix runs; webhooks are made (ids, secrets, times) by each call.
  "listEvents",
  "createWebhook",
  "listWebhooks",
  "testWebhook",
  "enableWebhook",
  ...proposalKinds.map((kind) => kind.operation)
])

/** RPC or MCP answers this case as REST does: the same refusal envelope, or a success that passes the same checks. */
const expectAgreesWithRest = async (surface: Exclude<Surface, "rest">, testCase: Case) => {
  const id = caseId(surface, testCase)
  const result = results.get(id)
  const rest = results.get(caseId("rest", testCase))
  expect(result, "the request was made").toBeDefined()
  expect(rest, "the REST request was made").toBeDefined()
  const { answer, headers } = result!
  const context = `${id}: ${answer.problem ?? answer.text} (REST: ${rest!.answer.status} ${rest!.answer.text})`
  expect(answer.problem, context).toBeUndefined()
  const expected = expectedOf(testCase)

  if (surface === "mcp" && HUMAN_ONLY.has(testCase.operation) && testCase.principal.holder !== undefined) {
    // Not a tool: the tool server answers as for any unknown tool, whatever REST would have granted.
    expect(answer.ok, context).toBe(false)
    expect(errorOf(answer), context).toMatchObject({ code: "not_found", message: `no tool named ${toolNameOf(testCase.operation)}` })
    return
  }

  expect(answer.ok, context).toBe(rest!.answer.ok)
  if (!answer.ok) {
    expect(answer.body, context).toEqual(rest!.answer.body)
    if (answer.status !== undefined) expect(answer.status, context).toBe(rest!.answer.status)
    const code = errorOf(answer)["code"]
    if (!expected.allowed) expect(code, context).toBe(expected.code)
    else expect(code, context).toBe(samples[testCase.operation].granted(expected.holder).code)
    return
  }
  expect(expected.allowed, context).toBe(true)
  if (!expected.allowed) return
  await samples[testCase.operation].verify?.(asAnswer(answer, rest!.answer.status!), {
    principal: testCase.principal,
    holder: expected.holder,
    account: expected.account,
    headers
  })
  if (!MOVING_BODIES.has(testCase.operation)) expect(answer.body, context).toEqual(rest!.answer.body)
}

const surfaceCases = (surface: Surface) =>
  CASES.filter((testCase) => onSurface(surface, testCase.principal)).map((testCase) => [caseId(surface, testCase), testCase] as const)

describe("access matrix over RPC: operation × principal → account", () => {
  it.each(surfaceCases("rpc"))("%s", (_id, testCase) => expectAgreesWithRest("rpc", testCase))
})

describe("access matrix over MCP: operation × principal → account", () => {
  it.each(surfaceCases("mcp"))("%s", (_id, testCase) => expectAgreesWithRest("mcp", testCase))

  it("lists to each key the tools of the operations but the human-only ones that its scope, grant and binding allow", () => {
    expect(mcpToolNames.size).toBe(PRINCIPALS.filter((p) => p.holder?.kind === "key").length)
    for (const [principal, names] of mcpToolNames) {
      const holder = PRINCIPALS.find((p) => p.name === principal)!.holder!
      // What docs/contract.md 5 refuses whatever the account: scope rank, the canApprove grant, org level for a bound key.
      const allowed = (op: Operation) =>
        RANK[holder.scope] >= RANK[op.scope] && (op.grant !== "approve" || holder.canApprove) &&
        !(op.orgLevel === true && holder.binding.kind === "account")
      const expected = OPERATION_NAMES.filter((name) => !HUMAN_ONLY.has(name) && allowed(Operations[name])).map(toolNameOf).sort()
      expect([...names].sort(), principal).toEqual(expected)
    }
  })

  it.each(PRINCIPALS.filter((p) => p.holder === undefined).map((p) => [p.name, p] as const))(
    "refuses the SDK client's connection with HTTP 401: %s",
    async (_name, principal) => {
      await expect(connectMcp(credentials.get(principal.name) ?? {})).rejects.toSatisfy(
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 401
      )
    }
  )
})

describe("bad bodies: authentication, scope, grant and reach answer before the body is read", () => {
  const badBodyCases = SURFACES.flatMap((surface) =>
    BAD_BODY_CASES.filter((testCase) => onSurface(surface, testCase.principal)).map((testCase) => [caseId(surface, testCase), surface, testCase] as const)
  )

  it.each(badBodyCases)("%s", (id, surface, testCase) => {
    const result = results.get(id)
    expect(result, "the request was made").toBeDefined()
    const { answer } = result!
    const context = `${id}: ${answer.problem ?? `${answer.status} ${answer.text}`}`
    expect(answer.problem, context).toBeUndefined()
    expect(answer.ok, context).toBe(false)
    const expected = expectedOf(testCase)
    const error = errorOf(answer)
    if (surface === "mcp" && HUMAN_ONLY.has(testCase.operation) && testCase.principal.holder !== undefined) {
      // Not a tool: answered as any unknown tool, before anything else.
      expect(error["code"], context).toBe("not_found")
    } else if (!expected.allowed) {
      expect(error["code"], context).toBe(expected.code)
      if (answer.status !== undefined) expect(answer.status, context).toBe(expected.status)
      if (expected.fields) expect(error, context).toMatchObject(expected.fields)
    } else {
      expect(error["code"], context).toBe("invalid_request")
      if (answer.status !== undefined) expect(answer.status, context).toBe(400)
    }
  })
})

describe("who may approve, on every surface: principals with one root are one actor", () => {
  type Credential = { readonly secret: string } | { readonly cookie: Record<string, string> }
  interface Made {
    readonly keyId: string
    readonly secret: string
  }
  /** A key the admin person made (their agent), a key that key made, and a key an operator made. */
  let personKey: Made
  let mintedKey: Made
  let independentKey: Made
  const roots = new Map<string, Root>()
  let actionCounter = 0

  const createKey = async (headers: Record<string, string>, name: string, scope: Scope): Promise<Made> => {
    const answer = await call(`${server.api}/keys`, { method: "POST", headers, body: { name, scope, canApprove: true } })
    expect(answer.status, answer.text).toBe(201)
    const created = Schema.decodeUnknownSync(CreatedKey)(answer.body)
    roots.set(created.key.keyId, created.key.root)
    return { keyId: created.key.keyId, secret: created.secret }
  }

  const adminRoot = (): Root => ({ kind: "person", id: personIds.get("admin")!, name: "Matrix admin" })

  /** A pending action on account A, proposed by `proposedBy`, recorded with its root as a proposal records it. */
  const FOUR_EYES_PAYLOAD = { campaignId: "four_eyes_1", campaignName: "four eyes", status: "PAUSED", priorStatus: "ENABLED" }
  const pendingAction = async (proposedBy: { readonly kind: "key" | "person"; readonly id: string }) => {
    const actionId = `act_matrix_four_eyes_${++actionCounter}`
    const root = proposedBy.kind === "person" ? { kind: "person", id: proposedBy.id, name: "matrix proposer" } : roots.get(proposedBy.id)
    if (root === undefined) throw new Error(`no root known for ${proposedBy.id}`)
    await query(
      database,
      `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by, created_at)
       VALUES ($1, $2, $3, 'campaign_status', 'queued', 'proposed', 'review', 'pause campaign 1', 'four eyes', $5::jsonb, $4::jsonb,
               clock_timestamp())`,
      [actionId, orgIds.main, A, JSON.stringify({ ...proposedBy, name: "matrix proposer", root }), JSON.stringify(FOUR_EYES_PAYLOAD)]
    )
    return actionId
  }

  /** Approves over one surface; the answer as the other matrix tests read it. */
  const approveOn = async (surface: Surface, credential: Credential, actionId: string): Promise<SurfaceAnswer> => {
    if (surface === "rest") {
      const headers = "secret" in credential ? { authorization: `Bearer ${credential.secret}` } : credential.cookie
      const answer = await call(`${server.api}/accounts/${A}/approvals/${actionId}/approve`, { method: "POST", headers })
      return { ok: isOk(answer.status), status: answer.status, body: answer.body, text: answer.text }
    }
    if (!("secret" in credential)) throw new Error("RPC and MCP take keys only")
    if (surface === "rpc") {
      const runtime = ManagedRuntime.make(AcsClient.layer({ url: server.baseUrl, key: credential.secret }))
      try {
        const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) =>
          client.approveAction({ path: { projectId: A, actionId } })))
        return rpcAnswer(exit)
      } finally {
        await runtime.dispose()
      }
    }
    const client = await connectMcp({ authorization: `Bearer ${credential.secret}` })
    try {
      const result = (await client.callTool({ name: "platform_approve_action", arguments: { projectId: A, actionId } })) as CallToolResult
      const first = result.content[0]
      const text = first?.type === "text" ? first.text : ""
      return { ok: result.isError !== true, status: undefined, body: parseText(text), text }
    } finally {
      await client.close()
    }
  }

  const expectSecondApproverRefusal = (answer: SurfaceAnswer, says: RegExp) => {
    expect(answer.ok, answer.text).toBe(false)
    if (answer.status !== undefined) expect(answer.status, answer.text).toBe(403)
    expect(errorOf(answer), answer.text).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    expect(errorOf(answer)["message"], answer.text).toMatch(says)
  }

  const expectApproved = (answer: SurfaceAnswer, actionId: string) => {
    expect(answer.ok, answer.text).toBe(true)
    expect(record(answer.body)).toMatchObject({ actionId, status: "approved" })
  }

  const setFourEyes = async (fourEyes: string) => {
    const answer = await call(`${server.api}/settings`, { method: "PUT", key: BOOTSTRAP_KEY, body: { fourEyes } })
    expect(answer.status, answer.text).toBe(200)
  }

  /** Runs `body` under the rule, then restores the org's default. */
  const under = async (fourEyes: string, body: () => Promise<void>) => {
    await setFourEyes(fourEyes)
    try {
      await body()
    } finally {
      await setFourEyes("distinct_actor")
    }
  }

  beforeAll(async () => {
    personKey = await createKey(credentials.get("person admin")!, "four eyes: the admin's agent", "admin")
    mintedKey = await createKey({ authorization: `Bearer ${personKey.secret}` }, "four eyes: minted by the agent", "write")
    independentKey = await insertKey("main", { scope: "write", canApprove: true, binding: { kind: "org" } })
    roots.set(independentKey.keyId, { kind: "key", id: independentKey.keyId, name: `matrix ${independentKey.keyId}` })
    // An approval re-runs the kind's local validation (docs/contract.md 3): the paused campaign is in the warehouse.
    await query(
      database,
      `INSERT INTO campaigns (project_id, campaign_id, name, adam_id, status, bid_strategy) VALUES ($1, $2, 'four eyes', '1', 'ENABLED', 'MANUAL_CPT')`,
      [A, FOUR_EYES_PAYLOAD.campaignId]
    )
  })

  it("records who created each key and who it answers to: a person, or an org key that depends on nobody", async () => {
    const listed = await call(`${server.api}/keys`, { key: BOOTSTRAP_KEY })
    const { keys } = Schema.decodeUnknownSync(Schema.Struct({ keys: Schema.Array(ApiKey) }))(listed.body)
    const byId = (keyId: string) => keys.find((k) => k.keyId === keyId)
    expect(byId(personKey.keyId)).toMatchObject({ createdBy: `person:${personIds.get("admin")}`, root: adminRoot() })
    expect(byId(mintedKey.keyId)).toMatchObject({ createdBy: `key:${personKey.keyId}`, root: adminRoot() })
    expect(byId(independentKey.keyId)).toMatchObject({ createdBy: null, root: { kind: "key", id: independentKey.keyId } })
  })

  it("starts a new org on distinct_actor, and says so in the deprecated boolean too", async () => {
    const settings = await call(`${server.api}/settings`, { key: BOOTSTRAP_KEY })
    expect(settings.body).toMatchObject({ fourEyes: "distinct_actor", requireSecondApprover: true })
  })

  it.each(SURFACES)("%s: refuses the proposing key, and any key of the same root", async (surface) => {
    const actionId = await pendingAction({ kind: "key", id: personKey.keyId })
    expectSecondApproverRefusal(await approveOn(surface, personKey, actionId), /you proposed this change yourself/)
    expectSecondApproverRefusal(await approveOn(surface, mintedKey, actionId), /both answer to Matrix admin/)
    expect((await query<{ status: string }>(database, "SELECT status FROM actions WHERE action_id = $1", [actionId]))[0]?.status)
      .toBe("proposed")
  })

  it.each(SURFACES)("%s: refuses a person's own action to the keys that person made, at any depth", async (surface) => {
    const actionId = await pendingAction({ kind: "person", id: personIds.get("admin")! })
    expectSecondApproverRefusal(await approveOn(surface, personKey, actionId), /a key never approves its own person's proposals/)
    expectSecondApproverRefusal(await approveOn(surface, mintedKey, actionId), /a key never approves its own person's proposals/)
  })

  it("rest: lets the person's session approve what their agent's keys proposed, never their own action", async () => {
    const cookie = credentials.get("person admin")!
    const byAgent = await pendingAction({ kind: "key", id: personKey.keyId })
    expectApproved(await approveOn("rest", { cookie }, byAgent), byAgent)
    const byMinted = await pendingAction({ kind: "key", id: mintedKey.keyId })
    expectApproved(await approveOn("rest", { cookie }, byMinted), byMinted)
    expectSecondApproverRefusal(
      await approveOn("rest", { cookie }, await pendingAction({ kind: "person", id: personIds.get("admin")! })),
      /you proposed this change yourself/
    )
  })

  it("rest: under distinct_person, the person behind the proposing key is refused too", async () => {
    await under("distinct_person", async () => {
      const cookie = credentials.get("person admin")!
      const actionId = await pendingAction({ kind: "key", id: personKey.keyId })
      expectSecondApproverRefusal(await approveOn("rest", { cookie }, actionId), /\(distinct_person\) needs another person/)
      expectApproved(await approveOn("rest", independentKey, actionId), actionId)
    })
  })

  it.each(SURFACES)("%s: lets another actor decide", async (surface) => {
    const actionId = await pendingAction({ kind: "key", id: personKey.keyId })
    expectApproved(await approveOn(surface, independentKey, actionId), actionId)
  })

  it.each(SURFACES)("%s: lets a proposer approve its own action when the rule is off", async (surface) => {
    await under("off", async () => {
      const actionId = await pendingAction({ kind: "key", id: personKey.keyId })
      expectApproved(await approveOn(surface, personKey, actionId), actionId)
    })
  })

  it("tells each caller what it may do with each pending action, in the approvals listing", async () => {
    const byAgent = await pendingAction({ kind: "key", id: personKey.keyId })
    const mayOf = async (headers: Record<string, string>) => {
      const answer = await call(`${server.api}/accounts/${A}/approvals?limit=1000`, { headers })
      expect(answer.status, answer.text).toBe(200)
      // Excess properties refused: the caller's permissions are compared whole, as the server sent them.
      const { approvals } = Schema.decodeUnknownSync(ApprovalList, { onExcessProperty: "error" })(answer.body)
      return approvals.find((a) => a.actionId === byAgent)?.callerMay
    }
    expect(await mayOf(credentials.get("person admin")!)).toEqual({
      approve: true,
      reject: true,
      yours: true,
      reason: `your key "matrix proposer" proposed this change: you review it as its person`
    })
    expect(await mayOf({ authorization: `Bearer ${mintedKey.secret}` })).toMatchObject({ approve: false, reject: true, yours: true })
    expect(await mayOf({ authorization: `Bearer ${independentKey.secret}` })).toMatchObject({ approve: true, reject: true, yours: false })
    expect(await mayOf(credentials.get("person viewer")!)).toMatchObject({ approve: false, reject: false, yours: false })
  })

  it("lets the proposer withdraw its own action: reject needs no second approver", async () => {
    const actionId = await pendingAction({ kind: "key", id: personKey.keyId })
    const answer = await call(`${server.api}/accounts/${A}/approvals/${actionId}/reject`, { method: "POST", key: personKey.secret })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body).toMatchObject({ actionId, status: "rejected" })
  })

  it("maps the deprecated boolean onto the rule, refuses a contradiction, and lets only an admin change it", async () => {
    const put = (body: unknown, key = BOOTSTRAP_KEY) => call(`${server.api}/settings`, { method: "PUT", key, body })
    try {
      expect((await put({ requireSecondApprover: false })).body).toMatchObject({ fourEyes: "off", requireSecondApprover: false })
      expect((await put({ requireSecondApprover: true })).body).toMatchObject({ fourEyes: "distinct_person", requireSecondApprover: true })
      const contradiction = await put({ fourEyes: "off", requireSecondApprover: true })
      expect(contradiction.status, contradiction.text).toBe(400)
      expect(errorOf({ ok: false, status: 400, body: contradiction.body, text: contradiction.text })).toMatchObject({ code: "invalid_request" })
      expect(errorCode(await put({ fourEyes: "sometimes" }))).toBe("invalid_request")
    } finally {
      await setFourEyes("distinct_actor")
    }
    expect(errorCode(await put({ fourEyes: "off" }, mintedKey.secret))).toBe("forbidden_scope")
  })
})

describe("a person's session cookie on RPC and MCP", () => {
  const persons = PRINCIPALS.filter((p) => p.holder?.kind === "person").map((p) => [p.name, p] as const)

  it.each(persons)("mcp: refuses %s's valid session with HTTP 401", async (_name, principal) => {
    const cookie = credentials.get(principal.name)!
    // The cookie is valid: REST takes it.
    expect((await call(`${server.api}/auth/me`, { headers: cookie })).status).toBe(200)
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "matrix", version: "1" } }
    }
    const answer = await call(`${server.baseUrl}/mcp`, { method: "POST", headers: { ...cookie, accept: MCP_ACCEPT }, body: initialize })
    expect(answer.status).toBe(401)
    expect(errorCode(answer)).toBe("unauthorized")
  })

  it.each(persons)("rpc: refuses %s's valid session with Unauthorized", async (_name, principal) => {
    const runtime = ManagedRuntime.make(rpcLayer(credentials.get(principal.name)!))
    try {
      const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) => client.getMe({})))
      expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe(Option.map((e) => e._tag), Option.getOrUndefined)).toBe("Unauthorized")
    } finally {
      await runtime.dispose()
    }
  })
})

describe("refusals", () => {
  it("answers every bad credential with the same 401 body, whatever the operation or surface", () => {
    const refused = SURFACES.flatMap((surface) =>
      CASES.filter((testCase) => testCase.principal.holder === undefined && onSurface(surface, testCase.principal))
        .map((testCase) => ({ id: caseId(surface, testCase), answer: results.get(caseId(surface, testCase))!.answer }))
    )
    expect(refused.length).toBeGreaterThan(0)
    const first = refused[0]!.answer.body
    for (const { answer, id } of refused) {
      if (answer.status !== undefined) expect(answer.status, id).toBe(401)
      expect(answer.body, id).toEqual(first)
    }
  })

  it("refuses another org's account exactly like an out-of-reach one of the caller's own org", () => {
    const otherOrgKey = PRINCIPALS.find((principal) => principal.org === "other")!
    const subsetKey = PRINCIPALS.find((principal) =>
      principal.row?.binding.kind === "subset" && principal.row.scope === "admin" && principal.row.canApprove
    )!
    for (const operation of OPERATION_NAMES.filter((name) => operationTable[name]?.account === true && runsInFull(name))) {
      const isolated = results.get(`rest: ${operation} × ${otherOrgKey.name} → ${A}`)!.answer
      const outOfSet = results.get(`rest: ${operation} × ${subsetKey.name} → ${B}`)!.answer
      expect(isolated.status, operation).toBe(403)
      expect(errorOf(isolated)["code"], operation).toBe("account_mismatch")
      expect(errorOf(outOfSet)["code"], operation).toBe("account_mismatch")
    }
  })
})
