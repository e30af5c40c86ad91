/**
 * The operation table: every authenticated capability of acs, with the access it needs. REST endpoints,
 * RPC procedures and MCP tools carry the same names, and one `access()` checks them all against it.
 */
import { proposalKinds, type ProposalOperationName } from "./ProposalKinds.ts"

export type Scope = "read" | "write" | "admin"
export type Bucket = "read" | "write" | "expensive"
/** `none`: never refused for volume (logout: ending a session must always work). */
export type Charge = Bucket | "none"

export interface Operation {
  readonly scope: Scope
  /** `approve`: the canApprove grant, needed on top of the scope (docs/contract.md 5). */
  readonly grant?: "approve"
  /** Org-level operations refuse account-scoped keys (docs/contract.md 5). */
  readonly orgLevel?: true
  /** True when the operation names an account through `{projectId}` (or `current`). */
  readonly account?: true
  /** The docs/contract.md 8 rate-limit bucket the call counts against; `none` for a call never refused for volume. */
  readonly bucket: Charge
  readonly summary: string
}

export const scopeRank: Record<Scope, number> = { read: 1, write: 2, admin: 3 }

export const satisfiesScope = (held: Scope, required: Scope): boolean => scopeRank[held] >= scopeRank[required]

interface ProposalOperation {
  readonly scope: "write"
  readonly account: true
  readonly bucket: "write"
  readonly summary: string
}

/** One operation per proposal kind (`proposeBudgetChange`, …), generated from the kind declarations. */
const proposalOperations = Object.fromEntries(
  proposalKinds.map((kind) => [kind.operation, { scope: "write", account: true, bucket: "write", summary: kind.title }])
) as { readonly [K in ProposalOperationName]: ProposalOperation }

export const Operations = {
  getMe: { scope: "read", bucket: "read", summary: "Who the caller is: key or person, scope, grant, binding" },
  // Never rate-limited: a person whose write bucket is empty must still be able to end their session (docs/decisions/access-and-keys.md).
  logout: { scope: "read", bucket: "none", summary: "End the caller's session" },
  changePassword: {
    scope: "read",
    bucket: "write",
    summary: "Change the signed-in person's own password; their other sessions end"
  },
  createKey: { scope: "admin", orgLevel: true, bucket: "write", summary: "Create an org-wide or org-subset API key" },
  listKeys: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the org's API keys" },
  revokeKey: { scope: "admin", orgLevel: true, bucket: "write", summary: "Revoke an API key" },
  createAccountKey: {
    scope: "admin",
    account: true,
    bucket: "write",
    summary: "Create an API key bound to one account"
  },
  listPeople: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the workspace's people and their roles" },
  createPerson: { scope: "admin", orgLevel: true, bucket: "write", summary: "Add a person who signs in to the console" },
  updatePerson: { scope: "admin", orgLevel: true, bucket: "write", summary: "Set a person's role, or disable or enable them" },
  revokePersonKeys: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Revoke every API key of one person (made by them or by their keys)"
  },
  getSettings: { scope: "read", orgLevel: true, bucket: "read", summary: "Read the org settings (the kill switch)" },
  updateSettings: { scope: "admin", orgLevel: true, bucket: "write", summary: "Change the org settings" },
  listAccounts: { scope: "read", orgLevel: true, bucket: "read", summary: "List the workspace's accounts" },
  getAccount: { scope: "read", account: true, bucket: "read", summary: "One account with its data freshness" },
  getConnection: { scope: "read", orgLevel: true, bucket: "read", summary: "The upstream connection state" },
  updateConnection: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Save upstream credentials (tested first, stored encrypted)"
  },
  createConnectionKeyPair: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Generate the EC P-256 key pair for an Apple Ads API client (private key kept sealed)"
  },
  discoverAccounts: {
    scope: "admin",
    orgLevel: true,
    bucket: "expensive",
    summary: "List the accounts the upstream credentials reach"
  },
  importAccounts: { scope: "admin", orgLevel: true, bucket: "write", summary: "Import upstream accounts as projects" },
  listSyncs: { scope: "read", account: true, bucket: "read", summary: "Sync history and data freshness" },
  getSync: { scope: "read", account: true, bucket: "read", summary: "One sync, with its progress while running" },
  startSync: { scope: "admin", account: true, bucket: "write", summary: "Start a sync of the account now" },
  listCampaigns: { scope: "read", account: true, bucket: "read", summary: "Campaigns ranked by spend in the window" },
  listAdGroups: { scope: "read", account: true, bucket: "read", summary: "Ad groups ranked by spend in the window" },
  listKeywords: { scope: "read", account: true, bucket: "read", summary: "Keywords ranked by spend in the window" },
  listSearchTerms: { scope: "read", account: true, bucket: "read", summary: "Search terms ranked by spend in the window" },
  listAds: { scope: "read", account: true, bucket: "read", summary: "Ads ranked by spend in the window" },
  listNegativeKeywords: { scope: "read", account: true, bucket: "read", summary: "Negative keywords, by text" },
  ...proposalOperations,
  listActions: { scope: "read", account: true, bucket: "read", summary: "The change ledger, newest first" },
  getAction: { scope: "read", account: true, bucket: "read", summary: "One action's whole record" },
  listApprovals: { scope: "read", account: true, bucket: "read", summary: "Actions waiting for a human, oldest first" },
  approveAction: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Approve a pending action; its apply job is enqueued"
  },
  rejectAction: { scope: "write", grant: "approve", account: true, bucket: "write", summary: "Reject a pending action" },
  revertAction: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Undo an applied action"
  },
  getPolicy: { scope: "read", account: true, bucket: "read", summary: "The live safe-apply policy of the account" },
  getTargets: { scope: "read", account: true, bucket: "read", summary: "The operator's CPA target band" },
  updateTargets: { scope: "admin", account: true, bucket: "write", summary: "Set the operator's CPA target band" },
  getPlan: { scope: "read", account: true, bucket: "read", summary: "Suggested changes, each a proposal to POST as is" },
  runAudit: { scope: "write", account: true, bucket: "write", summary: "Audit the account's set-up now and keep the findings" },
  getAudit: { scope: "read", account: true, bucket: "read", summary: "One audit's findings" },
  getBrief: { scope: "read", account: true, bucket: "read", summary: "The operator's brief: goals and constraints" },
  updateBrief: { scope: "admin", account: true, bucket: "write", summary: "Replace the operator's brief" },
  runReport: {
    scope: "read",
    account: true,
    bucket: "expensive",
    summary: "A full-row report from the upstream, paginated by the upstream"
  },
  // Events (docs/contract.md 6): read, org or account reach (an account-bound key sees its account's events).
  listEvents: { scope: "read", bucket: "read", summary: "The org's events, newest first" },
  streamEvents: { scope: "read", bucket: "read", summary: "The org's events as they happen (Server-Sent Events)" },
  createWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Add a webhook endpoint (its secret shown once)" },
  listWebhooks: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the org's webhook endpoints" },
  deleteWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Delete a webhook endpoint" },
  testWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Send a ping event to a webhook endpoint" },
  enableWebhook: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Turn a webhook endpoint disabled after repeated failure back on"
  },
  listWebhookDeliveries: {
    scope: "admin",
    orgLevel: true,
    bucket: "read",
    summary: "A webhook endpoint's deliveries: status code, duration, next retry"
  },
  // Not org-level: docs/contract.md 5 names the org-level endpoints, and these search the platform's public catalog only.
  searchApps: { scope: "read", bucket: "expensive", summary: "Search apps on the upstream platform" },
  searchGeo: { scope: "read", bucket: "expensive", summary: "Search locations on the upstream platform" },
  keywordIdeas: {
    scope: "read",
    account: true,
    bucket: "expensive",
    summary: "Keyword ideas mined from the account's search terms"
  }
} as const satisfies Record<string, Operation>

export type OperationName = keyof typeof Operations

const proposalOperationNames: ReadonlySet<string> = new Set(proposalKinds.map((kind) => kind.operation))

export const isProposalOperation = (operation: OperationName): operation is ProposalOperationName =>
  proposalOperationNames.has(operation)

/**
 * The bucket a call counts against: its operation's, except a proposal's or a revert's dry run (`?preview=true`,
 * docs/contract.md 4.1), which writes nothing and counts as a read. One operation either way: same scope, same grant.
 */
export const bucketOf = (operation: OperationName, preview: boolean): Charge =>
  preview && (isProposalOperation(operation) || operation === "revertAction") ? "read" : Operations[operation].bucket
