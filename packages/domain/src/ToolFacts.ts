/**
 * Each operation as an MCP agent tool: whether it is one, and what its annotations say that the operation
 * table (Operations.ts) cannot. Keyed by the table's names, so an operation added or removed there does not
 * compile until it is decided here. The server builds its tools and their hints from it (mcp/McpTools.ts).
 *
 * Not a tool (`human`), though a key's scope allows the operation over REST: keys and upstream credentials
 * move secrets and authority; the kill switch, the target band and the brief are the guardrails people set
 * for agents, and an agent must not move its own guardrails; nor does it manage the people who approve.
 * Webhooks send the org's events, signed, to a URL: an admin's decision, like keys. A stream is no tool call
 * (agents page with platform_list_events). Logout and a password change are a person's session's; /mcp takes
 * keys only.
 *
 * The annotations are hints a client uses to decide what to confirm with its user, so each errs on the side
 * of caution:
 * - read only: read scope changes nothing (every GET and the read-only POSTs of docs/contract.md 5);
 *   `readOnly` marks one above read scope that stores nothing either (discovery asks the upstream which
 *   accounts the credentials reach).
 * - `destructive` (never with read only): the change can be lost for good. Removing keywords cannot be
 *   reverted (a re-added keyword is a new one without its history). Approving makes any pending change real,
 *   that one included; a revert applies its compensation at once, and the compensation of a created campaign
 *   or ad group deletes it. Every other proposal only queues a revertible change, and a rejection changes
 *   nothing on the account.
 * - `idempotent` (always with read only): a retry with the same arguments changes nothing more. Decisions,
 *   whose second call meets a status guard (`conflict`); an import, which skips what it imported. Not a
 *   proposal: only a retry under the same `idempotencyKey` is harmless, which a per-tool hint cannot say.
 * - `openWorld`: the call reaches the upstream platform, at once or through the job it enqueues: syncs,
 *   discovery and import, reports and catalog searches, and the apply paths (approve, revert). A key's
 *   proposal only queues, so proposals stay in acs.
 */
import type { OperationName } from "./Operations.ts"
import { proposalKinds, type ProposalOperationName } from "./ProposalKinds.ts"

export interface Tool {
  readonly tool: true
  readonly readOnly?: true
  readonly destructive?: true
  readonly idempotent?: true
  readonly openWorld?: true
  /** Said in place of the endpoint's own description, where that one speaks of REST (paths, POSTs); "" for nothing. */
  readonly note?: string
}

export type ToolFacts = Tool | { readonly tool: false }

const human = { tool: false } as const
const tool = { tool: true } as const

/** Every proposal is a tool, its change queued and revertible unless its kind says otherwise below. */
const proposalTools = Object.fromEntries(proposalKinds.map((kind) => [kind.operation, tool])) as {
  readonly [K in ProposalOperationName]: Tool
}

export const toolFacts = {
  getMe: tool,
  logout: human,
  changePassword: human,
  createKey: human,
  listKeys: human,
  revokeKey: human,
  createAccountKey: human,
  listPeople: human,
  createPerson: human,
  updatePerson: human,
  revokePersonKeys: human,
  getSettings: tool,
  updateSettings: human,
  listAccounts: tool,
  getAccount: tool,
  getConnection: tool,
  updateConnection: human,
  createConnectionKeyPair: human,
  discoverAccounts: { tool: true, readOnly: true, openWorld: true },
  importAccounts: { tool: true, idempotent: true, openWorld: true },
  listSyncs: tool,
  getSync: tool,
  startSync: { tool: true, openWorld: true },
  listCampaigns: tool,
  listAdGroups: tool,
  listKeywords: tool,
  listSearchTerms: tool,
  listAds: tool,
  listNegativeKeywords: tool,
  ...proposalTools,
  proposeRemoveKeywords: { tool: true, destructive: true },
  listActions: tool,
  getAction: tool,
  listApprovals: tool,
  approveAction: { tool: true, destructive: true, idempotent: true, openWorld: true },
  rejectAction: { tool: true, idempotent: true },
  // The endpoint's description is REST's (`?preview=true`); the `preview` argument speaks for itself.
  revertAction: { tool: true, destructive: true, idempotent: true, openWorld: true, note: "" },
  getPolicy: tool,
  getTargets: tool,
  updateTargets: human,
  getPlan: {
    tool: true,
    note: "Act on an item with platform_propose_<proposal.kind>, passing the projectId and the fields of `proposal.body`."
  },
  runAudit: tool,
  getAudit: tool,
  getBrief: tool,
  updateBrief: human,
  runReport: { tool: true, openWorld: true, note: "Rows and paging straight from the upstream report." },
  listEvents: tool,
  streamEvents: human,
  createWebhook: human,
  listWebhooks: human,
  deleteWebhook: human,
  testWebhook: human,
  enableWebhook: human,
  listWebhookDeliveries: human,
  searchApps: { tool: true, openWorld: true },
  searchGeo: { tool: true, openWorld: true },
  keywordIdeas: tool
} as const satisfies { readonly [Op in OperationName]: ToolFacts }

/** The operations that are tools. */
export const isTool = (operation: OperationName): boolean => toolFacts[operation].tool
