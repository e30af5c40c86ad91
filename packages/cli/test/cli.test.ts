/**
 * `acs` run as a real process (`node --import tsx packages/cli/src/main.ts …`, as `pnpm acs` does) against
 * a fresh PostgreSQL database, and what it did checked through the started server over HTTP.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { clusterUrl, insertAccount, query } from "../../server/test/support/database.ts"
import { call, type RunningServer, startServer } from "../../server/test/support/server.ts"
import { inBatches, jsonOf, runAcs } from "./support/runAcs.ts"

interface CreatedKey {
  readonly key: { readonly keyId: string; readonly scope: string; readonly canApprove: boolean; readonly binding: unknown }
  readonly secret: string
}

let database: string
let env: Record<string, string>
let server: RunningServer | undefined

beforeAll(async () => {
  // A blank database (not the migrated template): `acs migrate` must create the schema itself.
  const name = `acs_cli_${Crypto.randomBytes(6).toString("hex")}`
  await query(clusterUrl("postgres"), `CREATE DATABASE ${name}`)
  database = clusterUrl(name)
  env = { DATABASE_URL: database }
})

afterAll(async () => {
  await server?.stop()
})

const api = (): string => {
  if (server === undefined) throw new Error("the server is not started")
  return server.api
}

describe("acs admin commands on PostgreSQL", () => {
  it("migrate creates the schema and the default org, keeps logs off stdout, and is idempotent", async () => {
    // LOG_LEVEL=info: the migrator's logs must go to stderr, leaving one JSON document on stdout.
    const first = await runAcs(["migrate", "--json"], { ...env, LOG_LEVEL: "info" })
    const migrated = jsonOf<{ defaultOrgId: string; migrations: Array<{ name: string; appliedNow: boolean }> }>(first)
    expect(migrated.defaultOrgId).toMatch(/^org_/)
    expect(migrated.migrations).toContainEqual(expect.objectContaining({ name: "foundation", appliedNow: true }))
    expect(first.stderr).toContain("migration applied")

    const again = jsonOf<typeof migrated>(await runAcs(["migrate", "--json"], env))
    expect(again.defaultOrgId).toBe(migrated.defaultOrgId)
    expect(again.migrations.every((m) => !m.appliedNow)).toBe(true)

    const orgs = jsonOf<{ orgs: Array<{ orgId: string; isDefault: boolean }> }>(await runAcs(["orgs", "list", "--json"], env))
    expect(orgs.orgs).toEqual([expect.objectContaining({ orgId: migrated.defaultOrgId, isDefault: true })])

    await insertAccount(database, migrated.defaultOrgId, "prj_one")
    server = await startServer(env)
  })

  it("creates a key whose secret works against the server, lists it, and revokes it", async () => {
    const created = jsonOf<CreatedKey>(
      await runAcs(["keys", "create", "--name", "ci deploy", "--scope", "admin", "--can-approve", "--json"], env)
    )
    expect(created.secret).toMatch(/^acs_[\w-]{43}$/)
    expect(created.key).toMatchObject({ scope: "admin", canApprove: true, binding: { kind: "org" } })

    const me = await call(`${api()}/auth/me`, { key: created.secret })
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ principal: { kind: "key", id: created.key.keyId, scope: "admin", canApprove: true } })

    const listed = await runAcs(["keys", "list", "--json"], env)
    const keys = jsonOf<{ keys: Array<{ keyId: string; name: string; revokedAt: string | null }> }>(listed)
    expect(keys.keys).toContainEqual(expect.objectContaining({ keyId: created.key.keyId, name: "ci deploy", revokedAt: null }))
    expect(listed.stdout).not.toContain(created.secret)

    const table = await runAcs(["keys", "list"], env)
    expect(table.code).toBe(0)
    expect(table.stdout.split("\n")[0]).toMatch(/^KEY ID\s+NAME\s+ANSWERS TO\s+SCOPE/)
    // An operator's key is an org key: it answers to nobody but the org.
    expect(table.stdout.split("\n").find((line) => line.startsWith(created.key.keyId))).toMatch(/\s+org key\s+admin\s/)

    const revoked = jsonOf<{ keyId: string; revoked: boolean }>(await runAcs(["keys", "revoke", created.key.keyId, "--json"], env))
    expect(revoked).toEqual({ keyId: created.key.keyId, revoked: true })
    expect((await call(`${api()}/auth/me`, { key: created.secret })).status).toBe(401)
  })

  it("binds keys to a subset of accounts or to one account, and expiry in the future", async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
    const subset = jsonOf<CreatedKey>(
      await runAcs(["keys", "create", "--name", "subset", "--scope", "read", "--project", "prj_one", "--expires-at", expiresAt, "--json"], env)
    )
    expect(subset.key.binding).toEqual({ kind: "subset", projectIds: ["prj_one"] })
    expect((await call(`${api()}/accounts/prj_one`, { key: subset.secret })).status).toBe(200)
    const me = await call(`${api()}/auth/me`, { key: subset.secret })
    expect(me.body).toMatchObject({ principal: { expiresAt } })

    const bound = jsonOf<CreatedKey>(await runAcs(["keys", "create", "--name", "one", "--scope", "write", "--account", "prj_one", "--json"], env))
    expect(bound.key.binding).toEqual({ kind: "account", projectId: "prj_one" })
    const current = await call(`${api()}/accounts/current`, { key: bound.secret })
    expect(current.status).toBe(200)
    expect(current.body).toMatchObject({ account: { projectId: "prj_one" } })
  })

  it("adds people who can sign in, with a generated or a given password", async () => {
    const generated = jsonOf<{ person: { personId: string; email: string; role: string }; password: string }>(
      await runAcs(["people", "add", "--email", "ana@example.com", "--name", "Ana", "--role", "approver", "--json"], env)
    )
    expect(generated.person).toMatchObject({ email: "ana@example.com", role: "approver" })
    expect(generated.password.length).toBeGreaterThanOrEqual(20)
    const login = await call(`${api()}/auth/login`, { method: "POST", body: { email: "ana@example.com", password: generated.password } })
    expect(login.status).toBe(200)
    expect(login.body).toMatchObject({ principal: { kind: "person", id: generated.person.personId, scope: "write", canApprove: true } })

    const given = jsonOf<{ person: { email: string }; password?: string }>(
      await runAcs(["people", "add", "--email", "bo@example.com", "--name", "Bo", "--role", "viewer", "--password", "correct horse", "--json"], env)
    )
    expect(given.password).toBeUndefined()
    const loginBo = await call(`${api()}/auth/login`, { method: "POST", body: { email: "bo@example.com", password: "correct horse" } })
    expect(loginBo.status).toBe(200)

    const people = jsonOf<{ people: Array<{ email: string }> }>(await runAcs(["people", "list", "--json"], env))
    expect(people.people.map((p) => p.email)).toEqual(["ana@example.com", "bo@example.com"])
    expect(JSON.stringify(people)).not.toContain("scrypt")
  })

  it("creates a second org, prints its id, and keys and people can then be made in it", async () => {
    const created = jsonOf<{ org: { orgId: string; name: string; isDefault: boolean } }>(
      await runAcs(["orgs", "create", "  Second workspace ", "--json"], env)
    )
    expect(created.org).toMatchObject({ name: "Second workspace", isDefault: false })
    expect(created.org.orgId).toMatch(/^org_/)
    const orgs = jsonOf<{ orgs: Array<{ orgId: string; isDefault: boolean }> }>(await runAcs(["orgs", "list", "--json"], env))
    expect(orgs.orgs).toHaveLength(2)
    expect(orgs.orgs[1]).toMatchObject({ orgId: created.org.orgId, isDefault: false })

    // A key of the new org reaches none of the first org's accounts.
    const key = jsonOf<CreatedKey>(
      await runAcs(["keys", "create", "--name", "second org", "--scope", "admin", "--org", created.org.orgId, "--json"], env)
    )
    const me = await call(`${api()}/auth/me`, { key: key.secret })
    expect(me.body).toMatchObject({ principal: { orgId: created.org.orgId } })
    expect((await call(`${api()}/accounts`, { key: key.secret })).body).toMatchObject({ accounts: [], total: 0 })
    const person = jsonOf<{ person: { orgId: string } }>(
      await runAcs(["people", "add", "--email", "dee@example.com", "--name", "Dee", "--role", "admin", "--org", created.org.orgId, "--json"], env)
    )
    expect(person.person.orgId).toBe(created.org.orgId)

    // Without --json: the id on its own line, for a human to copy.
    const text = await runAcs(["orgs", "create", "Third workspace"], env)
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^org id:\s+org_\w+$/m)
  })

  it("answers bad input and unknown things with exit code 2 and a clear message", async () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, RegExp]> = [
      [["keys", "create", "--name", "x", "--scope", "write", "--project", "prj_nope"], /--project: no account prj_nope/],
      [["keys", "create", "--name", "x", "--scope", "write", "--account", "prj_nope"], /--account: no account prj_nope/],
      [["keys", "create", "--name", "x", "--scope", "write", "--expires-at", "2020-01-01T00:00:00Z"], /--expires-at: .* not in the future/],
      [["keys", "create", "--name", "x", "--scope", "write", "--expires-at", "tomorrow"], /--expires-at: expected an ISO 8601 timestamp/],
      [["keys", "create", "--name", "x", "--scope", "root"], /read, write, admin/],
      [["keys", "create", "--name", "x", "--scope", "read", "--project", "prj_one", "--account", "prj_one"], /exclude each other/],
      [["keys", "create", "--name", "x", "--scope", "read", "--org", "org_nope"], /no org org_nope/],
      [["keys", "revoke", "key_nope"], /no key key_nope/],
      [["people", "add", "--email", "ana@example.com", "--name", "Ana 2", "--role", "viewer"], /already exists/],
      [["people", "add", "--email", "not-an-email", "--name", "X", "--role", "viewer"], /not an email address/],
      [["people", "add", "--email", "cy@example.com", "--name", "Cy", "--role", "viewer", "--password", "short"], /--password: must be at least 12 characters/],
      // The password rule of every surface (docs/contract.md 8): 11 characters, and a common password of 12.
      [["people", "add", "--email", "cy@example.com", "--name", "Cy", "--role", "viewer", "--password", "Tr0ub4dor&3"], /--password: must be at least 12 characters/],
      [["people", "add", "--email", "cy@example.com", "--name", "Cy", "--role", "viewer", "--password", "qwerty123456"], /--password: is one of the most common passwords/],
      [["orgs", "create", "second WORKSPACE"], /name: an org named "Second workspace" already exists/],
      [["orgs", "create", "   "], /name: must not be empty/],
      [["orgs", "create", "x".repeat(201)], /name: must be at most 200 characters/],
      [["orgs", "create"], /name/],
      [["frobnicate"], /unknown command "frobnicate"/]
    ]
    // Two at a time: every run starts a Node process that loads the whole server module graph.
    const runs = await inBatches(cases, 2, ([args]) => runAcs([...args, "--json"], env))
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 2, stderr: expect.stringMatching(message) })
      expect(run.stdout).toBe("")
    })
  })
})

// Through tsx, the development path (the other tests run the production build: server/test/support/entries.ts).
describe("acs on the embedded database", () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-cli-embedded-"))
  afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

  it("migrates and seeds the embedded database, then releases it", async () => {
    const run = await runAcs(["migrate", "--json"], { ACS_DATA_DIR: dataDir }, { via: "tsx" })
    expect(jsonOf<{ defaultOrgId: string }>(run).defaultOrgId).toMatch(/^org_/)
    // First start on the embedded default: the generated admin password is a warning on stderr.
    expect(run.stderr).toContain("first start")
    expect(Fs.existsSync(Path.join(dataDir, "acs.lock"))).toBe(false)
  })

  it("refuses to open the embedded database while another process holds it", async () => {
    Fs.writeFileSync(Path.join(dataDir, "acs.lock"), JSON.stringify({ pid: process.pid, owner: "acs server", since: new Date().toISOString() }))
    try {
      const run = await runAcs(["keys", "list", "--json"], { ACS_DATA_DIR: dataDir }, { via: "tsx" })
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      expect(run.stderr).toMatch(/in use by acs server .*stop the acs server first, or use the REST API/)
    } finally {
      Fs.rmSync(Path.join(dataDir, "acs.lock"), { force: true })
    }
  })
})
