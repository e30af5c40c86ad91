/**
 * The same read over the three surfaces (bench/README.md): `GET campaigns?days=30&limit=50` over REST, the
 * `listCampaigns` procedure over RPC (`/rpc`, NDJSON) and the `platform_list_campaigns` tool over MCP
 * (`/mcp`, one stateless `tools/call`), each on its own keep-alive connection, sampled in alternating
 * blocks. The target: RPC and MCP each within 1.2x of REST at p50.
 */
import * as Http from "node:http"
import { canonical, record } from "./json.ts"
import { interleaved, summarize, type Summary } from "./measure.ts"

export const SURFACE_RATIO_TARGET = 1.2

export interface SurfacesResult {
  readonly read: string
  readonly rest: Summary
  readonly rpc: Summary
  readonly mcp: Summary
  readonly rpcOverRest: number
  readonly mcpOverRest: number
  /** The three surfaces answered the same rows. */
  readonly identical: boolean
  readonly pass: boolean
}

/** One keep-alive connection; the answer's status and text. */
const makePoster = (headers: Record<string, string>) => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  const send = (method: string, url: string, body?: string, extra: Record<string, string> = {}) =>
    new Promise<{ readonly status: number; readonly text: string }>((resolve, reject) => {
      const request = Http.request(url, { agent, method, headers: { ...headers, ...extra } }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end(body)
    })
  return { send, close: () => agent.destroy() }
}

const ok = (what: string, answer: { readonly status: number; readonly text: string }) => {
  if (answer.status < 200 || answer.status > 299) throw new Error(`${what} answered ${answer.status}: ${answer.text.slice(0, 500)}`)
  return answer.text
}

export const benchSurfaces = async (options: {
  readonly baseUrl: string
  readonly key: string
  readonly projectId: string
  readonly log: (line: string) => void
  readonly rounds?: number
}): Promise<SurfacesResult> => {
  const { baseUrl, key, projectId, log } = options
  const auth = { authorization: `Bearer ${key}` }
  const rest = makePoster(auth)
  const rpc = makePoster({ ...auth, "content-type": "application/ndjson" })
  const mcp = makePoster({ ...auth, "content-type": "application/json", accept: "application/json, text/event-stream" })
  try {
    const restUrl = `${baseUrl}/api/v1/accounts/${encodeURIComponent(projectId)}/campaigns?days=30&limit=50`
    let rpcId = 0
    const rpcBody = () =>
      `${JSON.stringify({
        _tag: "Request",
        id: String(rpcId++),
        tag: "listCampaigns",
        payload: { path: { projectId }, urlParams: { days: "30", limit: "50" } },
        headers: []
      })}\n`
    const mcpBody = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "platform_list_campaigns", arguments: { projectId, days: 30, limit: 50 } }
    })

    const viaRest = () => rest.send("GET", restUrl).then((a) => JSON.parse(ok("REST", a)) as unknown)
    const viaRpc = () =>
      rpc.send("POST", `${baseUrl}/rpc`, rpcBody()).then((a) => {
        const exit = ok("RPC", a).split("\n").filter((line) => line.length > 0).map((line) => record(JSON.parse(line), "rpc message"))
          .find((message) => message["_tag"] === "Exit")
        const result = record(exit?.["exit"], "rpc exit")
        if (result["_tag"] !== "Success") throw new Error(`RPC failed: ${JSON.stringify(result).slice(0, 500)}`)
        return result["value"]
      })
    const viaMcp = () =>
      mcp.send("POST", `${baseUrl}/mcp`, mcpBody).then((a) => {
        const result = record(record(JSON.parse(ok("MCP", a)), "mcp answer")["result"], "mcp result")
        if (result["isError"] === true) throw new Error(`MCP failed: ${JSON.stringify(result).slice(0, 500)}`)
        return result["structuredContent"]
      })

    // The rows' freshness ages between calls; the rows themselves must be the same.
    const rows = (answer: unknown) => canonical(record(answer, "campaigns")["campaigns"])
    const [a, b, c] = [await viaRest(), await viaRpc(), await viaMcp()]
    const identical = rows(a) === rows(b) && rows(a) === rows(c)

    log("measuring the same read over REST, RPC and MCP (interleaved)")
    const rounds = options.rounds ?? 20
    const samples = await interleaved({ rest: viaRest, rpc: viaRpc, mcp: viaMcp }, { warmup: 200, rounds, block: 10 })
    const summary = { rest: summarize(samples.rest), rpc: summarize(samples.rpc), mcp: summarize(samples.mcp) }
    const rpcOverRest = summary.rpc.p50Ms / summary.rest.p50Ms
    const mcpOverRest = summary.mcp.p50Ms / summary.rest.p50Ms
    return {
      read: "campaigns, days=30, limit=50",
      ...summary,
      rpcOverRest,
      mcpOverRest,
      identical,
      pass: identical && rpcOverRest <= SURFACE_RATIO_TARGET && mcpOverRest <= SURFACE_RATIO_TARGET
    }
  } finally {
    rest.close()
    rpc.close()
    mcp.close()
  }
}
