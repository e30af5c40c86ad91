/**
 * An operation as an MCP agent tool, the `mcp` column of the operation table (Operations.ts): whether it is one,
 * and what its annotations say beyond its scope. Every row of the table has one, so an operation added there
 * does not compile until this is decided. The server builds its tools and their hints from it (mcp/McpTools.ts).
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

/** Not a tool: a human's operation (above). */
export const human = { tool: false } as const
/** A tool with no hint beyond its scope's. */
export const tool = { tool: true } as const
