/**
 * The operation table's `mcp` column (domain/src/ToolFacts.ts) against what it describes: the MCP tools made are
 * exactly the operations it makes tools, each with its hints; and it never contradicts the rest of its row
 * or the endpoint (a GET that is not read only, a PUT or DELETE that is not idempotent, a proposal said to be
 * idempotent, a destructive read, a `readOnly` mark on a read-scope operation, where it says nothing).
 */
import { Api, unauthenticatedGroups } from "@acs/domain/Api"
import { isProposalOperation, type OperationName, Operations } from "@acs/domain/Operations"
import { HttpApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { makeTools, toolName } from "../../src/mcp/McpTools.ts"

const operationNames = Object.keys(Operations) as ReadonlyArray<OperationName>

/** Each operation's endpoint method, from the API declaration. */
const methods: ReadonlyMap<string, string> = (() => {
  const all = new Map<string, string>()
  HttpApi.reflect(Api, {
    predicate: ({ group }) => !unauthenticatedGroups.includes(group.identifier),
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) => void all.set(endpoint.name, endpoint.method)
  })
  return all
})()

const mcpOf = (op: OperationName) => Operations[op].mcp

const tools = makeTools()
const byName = new Map(tools.map((tool) => [tool.name, tool]))

describe("the operation table's mcp column", () => {
  it("makes exactly the tools of the operations it says are tools", () => {
    const expected = operationNames.filter((op) => mcpOf(op).tool).map(toolName).sort()
    expect(tools.map((tool) => tool.name).sort()).toEqual(expected)
    // The human-only operations the access matrix also keeps off /mcp are among those left out.
    for (const op of ["createKey", "updateSettings", "updateTargets", "updateBrief", "streamEvents", "logout"] as const) {
      expect(byName.has(toolName(op)), op).toBe(false)
    }
  })

  it("gives each tool its column's hints, read only by scope or by the column", () => {
    for (const tool of tools) {
      const facts = mcpOf(tool.operation)
      if (!facts.tool) throw new Error(`${tool.name} is made though its mcp column says it is no tool`)
      const readOnly = Operations[tool.operation].scope === "read" || ("readOnly" in facts && facts.readOnly === true)
      expect(tool.hints, tool.name).toEqual({
        readOnlyHint: readOnly,
        destructiveHint: "destructive" in facts && facts.destructive === true,
        idempotentHint: readOnly || ("idempotent" in facts && facts.idempotent === true),
        openWorldHint: "openWorld" in facts && facts.openWorld === true
      })
    }
  })

  it("never contradicts the rest of the operation's row or its endpoint", () => {
    for (const op of operationNames) {
      const facts = mcpOf(op)
      if (!facts.tool) continue
      const scope = Operations[op].scope
      const method = methods.get(op)
      const readOnly = scope === "read" || ("readOnly" in facts && facts.readOnly === true)
      if ("readOnly" in facts) expect(scope, `${op}: readOnly says nothing for a read-scope operation`).not.toBe("read")
      if (method === "GET") expect(readOnly, `${op}: a GET changes nothing`).toBe(true)
      if (method === "PUT" || method === "DELETE") expect(readOnly || "idempotent" in facts, `${op}: a ${method} is idempotent`).toBe(true)
      if ("destructive" in facts) expect(readOnly, `${op}: a read-only tool destroys nothing`).toBe(false)
      if (isProposalOperation(op)) expect("idempotent" in facts, `${op}: only its idempotency key makes a proposal's retry harmless`).toBe(false)
      // The expensive bucket is the upstream's, but for keyword ideas, mined from the warehouse.
      if (Operations[op].bucket === "expensive" && op !== "keywordIdeas") expect("openWorld" in facts, `${op}: reaches the upstream`).toBe(true)
    }
  })
})
