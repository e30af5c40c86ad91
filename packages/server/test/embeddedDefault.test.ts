/**
 * The embedded default (no DATABASE_URL): data lives under ACS_DATA_DIR and survives a restart; the
 * first start prints a generated admin password once, as a plain notice on stderr and in no log line, and
 * connects the demo org to the in-process simulator over the Apple Ads Platform API v1. Webhooks are delivered
 * there too: the embedded database runs the delivery queue's statements as PostgreSQL does.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { startReceiver } from "./support/receiver.ts"
import { BOOTSTRAP_KEY, call, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-embedded-"))

afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

/** The password of the first-start notice: the plain block on stderr, not a log line. */
const noticedPassword = (output: string): string | undefined => {
  const notice = /First start: sign in to acs as the first admin\.[\s\S]*?email +admin@acs\.local[\s\S]*?password +(\S+)/.exec(output)
  return notice?.[1]
}

/** The JSON log lines of a process's output (stdout and stderr). */
const logLines = (output: string): Array<string> => output.split("\n").filter((line) => line.startsWith("{"))

const occurrences = (text: string, part: string): number => text.split(part).length - 1

describe("embedded default database", () => {
  it("keeps keys and people across a restart and prints the generated admin password only once", async () => {
    const env = { ACS_DATA_DIR: dataDir, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, LOG_LEVEL: "info" }
    // Quiet logs on the first start: the notice must not depend on the log level. Through tsx, the development
    // path (the other servers run the production build `pnpm start` runs: support/entries.ts).
    const first = await startServer({ ...env, LOG_LEVEL: "error" }, { via: "tsx" })
    const { secret } = await withApi(first.baseUrl, BOOTSTRAP_KEY, (client) => client.keys.createKey({ payload: { name: "survivor", scope: "read" } }))
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
      expect(second.logs()).not.toContain(password)
      const login = await call(`${second.api}/auth/login`, { method: "POST", body: { email: "admin@acs.local", password } })
      expect(login.status).toBe(200)
    } finally {
      await second.stop()
    }
  })

  it("prints the generated password once, in the notice, and in no log line, even at LOG_LEVEL=trace", async () => {
    const fresh = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-embedded-fresh-"))
    try {
      const server = await startServer({ ACS_DATA_DIR: fresh, LOG_LEVEL: "trace" })
      try {
        const output = server.logs()
        const password = noticedPassword(output)
        expect(password).toMatch(/^[\w-]{20,}$/)
        // stdout and stderr together: the notice is the only place the password is written.
        expect(occurrences(output, password!)).toBe(1)
        const lines = logLines(output)
        expect(lines.some((line) => line.includes("first start")), "the log line pointing at the notice").toBe(true)
        expect(lines.filter((line) => line.includes(password!))).toEqual([])
        const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: "admin@acs.local", password } })
        expect(login.status).toBe(200)
      } finally {
        await server.stop()
      }
    } finally {
      Fs.rmSync(fresh, { recursive: true, force: true })
    }
  })

  it("delivers a webhook of a sync's event, once, on the embedded database", async () => {
    const receiver = await startReceiver()
    const server = await startServer({ ACS_DATA_DIR: dataDir, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", EVENTS_POLL_MS: "200" })
    try {
      const api = <A, E>(use: (client: ApiClient) => Effect.Effect<A, E>) => withApi(server.baseUrl, BOOTSTRAP_KEY, use)
      const created = await api((client) => client.webhooks.createWebhook({ payload: { url: `${receiver.url}/embedded`, events: ["sync.succeeded"] } }))
      const projectId = (await api((client) => client.accounts.listAccounts())).accounts[0]!.projectId
      const { syncId } = await api((client) => client.warehouse.startSync({ path: { projectId } }))
      const ofSync = () => receiver.received.filter((r) => JSON.stringify(r.body["data"]).includes(syncId))
      await waitFor("the sync.succeeded delivery", () => Promise.resolve(ofSync()), (r) => r.length > 0)
      expect(ofSync().map((r) => r.body["type"])).toEqual(["sync.succeeded"])
      const webhookId = created.webhook.webhookId
      const log = await waitFor(
        "the delivery in the log",
        async () => (await api((client) => client.webhooks.listWebhookDeliveries({ path: { webhookId }, urlParams: {} }))).deliveries,
        (d) => d.some((x) => x.eventId === ofSync()[0]!.eventId)
      )
      expect(log.find((x) => x.eventId === ofSync()[0]!.eventId)).toMatchObject({ status: "delivered", attempts: 1 })
    } finally {
      await server.stop()
      await receiver.close()
    }
  })
})
