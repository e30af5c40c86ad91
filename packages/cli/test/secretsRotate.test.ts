/**
 * `acs secrets rotate` on PostgreSQL: every sealed value (upstream credentials, a generated key pair's private
 * key, a webhook secret, a Slack signing secret) opens with the new key afterwards and no longer with the old one; a second run finds
 * them on the new key already; a wrong current key changes nothing.
 */
import { openWith, sealWith } from "@acs/server/db/SecretBox"
import { Option } from "effect"
import * as Crypto from "node:crypto"
import { beforeAll, describe, expect, it } from "vitest"
import { clusterUrl, query } from "../../server/test/support/database.ts"
import { jsonOf, runAcs } from "./support/runAcs.ts"

const oldKey = Crypto.randomBytes(32)
const newKey = Crypto.randomBytes(32)
const env = (current: Buffer, next: Buffer) => ({
  DATABASE_URL: database,
  ACS_SECRETS_KEY: current.toString("base64"),
  ACS_SECRETS_KEY_NEW: next.toString("base64")
})

let database: string

interface Sealed {
  readonly credentials: string
  readonly privateKey: string
  readonly webhookSecret: string
  readonly slackSecret: string
}

const sealedValues = async (): Promise<Sealed> => {
  const [row] = await query<{ credentials: string; privateKey: string; webhookSecret: string; slackSecret: string }>(
    database,
    `SELECT (SELECT credentials_encrypted FROM connections) AS credentials,
            (SELECT private_key_sealed FROM connection_key_pairs) AS "privateKey",
            (SELECT secret_sealed FROM webhooks) AS "webhookSecret",
            (SELECT secret_sealed FROM slack_signing_secrets) AS "slackSecret"`
  )
  return row!
}

const opened = (key: Buffer, sealed: Sealed) =>
  Object.fromEntries(Object.entries(sealed).map(([name, value]) => [name, Option.getOrNull(openWith(key, value))]))

const PLAINTEXT = { credentials: "{\"clientId\":\"SEARCHADS.x\"}", privateKey: "-----BEGIN EC PRIVATE KEY-----", webhookSecret: "whsec_test", slackSecret: "8f742231b10e8888abcd99edabcd00d1" }

beforeAll(async () => {
  const name = `acs_rotate_${Crypto.randomBytes(6).toString("hex")}`
  await query(clusterUrl("postgres"), `CREATE DATABASE ${name}`)
  database = clusterUrl(name)
  expect((await runAcs(["migrate", "--json"], { DATABASE_URL: database })).code).toBe(0)
  const [org] = await query<{ orgId: string }>(database, `SELECT org_id AS "orgId" FROM orgs ORDER BY created_at LIMIT 1`)
  const orgId = org!.orgId
  await query(database, `INSERT INTO connections (org_id, provider, credentials_encrypted, status) VALUES ($1, 'apple', $2, 'ok')`, [
    orgId,
    sealWith(oldKey, PLAINTEXT.credentials)
  ])
  await query(
    database,
    `INSERT INTO connection_key_pairs (org_id, private_key_sealed, public_key_pem, fingerprint, created_at) VALUES ($1, $2, 'pem', 'fp', now())`,
    [orgId, sealWith(oldKey, PLAINTEXT.privateKey)]
  )
  await query(
    database,
    `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
     VALUES ('whk_rotate', $1, 'https://hooks.example.com/acs', '["action.applied"]', 'json', $2, 'operator')`,
    [orgId, sealWith(oldKey, PLAINTEXT.webhookSecret)]
  )
  await query(database, `INSERT INTO slack_signing_secrets (org_id, secret_sealed, set_by) VALUES ($1, $2, 'operator')`, [
    orgId,
    sealWith(oldKey, PLAINTEXT.slackSecret)
  ])
})

describe("acs secrets rotate", () => {
  it("refuses a current key that opens nothing, and changes nothing", async () => {
    const before = await sealedValues()
    const run = await runAcs(["secrets", "rotate"], env(Crypto.randomBytes(32), newKey))
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/opens with neither key.*Nothing was changed/)
    expect(await sealedValues()).toEqual(before)
  })

  it("re-seals every sealed value with the new key in one run, and a second run finds them done", async () => {
    const answer = jsonOf<{ columns: Record<string, { resealed: number; already: number }> }>(
      await runAcs(["secrets", "rotate", "--json"], env(oldKey, newKey))
    )
    expect(Object.values(answer.columns)).toEqual([{ resealed: 1, already: 0 }, { resealed: 1, already: 0 }, { resealed: 1, already: 0 }, { resealed: 1, already: 0 }])
    const after = await sealedValues()
    expect(opened(newKey, after)).toEqual(PLAINTEXT)
    expect(opened(oldKey, after)).toEqual({ credentials: null, privateKey: null, webhookSecret: null, slackSecret: null })

    const again = jsonOf<{ columns: Record<string, { resealed: number; already: number }> }>(
      await runAcs(["secrets", "rotate", "--json"], env(oldKey, newKey))
    )
    expect(Object.values(again.columns)).toEqual([{ resealed: 0, already: 1 }, { resealed: 0, already: 1 }, { resealed: 0, already: 1 }, { resealed: 0, already: 1 }])
  })
})
