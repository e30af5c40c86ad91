/**
 * What a request's log line and metrics say about it beyond method and path: who called (`keyId` or
 * `personId`), which operation, and the RPC procedure or MCP tool. The request log (http/RequestLog.ts)
 * makes one mutable record per request and holds it in a FiberRef; the places that learn these facts (the
 * front door, the /rpc and /mcp routes, the MCP tool call) note them there, and the log reads it at the end.
 */
import type { Principal } from "@acs/domain/Principal"
import { Effect, FiberRef } from "effect"

export interface RequestFacts {
  principal?: { readonly kind: Principal["kind"]; readonly id: string }
  operation?: string
  rpc?: string
  tool?: string
}

export const currentRequestFacts = FiberRef.unsafeMake<RequestFacts | undefined>(undefined)

/** Records facts about the request in hand; nothing outside a request. */
export const noteRequest = (facts: {
  readonly principal?: Principal | undefined
  readonly operation?: string | undefined
  readonly rpc?: string | undefined
  readonly tool?: string | undefined
}): Effect.Effect<void> =>
  FiberRef.getWith(currentRequestFacts, (held) =>
    Effect.sync(() => {
      if (held === undefined) return
      if (facts.principal !== undefined) held.principal = { kind: facts.principal.kind, id: facts.principal.id }
      if (facts.operation !== undefined) held.operation = facts.operation
      if (facts.rpc !== undefined) held.rpc = facts.rpc
      if (facts.tool !== undefined) held.tool = facts.tool
    }))

/** The log annotations of the facts: `keyId` or `personId`, `operation`, `rpc`, `tool` (only those known). */
export const factAnnotations = (facts: RequestFacts): Record<string, string> => {
  const annotations: Record<string, string> = {}
  if (facts.principal !== undefined) annotations[facts.principal.kind === "key" ? "keyId" : "personId"] = facts.principal.id
  if (facts.operation !== undefined) annotations["operation"] = facts.operation
  if (facts.rpc !== undefined) annotations["rpc"] = facts.rpc
  if (facts.tool !== undefined) annotations["tool"] = facts.tool
  return annotations
}
