/**
 * Two instances starting at once on an empty database migrate and seed it exactly once; a weak ADMIN_PASSWORD
 * stops the first start, saying why (docs/decisions/access-and-keys.md).
 */
import { describe, expect, it } from "vitest"
import { migrationCount } from "../src/db/Migrations.ts"
import { createBlankDatabase, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, startServer } from "./support/server.ts"

describe("startup", () => {
  it("lets two instances race on a blank database without double migration or double seeding", async () => {
    const database = await createBlankDatabase()
    const env = { DATABASE_URL: database, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, ADMIN_EMAIL: "a@example.com", ADMIN_PASSWORD: "startup race password 0123" }
    const [one, two] = await Promise.all([startServer(env), startServer(env)])
    try {
      const migrations = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM effect_sql_migrations")
      const orgs = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM orgs")
      const keys = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM api_keys")
      const people = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM people")
      expect({ migrations: migrations[0]!.n, orgs: orgs[0]!.n, keys: keys[0]!.n, people: people[0]!.n })
        .toEqual({ migrations: migrationCount, orgs: 1, keys: 1, people: 1 })
      expect((await call(`${one.api}/auth/me`, { key: BOOTSTRAP_KEY })).status).toBe(200)
      expect((await call(`${two.api}/auth/me`, { key: BOOTSTRAP_KEY })).status).toBe(200)
    } finally {
      await Promise.all([one.stop(), two.stop()])
    }
  })

  it("refuses to start with an ADMIN_PASSWORD the password rule refuses, naming the variable and the reason", async () => {
    const env = { DATABASE_URL: await createBlankDatabase(), ADMIN_EMAIL: "a@example.com" }
    await expect(startServer({ ...env, ADMIN_PASSWORD: "password" }))
      .rejects.toThrow(/acs cannot start: ADMIN_PASSWORD: the password must be at least 12 characters/)
    await expect(startServer({ ...env, ADMIN_PASSWORD: "qwerty123456" }))
      .rejects.toThrow(/acs cannot start: ADMIN_PASSWORD: the password is one of the most common passwords/)
  })
})
