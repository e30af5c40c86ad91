/**
 * Behind a proxy, OAuth metadata names the address people reach acs at (docs/contract.md 5.5): `PUBLIC_URL` when set,
 * whatever Host the request carried; without it, `X-Forwarded-Proto: https` counts only with TRUST_PROXY.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { call, type RunningServer, startServer } from "./support/server.ts"

let configured: RunningServer
let proxied: RunningServer

beforeAll(async () => {
  const database = await createDatabase()
  ;[configured, proxied] = await Promise.all([
    startServer({ DATABASE_URL: database, PUBLIC_URL: "https://acs.example.com/ignored/path" }),
    startServer({ DATABASE_URL: database, TRUST_PROXY: "true" })
  ])
})

afterAll(async () => {
  await Promise.all([configured?.stop(), proxied?.stop()])
})

describe("the public origin of OAuth metadata", () => {
  it("is PUBLIC_URL's origin when set: the issuer, the endpoints, the resource and /mcp's 401", async () => {
    const server = await call(`${configured.baseUrl}/.well-known/oauth-authorization-server`)
    expect(server.body).toMatchObject({ issuer: "https://acs.example.com", token_endpoint: "https://acs.example.com/oauth/token" })
    const resource = await call(`${configured.baseUrl}/.well-known/oauth-protected-resource`)
    expect(resource.body).toMatchObject({ resource: "https://acs.example.com/mcp", authorization_servers: ["https://acs.example.com"] })
    const mcp = await fetch(`${configured.baseUrl}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(mcp.status).toBe(401)
    expect(mcp.headers.get("www-authenticate")).toBe('Bearer resource_metadata="https://acs.example.com/.well-known/oauth-protected-resource/mcp"')
  })

  it("is the request's host otherwise, over https when a trusted proxy says so", async () => {
    const host = new URL(proxied.baseUrl).host
    const plain = await call(`${proxied.baseUrl}/.well-known/oauth-protected-resource/mcp`)
    expect(plain.body).toMatchObject({ resource: `http://${host}/mcp`, authorization_servers: [`http://${host}`] })
    const forwarded = await call(`${proxied.baseUrl}/.well-known/oauth-protected-resource/mcp`, { headers: { "x-forwarded-proto": "https" } })
    expect(forwarded.body).toMatchObject({ resource: `https://${host}/mcp`, authorization_servers: [`https://${host}`] })
  })
})
