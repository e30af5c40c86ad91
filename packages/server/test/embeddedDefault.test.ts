/**
 * The embedded default (no DATABASE_URL): data lives under ACS_DATA_DIR and survives a restart; the
 * first start prints a generated admin password once, as a plain notice on stderr and in a log line, and
 * connects the demo org to the in-process simulator over the Apple Ads Platform API v1.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { BOOTSTRAP_KEY, call, startServer } from "./support/server.ts"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-embedded-"))

afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

/** The password of the first-start notice: the plain block on stderr, not a log line. */
const noticedPassword = (output: string): string | undefined => {
  const notice = /First start: sign in to acs as the first admin\.[\s\S]*?email +admin@acs\.local[\s\S]*?password +(\S+)/.exec(output)
  return notice?.[1]
}

/** The password of the first-start JSON log line, when the log level lets it through. */
const loggedPassword = (output: string): string | undefined => {
  for (const line of output.split("\n")) {
    if (!line.startsWith("{") || !line.includes("first start")) continue
    const parsed = JSON.parse(line) as { annotations: { password?: string } }
    return parsed.annotations.password
  }
  return undefined
}

describe("embedded default database", () => {
  it("keeps keys and people across a restart and prints the generated admin password only once", async () => {
    const env = { ACS_DATA_DIR: dataDir, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, LOG_LEVEL: "info" }
    // Quiet logs on the first start: the notice must not depend on the log level. Through tsx, the development
    // path (the other servers run the production build `pnpm start` runs: support/entries.ts).
    const first = await startServer({ ...env, LOG_LEVEL: "error" }, { via: "tsx" })
    const created = await call(`${first.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "survivor", scope: "read" } })
    expect(created.status).toBe(201)
    const secret = (created.body as { secret: string }).secret
    const password = noticedPassword(first.logs())
    expect(password).toMatch(/^[\w-]{20,}$/)
    expect(first.logs()).toContain("shown once")
    const connection = await call(`${first.api}/connection`, { key: BOOTSTRAP_KEY })
    expect(connection.body).toMatchObject({ connected: true, provider: "simulator", apiVersion: "v1", warning: null })
    expect(await first.stop("SIGTERM")).toBe(0)

    const second = await startServer(env)
    try {
      const me = await call(`${second.api}/auth/me`, { key: secret })
      expect(me.status).toBe(200)
      expect(me.body).toMatchObject({ principal: { kind: "key", name: "survivor" } })
      expect(second.logs()).not.toContain("First start")
      expect(loggedPassword(second.logs())).toBeUndefined()
      const login = await call(`${second.api}/auth/login`, { method: "POST", body: { email: "admin@acs.local", password } })
      expect(login.status).toBe(200)
    } finally {
      await second.stop()
    }
  })
})
