/**
 * How acs serves the console (http/ConsoleRoute.ts): the page and its assets under a strict CSP, nothing
 * outside the built directory, the API untouched; and a console that was never built answers 503 saying how
 * to build it, not a 500.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { call, type RunningServer, startServer } from "./support/server.ts"

let built: RunningServer
let missing: RunningServer
let dir: string

beforeAll(async () => {
  // A built console of our own: what is served is read from CONSOLE_DIR.
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-console-"))
  Fs.mkdirSync(Path.join(dir, "assets"))
  Fs.writeFileSync(Path.join(dir, "index.html"), "<!doctype html><title>acs console</title><script type=\"module\" src=\"/assets/app.js\"></script>")
  Fs.writeFileSync(Path.join(dir, "assets", "app.js"), "export {}\n")
  Fs.writeFileSync(Path.join(dir, "secret.txt"), "outside the assets")
  const database = await createDatabase()
  ;[built, missing] = await Promise.all([
    startServer({ DATABASE_URL: database, CONSOLE_DIR: dir }),
    startServer({ DATABASE_URL: database, CONSOLE_DIR: Path.join(dir, "not-built") })
  ])
})

afterAll(async () => {
  await Promise.all([built?.stop(), missing?.stop()])
  Fs.rmSync(dir, { recursive: true, force: true })
})

describe("serving the console", () => {
  it("answers the page and its assets with their types and a strict Content-Security-Policy", async () => {
    const page = await call(`${built.baseUrl}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(page.headers.get("content-security-policy")).toMatch(/^default-src 'self'; script-src 'self'; style-src 'self';/)
    expect(page.headers.get("x-frame-options")).toBe("DENY")
    const script = await call(`${built.baseUrl}/assets/app.js`)
    expect(script.status).toBe(200)
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
  })

  it("serves nothing outside the assets directory, and leaves the API's routes alone", async () => {
    for (const path of ["/assets/../secret.txt", "/assets/%2e%2e%2fsecret.txt", "/secret.txt", "/assets/.hidden", "/assets/nope.js"]) {
      const answer = await call(`${built.baseUrl}${path}`)
      expect(answer.status, path).toBe(404)
      expect(answer.text, path).not.toContain("outside the assets")
    }
    const health = await call(`${built.baseUrl}/healthz`)
    expect(health.body).toEqual({ status: "ok" })
    const unauthenticated = await call(`${built.api}/auth/me`)
    expect(unauthenticated.status).toBe(401)
  })

  it("answers 503 with the command that builds a console that was never built", async () => {
    const answer = await call(`${missing.baseUrl}/`)
    expect(answer.status).toBe(503)
    expect(answer.text).toContain("build:console")
    expect((await call(`${missing.baseUrl}/healthz`)).status).toBe(200)
  })
})
