/**
 * API clients the v1 way: an Apple Ads admin creates an API client by pasting a public key the user
 * supplies; the user signs with the private half. The simulator models it (`POST /_control/api-clients`)
 * so acs's generated key pair can be exercised end to end, and it attributes each write to the client
 * that made it, so a second API client's edits are told apart from acs's own.
 */
import { Effect, ManagedRuntime, Schema } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { UpstreamFailure } from "../src/Upstream.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { makeAppleAdsPlatformClient } from "../src/v1/AppleAdsPlatformClient.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "../src/UpstreamTransport.ts"

describe("simulator API clients created from a user-supplied public key", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  let simulator: Simulator
  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 11, size: "demo" })
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })

  const register = async (body: unknown) => {
    const response = await fetch(`${simulator.url}/_control/api-clients`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  it("signs in with the private half of a registered public key; its writes are attributed to its own client id", async () => {
    const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
    const created = await register({ publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() })
    expect(created.status).toBe(201)
    const ids = Schema.decodeUnknownSync(Schema.Struct({ clientId: Schema.String, teamId: Schema.String, keyId: Schema.String }))(created.body)
    expect(ids.clientId).toMatch(/^SEARCHADS\./)
    expect(ids.clientId).not.toBe(simulator.credentials.clientId)

    const endpoints = { apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl }
    const privateKeyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    const client = await run(makeAppleAdsPlatformClient(endpoints, { ...ids, privateKeyPem }))
    const account = String(simulator.accounts.find((a) => !a.readOnly)!.orgId)
    const campaign = (await run(client.campaigns(account))).find((c) => !c.deleted)!
    await run(client.updateCampaign(account, campaign.campaignId, { name: `${campaign.name} (second client)` }))

    const history = await run(client.changeHistory!(account, "2000-01-01T00:00:00.000Z"))
    expect(history.map((c) => [c.userType, c.modifiedBy, c.entityId])).toEqual([["CUSTOMER_API", ids.clientId, campaign.campaignId]])

    // The same ids with a key Apple was never given are refused at the token endpoint.
    const stranger = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    const refused = await runtime.runPromise(Effect.flip(makeAppleAdsPlatformClient(endpoints, { ...ids, privateKeyPem: stranger })))
    expect(refused._tag).toBe("ConnectionError")
  })

  it("refuses a key that is not an EC P-256 public key", async () => {
    const rsa = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "pem" }).toString()
    expect((await register({ publicKeyPem: rsa })).status).toBe(400)
    expect((await register({ publicKeyPem: "-----BEGIN PUBLIC KEY-----" })).status).toBe(400)
    expect((await register({})).status).toBe(400)
  })
})
