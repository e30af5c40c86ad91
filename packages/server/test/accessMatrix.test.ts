/**
 * The access matrix (SPEC 5 and 7, API.md "Principals"): every operation of the operation table × every
 * kind of principal (API keys of each scope, grant and binding, people of each role, bad credentials, a
 * key of another org) × every way of naming an account, against the real started server over HTTP.
 *
 * The expected answer is derived from the operation table by `expectedAccess`, a small pure function
 * written here from the SPEC (not from the server's code); each operation has a sample request that
 * succeeds when access is granted. All requests are made up front in parallel chunks; each case is then
 * its own `it`, named operation × principal → account.
 */
import { Api } from "@acs/domain/Api"
import { type Operation, type OperationName, Operations, type Scope } from "@acs/domain/Operations"
import { type ProposalKindName, proposalKinds, type ProposalOperationName } from "@acs/domain/ProposalKinds"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hashPassword } from "../src/auth/Secrets.ts"
import { createDatabase, insertAccount, insertOrg, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

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

/** API.md "Principals", restated here so that the server's own table is under test too. */
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
  { name: "key unknown", holder: undefined, org: "main", setup: { type: "unknownKey" } },
  { name: "no credentials", holder: undefined, org: "main", setup: { type: "none" } },
  { name: "session ended", holder: undefined, org: "main", setup: { type: "session", state: "ended" } },
  { name: "session expired", holder: undefined, org: "main", setup: { type: "session", state: "expired" } }
]

// ---------------------------------------------------------------------------------------------------------
// The expected answer, from the operation table and SPEC 5 alone
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
 * SPEC 5, checked in this order: credentials (401), scope rank, the canApprove grant, org-level operations
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
  state: "valid" | "expired" | "revoked" = "valid"
): Promise<{ readonly keyId: string; readonly secret: string }> => {
  const keyId = `key_matrix_${++keyCounter}_${Crypto.randomBytes(4).toString("hex")}`
  const secret = `acs_${randomToken()}`
  const projectIds = spec.binding.kind === "org" ? [] : spec.binding.kind === "subset" ? spec.binding.projectIds : [spec.binding.projectId]
  await query(
    database,
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, expires_at, revoked_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb,
             CASE WHEN $9 = 'expired' THEN now() - interval '1 hour' ELSE now() + interval '1 day' END,
             CASE WHEN $9 = 'revoked' THEN now() ELSE NULL END)`,
    [keyId, orgIds[org], `matrix ${keyId}`, sha256(secret), spec.scope, spec.canApprove, spec.binding.kind, JSON.stringify(projectIds), state]
  )
  keysOfOrg[org].push(keyId)
  return { keyId, secret }
}

const emailOf = (role: Role): string => `${role}@matrix.example`

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
 * existing entity answers 404 `not_found` once access is granted; create_campaign names none and is recorded.
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
  ad_status: { adId: "1", status: "PAUSED" }
}

const proposalSamples = () =>
  Object.fromEntries(proposalKinds.map((kind): [ProposalOperationName, Sample] => [kind.operation, {
    method: "POST",
    path: `/accounts/:projectId/actions/${kind.path}`,
    prepare: () => ({ body: { ...proposalBodies[kind.kind], reason: "access matrix" } }),
    granted: () => kind.kind === "create_campaign" ? { status: 201 } : { status: 404, code: "not_found" },
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
    // Logout ends a person's session; an API key is refused as a malformed request (API.md).
    granted: (holder) => holder.kind === "person" ? { status: 204 } : { status: 400, code: "invalid_request" },
    verify: async (_answer, { headers, holder }) => {
      if (holder.kind !== "person") return
      const after = await call(`${server.api}/auth/me`, { headers })
      expect(after.status, "the ended session no longer authenticates").toBe(401)
      expect(errorCode(after)).toBe("unauthorized")
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
  listCampaigns: emptyCollection("/accounts/:projectId/campaigns", "campaigns"),
  listAdGroups: emptyCollection("/accounts/:projectId/ad-groups", "adGroups"),
  listKeywords: emptyCollection("/accounts/:projectId/keywords", "keywords"),
  listSearchTerms: emptyCollection("/accounts/:projectId/search-terms", "searchTerms"),
  listAds: emptyCollection("/accounts/:projectId/ads", "ads"),
  listNegativeKeywords: emptyCollection("/accounts/:projectId/negative-keywords", "negativeKeywords"),
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
  getPolicy: {
    method: "GET",
    path: "/accounts/:projectId/policy",
    granted: () => ({ status: 200 }),
    verify: (answer) => expect(record(answer.body)).toMatchObject({ killSwitch: { setting: "platformAutoApply" }, keyProposals: "always_review" })
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
// The cases, and every request made up front
// ---------------------------------------------------------------------------------------------------------

interface Case {
  readonly id: string
  readonly operation: OperationName
  readonly principal: PrincipalSpec
  readonly target: string | undefined
}

const CASES: ReadonlyArray<Case> = OPERATION_NAMES.flatMap((operation) =>
  PRINCIPALS.flatMap((principal) =>
    (operationTable[operation]?.account === true ? [...TARGETS] : [undefined]).map((target): Case => ({
      id: `${operation} × ${principal.name}${target === undefined ? "" : ` → ${target}`}`,
      operation,
      principal,
      target
    }))
  )
)

interface Result {
  readonly answer: Answer
  readonly headers: Record<string, string>
}

const results = new Map<string, Result>()

const fillPath = (template: string, params: Readonly<Record<string, string>>): string =>
  template.replace(/:(\w+)/g, (_match, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} in ${template}`)
    return encodeURIComponent(value)
  })

const run = async (testCase: Case): Promise<Result> => {
  const sample = samples[testCase.operation]
  const prepared = (await sample.prepare?.(testCase.principal, testCase.target)) ?? {}
  const params = { ...(testCase.target === undefined ? {} : { projectId: testCase.target }), ...prepared.params }
  const headers = prepared.headers ?? credentials.get(testCase.principal.name) ?? {}
  const answer = await call(`${server.api}${fillPath(sample.path, params)}`, {
    method: sample.method,
    headers,
    ...(prepared.body !== undefined ? { body: prepared.body } : {})
  })
  return { answer, headers }
}

const CHUNK = 32

beforeAll(async () => {
  database = await createDatabase()
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    RATE_LIMIT_READ: "100000",
    RATE_LIMIT_WRITE: "100000",
    RATE_LIMIT_EXPENSIVE: "100000",
    RATE_LIMIT_LOGIN: "100000"
  })
  orgIds.main = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertOrg(database, OTHER_ORG_ID)
  await Promise.all([insertAccount(database, orgIds.main, A), insertAccount(database, orgIds.main, B), insertAccount(database, OTHER_ORG_ID, B2)])

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

  for (let start = 0; start < CASES.length; start += CHUNK) {
    const chunk = CASES.slice(start, start + CHUNK)
    const answers = await Promise.all(chunk.map(run))
    chunk.forEach((testCase, index) => results.set(testCase.id, answers[index]!))
  }
})

afterAll(async () => {
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
})

describe("access matrix: operation × principal → account", () => {
  it.each(CASES.map((testCase) => [testCase.id, testCase] as const))("%s", async (_id, testCase) => {
    const result = results.get(testCase.id)
    expect(result, "the request was made").toBeDefined()
    const { answer, headers } = result!
    const context = `${testCase.id}: ${answer.status} ${answer.text}`
    const expected = expectedAccess(operationTable[testCase.operation]!, testCase.principal.holder, testCase.target)
    if (!expected.allowed) {
      expect(answer.status, context).toBe(expected.status)
      expect(errorCode(answer), context).toBe(expected.code)
      const error = record(record(answer.body)["error"])
      expect(typeof error["message"], context).toBe("string")
      if (expected.fields) expect(error, context).toMatchObject(expected.fields)
      for (const field of expected.absent ?? []) expect(error, context).not.toHaveProperty(field)
      return
    }
    const sample = samples[testCase.operation]
    const outcome = sample.granted(expected.holder)
    expect(answer.status, context).toBe(outcome.status)
    if (outcome.code !== undefined) {
      expect(errorCode(answer), context).toBe(outcome.code)
      return
    }
    await sample.verify?.(answer, { principal: testCase.principal, holder: expected.holder, account: expected.account, headers })
  })
})

describe("refusals", () => {
  it("answers every bad credential with the same 401 body, whatever the operation", () => {
    const refused = CASES.filter((testCase) => testCase.principal.holder === undefined).map((testCase) => results.get(testCase.id)!)
    expect(refused.length).toBeGreaterThan(0)
    const first = refused[0]!.answer.text
    for (const { answer } of refused) {
      expect(answer.status).toBe(401)
      expect(answer.text).toBe(first)
    }
  })

  it("refuses another org's account exactly like an out-of-reach one of the caller's own org", () => {
    const otherOrgKey = PRINCIPALS.find((principal) => principal.org === "other")!
    const subsetKey = PRINCIPALS.find((principal) =>
      principal.row?.binding.kind === "subset" && principal.row.scope === "admin" && principal.row.canApprove
    )!
    for (const operation of OPERATION_NAMES.filter((name) => operationTable[name]?.account === true)) {
      const isolated = results.get(`${operation} × ${otherOrgKey.name} → ${A}`)!.answer
      const outOfSet = results.get(`${operation} × ${subsetKey.name} → ${B}`)!.answer
      expect(isolated.status, operation).toBe(403)
      expect(errorCode(isolated), operation).toBe("account_mismatch")
      expect(errorCode(outOfSet), operation).toBe("account_mismatch")
    }
  })
})
