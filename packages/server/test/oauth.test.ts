/**
 * OAuth 2.1 for remote MCP clients (docs/contract.md 5.5) against the running server, with the MCP SDK's own OAuth
 * client (`auth()` behind `StreamableHTTPClientTransport`'s authProvider): discovery from the 401 of /mcp,
 * dynamic registration, the authorization request, the consent step as the console's consent page makes it
 * (the signed-in person's session, the client's public description, the decision), the code's exchange with PKCE,
 * then a working MCP session that lists tools and reads. The grant is a key of the person (kind `oauth`, listed
 * under Keys, never the approval grant); a `read` grant cannot propose; an OAuth token cannot approve; a refresh
 * rotates both tokens and a refresh token used twice ends the grant; revoking the key from the console ends it.
 * A person who is not an admin grants at most their role and disconnects their app on the Keys page themselves.
 * The refusals: a wrong verifier, a reused code, a foreign redirect URI, plain PKCE, a non-https redirect URI.
 */
import { ApiKey } from "@acs/domain/ApiKeys"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Browser } from "playwright-core"
import { launchBrowser, seriousViolations, signedInPage } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, BOOTSTRAP_KEY, call } from "./support/server.ts"
import { WAIT_MS } from "./support/wait.ts"

let p: Pipeline
const REGISTRATIONS_PER_MINUTE = 40
const clients: Array<Client> = []

beforeAll(async () => {
  // Registration is limited like sign-in, per address: this file registers a dozen clients, then meets the limit.
  p = await startPipeline({ seed: 94, env: { WORKER_CONCURRENCY: "0", RATE_LIMIT_LOGIN: String(REGISTRATIONS_PER_MINUTE) } })
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)))
  await p?.close()
})

const REDIRECT = "http://127.0.0.1:9/callback"

/** An MCP client's OAuth state, in memory, as a desktop or IDE client keeps it. */
class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ""
  authorizationUrl: URL | undefined
  constructor(readonly name: string) {}
  get redirectUrl() {
    return REDIRECT
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.name, redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] }
  }
  state() {
    return "state-123"
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

const mcpUrl = () => new URL(`${p.server.baseUrl}/mcp`)

/** What the browser does with the authorization URL: follows acs's redirect to the consent page and reads its parameters. */
const toConsentPage = async (authorizationUrl: URL): Promise<URLSearchParams> => {
  const answer = await fetch(authorizationUrl, { redirect: "manual" })
  expect(answer.status, await answer.text()).toBe(302)
  const location = new URL(answer.headers.get("location")!, p.server.baseUrl)
  expect(location.pathname).toBe("/oauth/consent")
  // The console serves the page there.
  const page = await fetch(location)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain("/assets/app.js")
  return location.searchParams
}

/** The consent page's own calls: the client's description, then the signed-in person's decision. */
const decide = async (
  params: URLSearchParams,
  choice: { readonly decision?: "approve" | "deny"; readonly scope: "read" | "write"; readonly projectIds?: ReadonlyArray<string> },
  overrides: Record<string, unknown> = {}
): Promise<Answer> => {
  const described = await call(`${p.server.baseUrl}/oauth/clients/${params.get("client_id")}`)
  expect(described.status).toBe(200)
  return p.as("person", "POST", "/auth/oauth/consent", consentBody(params, choice, overrides))
}

const consentBody = (
  params: URLSearchParams,
  choice: { readonly decision?: "approve" | "deny"; readonly scope: "read" | "write"; readonly projectIds?: ReadonlyArray<string> },
  overrides: Record<string, unknown> = {}
) => ({
    clientId: params.get("client_id"),
    redirectUri: params.get("redirect_uri"),
    codeChallenge: params.get("code_challenge"),
    codeChallengeMethod: params.get("code_challenge_method"),
    state: params.get("state"),
    resource: params.get("resource"),
    decision: choice.decision ?? "approve",
    scope: choice.scope,
    ...(choice.projectIds === undefined ? {} : { projectIds: choice.projectIds }),
    ...overrides
  })

const codeOf = (consent: Answer): string => {
  expect(consent.status, consent.text).toBe(200)
  const redirectTo = new URL((consent.body as { redirectTo: string }).redirectTo)
  expect(`${redirectTo.origin}${redirectTo.pathname}`).toBe(REDIRECT)
  expect(redirectTo.searchParams.get("state")).toBe("state-123")
  return redirectTo.searchParams.get("code")!
}

/**
 * The whole flow as an MCP client runs it: connecting without a token meets the 401, the SDK discovers,
 * registers and sends the person to authorize; the person consents; the SDK exchanges the code; a new
 * connection works.
 */
const signInWithOAuth = async (name: string, choice: { readonly scope: "read" | "write"; readonly projectIds?: ReadonlyArray<string> }) => {
  const provider = new MemoryProvider(name)
  const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider })
  await expect(new Client({ name, version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
  expect(provider.authorizationUrl).toBeDefined()
  const params = await toConsentPage(provider.authorizationUrl!)
  await first.finishAuth(codeOf(await decide(params, choice)))
  const client = new Client({ name, version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))
  clients.push(client)
  return { provider, client }
}

const tool = async (client: Client, name: string, args: Record<string, unknown>) =>
  CallToolResultSchema.parse(await client.callTool({ name, arguments: args }))

const errorCodeOf = (result: { content: Array<{ type: string; text?: string }> }) =>
  (JSON.parse(result.content[0]?.text ?? "{}") as { error?: { code?: string } }).error?.code

const keysNow = async () => Schema.decodeUnknownSync(Schema.Struct({ keys: Schema.Array(ApiKey) }))((await p.as("person", "GET", "/keys")).body).keys

const form = (url: string, params: Record<string, string>) =>
  call(url, { method: "POST", body: new URLSearchParams(params).toString(), headers: { "content-type": "application/x-www-form-urlencoded" } })

const tokenEndpoint = () => `${p.server.baseUrl}/oauth/token`

/** A new person of the role, signed in: their email, generated password and session cookie. */
const signedIn = async (role: "viewer" | "editor", label: string = role) => {
  const email = `oauth-${label}@pipeline.example`
  const created = await p.as("person", "POST", "/people", { email, name: `OAuth ${label}`, role })
  expect(created.status, created.text).toBe(201)
  const password = (created.body as { password: string }).password
  const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email, password } })
  return { email, password, cookie: login.headers.getSetCookie().find((l) => l.startsWith("acs_session="))!.split(";")[0]! }
}

const asPerson = (cookie: string, method: string, path: string, body?: unknown) =>
  call(`${p.server.api}${path}`, { method, headers: { cookie }, ...(body === undefined ? {} : { body }) })

const mcpStatus = async (token: string) =>
  (await fetch(mcpUrl(), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
  })).status

describe("discovery", () => {
  it("answers /mcp without a credential with 401 naming the protected resource metadata, which names acs as its server", async () => {
    const answer = await fetch(mcpUrl(), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(answer.status).toBe(401)
    const header = answer.headers.get("www-authenticate")!
    expect(header).toBe(`Bearer resource_metadata="${p.server.baseUrl}/.well-known/oauth-protected-resource/mcp"`)
    const resource = await call(`${p.server.baseUrl}/.well-known/oauth-protected-resource/mcp`)
    expect(resource.body).toMatchObject({ resource: `${p.server.baseUrl}/mcp`, authorization_servers: [p.server.baseUrl] })
    const server = await call(`${p.server.baseUrl}/.well-known/oauth-authorization-server`)
    expect(server.body).toMatchObject({
      issuer: p.server.baseUrl,
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      registration_endpoint: `${p.server.baseUrl}/oauth/register`,
      revocation_endpoint: `${p.server.baseUrl}/oauth/revoke`
    })
    // A bearer key still works on /mcp.
    expect(await mcpStatus(BOOTSTRAP_KEY)).toBe(200)
  })
})

describe("the full flow with the SDK's OAuth client", () => {
  let writer: Awaited<ReturnType<typeof signInWithOAuth>>

  beforeAll(async () => {
    writer = await signInWithOAuth("Claude test connector", { scope: "write" })
  })

  it("reaches a working MCP session that lists tools and reads the person's accounts", async () => {
    const tools = (await writer.client.listTools()).tools.map((t) => t.name)
    expect(tools).toContain("platform_list_campaigns")
    expect(tools).toContain("platform_propose_budget_change")
    const campaigns = await tool(writer.client, "platform_list_campaigns", { projectId: p.account.projectId })
    expect(campaigns.isError ?? false).toBe(false)
    expect((campaigns.structuredContent as { campaigns: Array<unknown> }).campaigns.length).toBeGreaterThan(0)
  })

  it("is a key of the person, kind oauth, listed under Keys, with the scope chosen and never the approval grant", async () => {
    const me = (await p.as("person", "GET", "/auth/me")).body as { principal: { id: string } }
    const key = (await keysNow()).find((k) => k.kind === "oauth" && k.name === "Claude test connector")!
    expect(key).toMatchObject({
      scope: "write",
      canApprove: false,
      createdBy: `person:${me.principal.id}`,
      root: { kind: "person", id: me.principal.id },
      revokedAt: null,
      binding: { kind: "org" }
    })
    // A short-lived access token: the key expires within the hour.
    expect(Date.parse(key.expiresAt!) - Date.now()).toBeLessThanOrEqual(3600_000)
    expect(Date.parse(key.expiresAt!) - Date.now()).toBeGreaterThan(3000_000)
  })

  it("proposes with a write grant, and is refused (403) when it tries to approve", async () => {
    const campaigns = (await tool(writer.client, "platform_list_campaigns", { projectId: p.account.projectId })).structuredContent as {
      campaigns: Array<{ campaignId: string; dailyBudgetMicros: number | null }>
    }
    const campaign = campaigns.campaigns.find((c) => c.dailyBudgetMicros !== null)!
    const proposed = await tool(writer.client, "platform_propose_budget_change", {
      projectId: p.account.projectId,
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros! + 1_000_000,
      reason: "oauth test"
    })
    expect(proposed.isError ?? false, JSON.stringify(proposed.content)).toBe(false)
    const actionId = (proposed.structuredContent as { actionId: string }).actionId
    const approve = await call(`${p.server.api}/accounts/${p.account.projectId}/approvals/${actionId}/approve`, {
      method: "POST",
      key: writer.provider.saved!.access_token,
      body: {}
    })
    expect(approve.status).toBe(403)
    expect((approve.body as { error: { code: string } }).error.code).toBe("forbidden_scope")
  })

  it("rotates on refresh: the old access token stops, and a refresh token used twice revokes the whole grant", async () => {
    const before = writer.provider.saved!
    const refreshed = await form(tokenEndpoint(), {
      grant_type: "refresh_token",
      refresh_token: before.refresh_token!,
      client_id: writer.provider.client!.client_id
    })
    expect(refreshed.status, refreshed.text).toBe(200)
    const after = refreshed.body as OAuthTokens
    expect(after.access_token).not.toBe(before.access_token)
    expect(after.refresh_token).not.toBe(before.refresh_token)
    expect(refreshed.headers.get("cache-control")).toBe("no-store")
    expect(await mcpStatus(before.access_token)).toBe(401)
    expect(await mcpStatus(after.access_token)).toBe(200)
    // The old refresh token again: refused, and the grant it belongs to ends.
    const reused = await form(tokenEndpoint(), {
      grant_type: "refresh_token",
      refresh_token: before.refresh_token!,
      client_id: writer.provider.client!.client_id
    })
    expect(reused.status).toBe(400)
    expect(reused.body).toMatchObject({ error: "invalid_grant" })
    expect(await mcpStatus(after.access_token)).toBe(401)
    const next = await form(tokenEndpoint(), {
      grant_type: "refresh_token",
      refresh_token: after.refresh_token!,
      client_id: writer.provider.client!.client_id
    })
    expect(next.body).toMatchObject({ error: "invalid_grant" })
    const key = (await keysNow()).find((k) => k.kind === "oauth" && k.name === "Claude test connector")!
    expect(key.revokedAt).not.toBeNull()
  })
})

describe("the console's consent page", () => {
  let browser: Browser | undefined

  afterAll(async () => {
    await browser?.close()
  })

  it("signs the person in, shows the client and where it returns, sends the browser back with a code that works; Keys revokes it", async () => {
    const provider = new MemoryProvider("Browser connector")
    const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider })
    await expect(new Client({ name: "browser", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
    browser = await launchBrowser()
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    // The client's redirect URI: the browser lands there, and the client reads the code from the address.
    let landed: URL | undefined
    await page.route(`${REDIRECT}**`, async (route) => {
      landed = new URL(route.request().url())
      await route.fulfill({ status: 200, contentType: "text/plain", body: "You can close this window." })
    })
    await page.goto(provider.authorizationUrl!.toString())
    await page.getByLabel("Email").fill(ADMIN_EMAIL)
    await page.getByLabel("Password").fill(ADMIN_PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { level: 1, name: "Connect “Browser connector” to acs" }).waitFor({ timeout: WAIT_MS })
    await page.getByText("127.0.0.1:9", { exact: true }).waitFor({ timeout: WAIT_MS })
    expect(await page.getByText(/approve/i).count()).toBeGreaterThan(0)
    expect(await seriousViolations(page)).toEqual([])
    await page.getByRole("radio", { name: /Read: look at/ }).check()
    await page.getByRole("button", { name: "Allow" }).click()
    await page.waitForURL(`${REDIRECT}**`, { timeout: WAIT_MS })
    expect(landed?.searchParams.get("state")).toBe("state-123")
    await first.finishAuth(landed!.searchParams.get("code")!)
    const client = new Client({ name: "browser", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))
    clients.push(client)
    const tools = (await client.listTools()).tools.map((t) => t.name)
    expect(tools).toContain("platform_list_campaigns")
    expect(tools).not.toContain("platform_propose_budget_change")

    // The person revokes it on the console's Keys page: the app's token is refused from its next request.
    await page.goto(`${p.server.baseUrl}/#/keys`)
    await page.getByRole("row", { name: /Browser connector \(connected app, OAuth\)/ }).waitFor({ timeout: WAIT_MS })
    await page.getByRole("button", { name: "Revoke Browser connector" }).click()
    await page.getByRole("dialog", { name: "Revoke “Browser connector”?" }).getByRole("button", { name: "Revoke", exact: true }).click()
    await page.getByText("Key “Browser connector” revoked").waitFor({ timeout: WAIT_MS })
    expect(await mcpStatus(provider.saved!.access_token)).toBe(401)
  })
})

describe("a read grant", () => {
  it("lists no proposal tools and cannot propose", async () => {
    const reader = await signInWithOAuth("Read-only connector", { scope: "read", projectIds: [p.account.projectId] })
    const tools = (await reader.client.listTools()).tools.map((t) => t.name)
    expect(tools).toContain("platform_list_campaigns")
    expect(tools).not.toContain("platform_propose_budget_change")
    const refused = await tool(reader.client, "platform_propose_budget_change", {
      projectId: p.account.projectId,
      campaignId: "1",
      newDailyBudgetMicros: 5_000_000,
      reason: "should not run"
    })
    expect(refused.isError).toBe(true)
    // Bound to the chosen account: another one is out of reach.
    const other = await tool(reader.client, "platform_list_campaigns", { projectId: p.secondAccount.projectId })
    expect(errorCodeOf(other)).toBe("account_mismatch")
    const key = (await keysNow()).find((k) => k.kind === "oauth" && k.name === "Read-only connector")!
    expect(key).toMatchObject({ scope: "read", binding: { kind: "subset", projectIds: [p.account.projectId] } })
  })
})

describe("a person who is not an admin", () => {
  it("disconnects their app on the console's Keys page", async () => {
    const person = await signedIn("editor", "keys-page")
    const provider = new MemoryProvider("Keys page connector")
    const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider })
    await expect(new Client({ name: "keys-page", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
    const params = await toConsentPage(provider.authorizationUrl!)
    await first.finishAuth(codeOf(await asPerson(person.cookie, "POST", "/auth/oauth/consent", consentBody(params, { scope: "read" }))))
    expect(await mcpStatus(provider.saved!.access_token)).toBe(200)
    const browser = await launchBrowser()
    try {
      const page = await signedInPage(browser, p.server.baseUrl, person.email, person.password, WAIT_MS)
      await page.goto(`${p.server.baseUrl}/#/keys`)
      await page.getByRole("heading", { level: 1, name: "Your keys and connected apps" }).waitFor({ timeout: WAIT_MS })
      await page.getByRole("row", { name: /Keys page connector \(connected app, OAuth\)/ }).waitFor({ timeout: WAIT_MS })
      expect(await seriousViolations(page)).toEqual([])
      await page.getByRole("button", { name: "Revoke Keys page connector" }).click()
      await page.getByRole("dialog", { name: "Revoke “Keys page connector”?" }).getByRole("button", { name: "Revoke", exact: true }).click()
      await page.getByText("Key “Keys page connector” revoked").waitFor({ timeout: WAIT_MS })
      expect(await mcpStatus(provider.saved!.access_token)).toBe(401)
    } finally {
      await browser.close()
    }
  })


  it("grants at most their role, and sees and revokes their connected app themselves", async () => {
    // A viewer cannot hand out writing.
    const viewer = (await signedIn("viewer")).cookie
    const provider = new MemoryProvider("Viewer's connector")
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider })
    await expect(new Client({ name: "viewer", version: "1.0.0" }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError)
    const params = await toConsentPage(provider.authorizationUrl!)
    const refused = await asPerson(viewer, "POST", "/auth/oauth/consent", consentBody(params, { scope: "write" }))
    expect(refused.status).toBe(403)
    expect((refused.body as { error: { code: string } }).error.code).toBe("forbidden_scope")

    // An editor connects with write, then finds it among their own keys and revokes it.
    const editor = (await signedIn("editor")).cookie
    const editorProvider = new MemoryProvider("Editor's connector")
    const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: editorProvider })
    await expect(new Client({ name: "editor", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
    const editorParams = await toConsentPage(editorProvider.authorizationUrl!)
    await first.finishAuth(codeOf(await asPerson(editor, "POST", "/auth/oauth/consent", consentBody(editorParams, { scope: "write" }))))
    expect(await mcpStatus(editorProvider.saved!.access_token)).toBe(200)
    const own = await asPerson(editor, "GET", "/auth/keys")
    expect(own.status).toBe(200)
    const keys = Schema.decodeUnknownSync(Schema.Struct({ keys: Schema.Array(ApiKey) }))(own.body).keys
    expect(keys.map((k) => k.name)).toEqual(["Editor's connector"])
    expect(keys[0]).toMatchObject({ kind: "oauth", scope: "write", canApprove: false })
    expect((await asPerson(editor, "GET", "/keys")).status).toBe(403)
    expect((await asPerson(editor, "DELETE", `/auth/keys/${keys[0]!.keyId}`)).status).toBe(204)
    expect(await mcpStatus(editorProvider.saved!.access_token)).toBe(401)
    // Another person's key is not theirs to end.
    const orgKey = (await keysNow()).find((k) => k.kind === "api" && k.revokedAt === null)!
    expect((await asPerson(editor, "DELETE", `/auth/keys/${orgKey.keyId}`)).status).toBe(404)
    expect(await mcpStatus(BOOTSTRAP_KEY)).toBe(200)
  })
})

describe("revocation", () => {
  it("revoking the key from the console's Keys page ends the access token and the refresh token", async () => {
    const { provider } = await signInWithOAuth("Revoked connector", { scope: "read" })
    const key = (await keysNow()).find((k) => k.kind === "oauth" && k.name === "Revoked connector")!
    // What the Keys page does: DELETE /keys/{keyId} with the person's session.
    expect((await p.as("person", "DELETE", `/keys/${key.keyId}`)).status).toBe(204)
    expect(await mcpStatus(provider.saved!.access_token)).toBe(401)
    const refreshed = await form(tokenEndpoint(), {
      grant_type: "refresh_token",
      refresh_token: provider.saved!.refresh_token!,
      client_id: provider.client!.client_id
    })
    expect(refreshed.body).toMatchObject({ error: "invalid_grant" })
  })

  it("RFC 7009: the client revokes its refresh token, and its access token stops too", async () => {
    const { provider } = await signInWithOAuth("Self-revoking connector", { scope: "read" })
    const answer = await form(`${p.server.baseUrl}/oauth/revoke`, { token: provider.saved!.refresh_token!, client_id: provider.client!.client_id })
    expect(answer.status).toBe(200)
    expect(await mcpStatus(provider.saved!.access_token)).toBe(401)
  })
})

describe("refusals", () => {
  /** A registered client and an authorization request's consent-page parameters, with a known verifier. */
  const registered = async (redirectUris: ReadonlyArray<string> = [REDIRECT]) => {
    const answer = await call(`${p.server.baseUrl}/oauth/register`, {
      method: "POST",
      body: { client_name: "Refusal client", redirect_uris: redirectUris, token_endpoint_auth_method: "none" }
    })
    expect(answer.status, answer.text).toBe(201)
    return (answer.body as { client_id: string }).client_id
  }
  const verifier = Crypto.randomBytes(32).toString("base64url")
  const challenge = Crypto.createHash("sha256").update(verifier).digest("base64url")
  const authorizeUrl = (clientId: string, extra: Record<string, string> = {}) => {
    const url = new URL(`${p.server.baseUrl}/oauth/authorize`)
    const params = {
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "state-123",
      resource: `${p.server.baseUrl}/mcp`,
      ...extra
    }
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
    return url
  }
  const exchange = (clientId: string, code: string, codeVerifier = verifier, redirectUri = REDIRECT) =>
    form(tokenEndpoint(), { grant_type: "authorization_code", code, code_verifier: codeVerifier, client_id: clientId, redirect_uri: redirectUri })

  it("refuses a wrong verifier, and the code is spent", async () => {
    const clientId = await registered()
    const code = codeOf(await decide(await toConsentPage(authorizeUrl(clientId)), { scope: "read" }))
    const wrong = await exchange(clientId, code, Crypto.randomBytes(32).toString("base64url"))
    expect(wrong.status).toBe(400)
    expect(wrong.body).toMatchObject({ error: "invalid_grant" })
    expect((await exchange(clientId, code)).body).toMatchObject({ error: "invalid_grant" })
  })

  it("refuses a reused code, and revokes the tokens the code gave", async () => {
    const clientId = await registered()
    const code = codeOf(await decide(await toConsentPage(authorizeUrl(clientId)), { scope: "read" }))
    const first = await exchange(clientId, code)
    expect(first.status, first.text).toBe(200)
    const token = (first.body as OAuthTokens).access_token
    expect(await mcpStatus(token)).toBe(200)
    const again = await exchange(clientId, code)
    expect(again.status).toBe(400)
    expect(again.body).toMatchObject({ error: "invalid_grant" })
    expect(await mcpStatus(token)).toBe(401)
  })

  it("never redirects to a redirect URI the client did not register", async () => {
    const clientId = await registered()
    const foreign = "https://attacker.example/callback"
    const answer = await fetch(authorizeUrl(clientId, { redirect_uri: foreign }), { redirect: "manual" })
    expect(answer.status).toBe(400)
    expect(answer.headers.get("location")).toBeNull()
    // Nor through the consent call, nor at the token endpoint.
    const params = await toConsentPage(authorizeUrl(clientId))
    const consent = await decide(params, { scope: "read" }, { redirectUri: foreign })
    expect(consent.status).toBe(400)
    const code = codeOf(await decide(params, { scope: "read" }))
    expect((await exchange(clientId, code, verifier, "http://127.0.0.1:9/other")).body).toMatchObject({ error: "invalid_grant" })
  })

  it("refuses plain PKCE and a missing challenge, back to the client's redirect URI", async () => {
    const clientId = await registered()
    for (const extra of [{ code_challenge_method: "plain", code_challenge: verifier }, { code_challenge: "" }]) {
      const answer = await fetch(authorizeUrl(clientId, extra), { redirect: "manual" })
      expect(answer.status).toBe(302)
      const location = new URL(answer.headers.get("location")!)
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT)
      expect(location.searchParams.get("error")).toBe("invalid_request")
      expect(location.searchParams.get("state")).toBe("state-123")
    }
    const params = await toConsentPage(authorizeUrl(clientId))
    expect((await decide(params, { scope: "read" }, { codeChallengeMethod: "plain" })).status).toBe(400)
  })

  it("a denial goes back with access_denied; a grant the person cannot give is refused", async () => {
    const clientId = await registered()
    const params = await toConsentPage(authorizeUrl(clientId))
    const denied = await decide(params, { decision: "deny", scope: "read" })
    expect(denied.status).toBe(200)
    const back = new URL((denied.body as { redirectTo: string }).redirectTo)
    expect(back.searchParams.get("error")).toBe("access_denied")
    expect(back.searchParams.get("code")).toBeNull()
    const unknownAccount = await decide(params, { scope: "read", projectIds: ["prj_aaaaaaaaaaaaaaaa"] })
    expect(unknownAccount.status).toBe(403)
    // An API key cannot consent: only a signed-in person.
    const byKey = await call(`${p.server.api}/auth/oauth/consent`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: consentBody(params, { scope: "read" })
    })
    expect(byKey.status).toBe(400)
  })

  it("registers only https or loopback redirect URIs of public clients, answering RFC 7591's errors", async () => {
    const register = (body: unknown) => call(`${p.server.baseUrl}/oauth/register`, { method: "POST", body })
    expect((await register({ redirect_uris: ["http://evil.example/cb"] })).body).toMatchObject({ error: "invalid_redirect_uri" })
    expect((await register({ redirect_uris: ["https://ok.example/cb#frag"] })).body).toMatchObject({ error: "invalid_redirect_uri" })
    expect((await register({ redirect_uris: [] })).body).toMatchObject({ error: "invalid_redirect_uri" })
    expect((await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_basic" })).body)
      .toMatchObject({ error: "invalid_client_metadata" })
    expect((await register("not json {")).status).toBe(400)
    const ok = await register({ redirect_uris: ["https://ok.example/cb", "http://localhost:33418/callback"], client_name: "IDE" })
    expect(ok.status).toBe(201)
    expect(ok.body).toMatchObject({ token_endpoint_auth_method: "none", redirect_uris: ["https://ok.example/cb", "http://localhost:33418/callback"] })
  })

  it("answers the token endpoint's bad requests in OAuth's shape, never a 500", async () => {
    const clientId = await registered()
    expect((await form(tokenEndpoint(), { grant_type: "password", client_id: clientId })).body).toMatchObject({ error: "unsupported_grant_type" })
    expect((await form(tokenEndpoint(), { grant_type: "authorization_code", client_id: "ocl_nobody" })).status).toBe(401)
    expect((await form(tokenEndpoint(), { grant_type: "authorization_code", client_id: clientId })).body).toMatchObject({ error: "invalid_request" })
    const json = await call(tokenEndpoint(), { method: "POST", body: { grant_type: "authorization_code" } })
    expect(json.body).toMatchObject({ error: "invalid_request" })
    const twice = await call(tokenEndpoint(), {
      method: "POST",
      body: `grant_type=refresh_token&grant_type=refresh_token&client_id=${clientId}`,
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(twice.body).toMatchObject({ error: "invalid_request" })
    expect((await form(tokenEndpoint(), { grant_type: "refresh_token", refresh_token: "acsr_\u0000", client_id: clientId })).body)
      .toMatchObject({ error: "invalid_grant" })
    // A body over 64 KiB is refused before it is parsed.
    const huge = await form(tokenEndpoint(), { grant_type: "refresh_token", client_id: clientId, refresh_token: "x".repeat(100_000) })
    expect(huge.status).toBe(400)
    expect(huge.body).toMatchObject({ error: "invalid_request" })
  })

  it("limits registration per client address like sign-in: 429 in OAuth's shape with Retry-After", async () => {
    let answer: Answer | undefined
    // Twice the limit: a window that ends mid-loop starts a new count.
    for (let i = 0; i <= 2 * REGISTRATIONS_PER_MINUTE; i++) {
      answer = await call(`${p.server.baseUrl}/oauth/register`, { method: "POST", body: { redirect_uris: [REDIRECT] } })
      if (answer.status === 429) break
    }
    expect(answer?.status).toBe(429)
    expect(answer?.body).toMatchObject({ error: "rate_limited" })
    expect(Number(answer?.headers.get("retry-after"))).toBeGreaterThan(0)
  })
})
