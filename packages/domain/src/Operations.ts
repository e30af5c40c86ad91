/**
 * The operation table: every authenticated capability of acs, with the access it needs. REST endpoints,
 * RPC procedures and MCP tools carry the same names, and one `access()` checks them all against it.
 */
import { proposalKinds, type ProposalOperationName } from "./ProposalKinds.ts"
import { human, type Tool, tool, type ToolFacts } from "./ToolFacts.ts"

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
  /** The operation as an MCP agent tool: whether it is one, and its hints (ToolFacts.ts says why each). */
  readonly mcp: ToolFacts
}

export const scopeRank: Record<Scope, number> = { read: 1, write: 2, admin: 3 }

export const satisfiesScope = (held: Scope, required: Scope): boolean => scopeRank[held] >= scopeRank[required]

interface ProposalOperation {
  readonly scope: "write"
  readonly account: true
  readonly bucket: "write"
  readonly summary: string
  readonly mcp: Tool
}

/**
 * One operation per proposal kind (`proposeBudgetChange`, …), generated from the kind declarations; each is a tool,
 * its change queued and revertible unless its kind says otherwise in the table.
 */
const proposalOperations = Object.fromEntries(
  proposalKinds.map((kind) => [kind.operation, { scope: "write", account: true, bucket: "write", summary: kind.title, mcp: tool }])
) as { readonly [K in ProposalOperationName]: ProposalOperation }

export const Operations = {
  getMe: { scope: "read", bucket: "read", summary: "Who the caller is: key or person, scope, grant, binding", mcp: tool },
  // Never rate-limited: a person whose write bucket is empty must still be able to end their session (docs/decisions/access-and-keys.md).
  logout: { scope: "read", bucket: "none", summary: "End the caller's session", mcp: human },
  changePassword: {
    scope: "read",
    bucket: "write",
    summary: "Change the signed-in person's own password; their other sessions end",
    mcp: human
  },
  authorizeOAuthClient: {
    scope: "read",
    bucket: "write",
    summary: "A signed-in person's consent to a remote MCP client (OAuth): a one-time code, or the refusal",
    mcp: human
  },
  listMyKeys: {
    scope: "read",
    bucket: "read",
    summary: "The signed-in person's own keys (those that answer to them: connected apps included)",
    mcp: human
  },
  revokeMyKey: { scope: "read", bucket: "write", summary: "Revoke one of the signed-in person's own keys", mcp: human },
  createKey: { scope: "admin", orgLevel: true, bucket: "write", summary: "Create an org-wide or org-subset API key", mcp: human },
  listKeys: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the org's API keys", mcp: human },
  revokeKey: { scope: "admin", orgLevel: true, bucket: "write", summary: "Revoke an API key", mcp: human },
  createAccountKey: {
    scope: "admin",
    account: true,
    bucket: "write",
    summary: "Create an API key bound to one account",
    mcp: human
  },
  listPeople: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the workspace's people and their roles", mcp: human },
  createPerson: { scope: "admin", orgLevel: true, bucket: "write", summary: "Add a person who signs in to the console", mcp: human },
  updatePerson: { scope: "admin", orgLevel: true, bucket: "write", summary: "Set a person's role, or disable or enable them", mcp: human },
  revokePersonKeys: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Revoke every API key of one person (made by them or by their keys)",
    mcp: human
  },
  getSettings: { scope: "read", orgLevel: true, bucket: "read", summary: "Read the org settings (the kill switch)", mcp: tool },
  updateSettings: { scope: "admin", orgLevel: true, bucket: "write", summary: "Change the org settings", mcp: human },
  getSlackIntegration: { scope: "admin", orgLevel: true, bucket: "read", summary: "Whether the org's Slack signing secret is set", mcp: human },
  setSlackSigningSecret: { scope: "admin", orgLevel: true, bucket: "write", summary: "Set the org's Slack signing secret (sealed)", mcp: human },
  linkSlackUser: { scope: "read", bucket: "write", summary: "Link the signed-in person's own Slack user", mcp: human },
  listAccounts: { scope: "read", orgLevel: true, bucket: "read", summary: "List the workspace's accounts", mcp: tool },
  getAccount: { scope: "read", account: true, bucket: "read", summary: "One account with its data freshness", mcp: tool },
  getConnection: { scope: "read", orgLevel: true, bucket: "read", summary: "The upstream connection state", mcp: tool },
  updateConnection: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Save upstream credentials (tested first, stored encrypted)",
    mcp: human
  },
  createConnectionKeyPair: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Generate the EC P-256 key pair for an Apple Ads API client (private key kept sealed)",
    mcp: human
  },
  discoverAccounts: {
    scope: "admin",
    orgLevel: true,
    bucket: "expensive",
    summary: "List the accounts the upstream credentials reach",
    mcp: { tool: true, readOnly: true, openWorld: true }
  },
  importAccounts: { scope: "admin", orgLevel: true, bucket: "write", summary: "Import upstream accounts as projects", mcp: { tool: true, idempotent: true, openWorld: true } },
  listSyncs: { scope: "read", account: true, bucket: "read", summary: "Sync history and data freshness", mcp: tool },
  getSync: { scope: "read", account: true, bucket: "read", summary: "One sync, with its progress while running", mcp: tool },
  startSync: { scope: "admin", account: true, bucket: "write", summary: "Start a sync of the account now", mcp: { tool: true, openWorld: true } },
  getSyncQueue: {
    scope: "read",
    orgLevel: true,
    bucket: "read",
    summary: "The sync queue: each account fresh, due, running or waiting, and why it waits",
    mcp: tool
  },
  listCampaigns: { scope: "read", account: true, bucket: "read", summary: "Campaigns ranked by spend in the window", mcp: tool },
  listAdGroups: { scope: "read", account: true, bucket: "read", summary: "Ad groups ranked by spend in the window", mcp: tool },
  listKeywords: { scope: "read", account: true, bucket: "read", summary: "Keywords ranked by spend in the window", mcp: tool },
  listSearchTerms: { scope: "read", account: true, bucket: "read", summary: "Search terms ranked by spend in the window", mcp: tool },
  listAds: { scope: "read", account: true, bucket: "read", summary: "Ads ranked by spend in the window", mcp: tool },
  listNegativeKeywords: { scope: "read", account: true, bucket: "read", summary: "Negative keywords, by text", mcp: tool },
  ...proposalOperations,
  // Its keywords go for good: a re-added keyword is a new one without its history.
  proposeRemoveKeywords: { ...proposalOperations.proposeRemoveKeywords, mcp: { tool: true, destructive: true } },
  listActions: { scope: "read", account: true, bucket: "read", summary: "The change ledger, newest first", mcp: tool },
  getAction: { scope: "read", account: true, bucket: "read", summary: "One action's whole record", mcp: tool },
  listApprovals: { scope: "read", account: true, bucket: "read", summary: "Actions waiting for a human, oldest first", mcp: tool },
  approveAction: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Approve a pending action; its apply job is enqueued",
    mcp: { tool: true, destructive: true, idempotent: true, openWorld: true }
  },
  rejectAction: { scope: "write", grant: "approve", account: true, bucket: "write", summary: "Reject a pending action", mcp: { tool: true, idempotent: true } },
  // Its MCP note is empty: the endpoint's description is REST's (`?preview=true`); the `preview` argument speaks for itself.
  revertAction: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Undo an applied action",
    mcp: { tool: true, destructive: true, idempotent: true, openWorld: true, note: "" }
  },
  // Changesets (docs/contract.md 4.3): an agent's session as one unit. The tool notes teach the sequence.
  openChangeset: {
    scope: "write",
    account: true,
    bucket: "write",
    summary: "Open a changeset: proposals made with its changesetId wait in it until it is submitted",
    mcp: {
      tool: true,
      note: "Then propose with its `changesetId` (platform_propose_*) or add many with platform_add_changeset_members; " +
        "then platform_submit_changeset; a person approves the whole once."
    }
  },
  addChangesetMembers: {
    scope: "write",
    account: true,
    bucket: "write",
    summary: "Add up to 1,000 proposals to an open changeset, each answered on its own",
    mcp: {
      tool: true,
      note: "A `body` holds its platform_propose_<kind> tool's arguments; a result, its member's actionId or its error. " +
        "Then platform_submit_changeset."
    }
  },
  submitChangeset: {
    scope: "write",
    account: true,
    bucket: "write",
    summary: "Freeze a changeset's plan and have the policy decide it as one unit",
    mcp: {
      tool: true,
      note: "It auto-applies only when every member would (an API key's never does); else it is `queued` until a person " +
        "approves its `planHash`: read `decision.policyReasons`, then poll platform_get_changeset. `preview: true` " +
        "answers the plan, impact and decision without freezing."
    }
  },
  approveChangeset: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Approve a submitted changeset by its plan hash; its members apply in order",
    mcp: {
      tool: true,
      destructive: true,
      idempotent: true,
      openWorld: true,
      note: "Pass the `planHash` reviewed (platform_get_changeset): a plan resubmitted since, or one the account moved " +
        "under, is refused as a `conflict`; resubmit and review it again."
    }
  },
  // Its opener may withdraw it without the approval grant: the service checks who (actions/changesets/).
  rejectChangeset: {
    scope: "write",
    account: true,
    bucket: "write",
    summary: "Reject or withdraw a changeset",
    mcp: { tool: true, idempotent: true, note: "None of its members applies. Its opener may withdraw it without the approval grant." }
  },
  revertChangeset: {
    scope: "write",
    grant: "approve",
    account: true,
    bucket: "write",
    summary: "Undo an applied changeset as one compensating changeset",
    mcp: { tool: true, destructive: true, openWorld: true, note: "`preview: true` answers the revert plan: per member revertible, conflicted or not." }
  },
  listChangesets: { scope: "read", account: true, bucket: "read", summary: "The account's changesets, newest first", mcp: tool },
  getChangeset: {
    scope: "read",
    account: true,
    bucket: "read",
    summary: "One changeset: plan, impact, decision and members",
    mcp: {
      tool: true,
      note: "After a submit, poll it until `status` is applied, partially_applied or failed (each member's `status` and " +
        "`failure` say which and why; a member the apply never reached is `skipped`), rejected or expired; " +
        "`reverted` once undone by the changeset in `revertedBy`."
    }
  },
  getPolicy: { scope: "read", account: true, bucket: "read", summary: "The live safe-apply policy of the account", mcp: tool },
  // Agents read the guardrails with the policy (getPolicy carries them and the envelope's use): no tool of its own.
  getGuardrails: { scope: "read", account: true, bucket: "read", summary: "The account's guardrails: spend envelope, cooldowns, evidence, breaker", mcp: human },
  updateGuardrails: { scope: "admin", account: true, bucket: "write", summary: "Set the account's guardrails", mcp: human },
  resumeAutoApply: { scope: "admin", account: true, bucket: "write", summary: "Clear the circuit breaker: auto-apply resumes", mcp: human },
  // An agent reads its own track record: its proposer id's bucket (docs/contract.md 3.4). Its MCP note is empty: the
  // endpoint's description is the contract's detail, and the tool list's size is budgeted (test/mcp.test.ts).
  getVerdicts: {
    scope: "read",
    account: true,
    bucket: "read",
    summary: "The guard's verdicts on recent changes, by kind and proposer",
    mcp: { tool: true, note: "" }
  },
  getTargets: { scope: "read", account: true, bucket: "read", summary: "The operator's CPA target band", mcp: tool },
  updateTargets: { scope: "admin", account: true, bucket: "write", summary: "Set the operator's CPA target band", mcp: human },
  getPlan: { scope: "read", account: true, bucket: "read", summary: "Suggested changes, each a proposal to POST as is", mcp: { tool: true, note: "Act on an item with platform_propose_<proposal.kind>, passing the projectId and the fields of `proposal.body`." } },
  listRecommendations: {
    scope: "read",
    account: true,
    bucket: "read",
    summary: "Apple's recommendations: expected effect, expiry",
    mcp: { tool: true, note: "Take one with platform_propose_apply_recommendation, or dismiss it." }
  },
  runAudit: { scope: "write", account: true, bucket: "write", summary: "Audit the account's set-up now and keep the findings", mcp: tool },
  getAudit: { scope: "read", account: true, bucket: "read", summary: "One audit's findings", mcp: tool },
  getBrief: { scope: "read", account: true, bucket: "read", summary: "The operator's brief: goals and constraints", mcp: tool },
  updateBrief: { scope: "admin", account: true, bucket: "write", summary: "Replace the operator's brief", mcp: human },
  runReport: {
    scope: "read",
    account: true,
    bucket: "expensive",
    summary: "A full-row report from the upstream, paginated by the upstream",
    mcp: { tool: true, openWorld: true, note: "Rows and paging straight from the upstream report." }
  },
  // Events (docs/contract.md 6): read, org or account reach (an account-bound key sees its account's events).
  listEvents: { scope: "read", bucket: "read", summary: "The org's events, newest first", mcp: tool },
  streamEvents: { scope: "read", bucket: "read", summary: "The org's events as they happen (Server-Sent Events)", mcp: human },
  createWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Add a webhook endpoint (its secret shown once)", mcp: human },
  listWebhooks: { scope: "admin", orgLevel: true, bucket: "read", summary: "List the org's webhook endpoints", mcp: human },
  deleteWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Delete a webhook endpoint", mcp: human },
  testWebhook: { scope: "admin", orgLevel: true, bucket: "write", summary: "Send a ping event to a webhook endpoint", mcp: human },
  enableWebhook: {
    scope: "admin",
    orgLevel: true,
    bucket: "write",
    summary: "Turn a webhook endpoint disabled after repeated failure back on",
    mcp: human
  },
  listWebhookDeliveries: {
    scope: "admin",
    orgLevel: true,
    bucket: "read",
    summary: "A webhook endpoint's deliveries: status code, duration, next retry",
    mcp: human
  },
  // Not org-level: docs/contract.md 5 names the org-level endpoints, and these search the platform's public catalog only.
  searchApps: { scope: "read", bucket: "expensive", summary: "Search upstream apps", mcp: { tool: true, openWorld: true } },
  searchGeo: { scope: "read", bucket: "expensive", summary: "Search upstream locations", mcp: { tool: true, openWorld: true } },
  keywordIdeas: {
    scope: "read",
    account: true,
    bucket: "expensive",
    summary: "Keyword ideas mined from the account's search terms",
    mcp: tool
  }
} as const satisfies Record<string, Operation>

export type OperationName = keyof typeof Operations

const proposalOperationNames: ReadonlySet<string> = new Set(proposalKinds.map((kind) => kind.operation))

export const isProposalOperation = (operation: OperationName): operation is ProposalOperationName =>
  proposalOperationNames.has(operation)

/** Operations besides the proposals whose `?preview=true` writes nothing. */
const PREVIEWED: ReadonlySet<OperationName> = new Set(["revertAction", "submitChangeset", "revertChangeset"])

/**
 * The bucket a call counts against: its operation's, except a proposal's or a revert's dry run (`?preview=true`,
 * docs/contract.md 4.1), which writes nothing and counts as a read. One operation either way: same scope, same grant.
 */
export const bucketOf = (operation: OperationName, preview: boolean): Charge =>
  preview && (isProposalOperation(operation) || PREVIEWED.has(operation))
    ? "read"
    : Operations[operation].bucket
