/**
 * A person changes their own password (`POST /auth/password`, API.md "The console"): the old password stops
 * working, every other session of theirs ends, and the browser that asked carries on with a new cookie.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

let server: RunningServer
const email = "owner@password.example"
const password = "first password 0123456789"

beforeAll(async () => {
  server = await startServer({ DATABASE_URL: await createDatabase(), ADMIN_EMAIL: email, ADMIN_PASSWORD: password, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY })
})

afterAll(async () => {
  await server?.stop()
})

const signIn = async (secret: string) => {
  const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email, password: secret } })
  expect(login.status).toBe(200)
  return login.headers.get("set-cookie")!.split(";")[0]!
}

const me = async (cookie: string) => (await call(`${server.api}/auth/me`, { headers: { cookie } })).status

describe("changing one's own password", () => {
  it("refuses a wrong current password and a short new one, changing nothing", async () => {
    const cookie = await signIn(password)
    const wrong = await call(`${server.api}/auth/password`, {
      method: "POST",
      headers: { cookie },
      body: { currentPassword: "not it", newPassword: "another password 0123" }
    })
    expect(wrong.status).toBe(422)
    expect(errorCode(wrong)).toBe("validation_failed")
    const short = await call(`${server.api}/auth/password`, { method: "POST", headers: { cookie }, body: { currentPassword: password, newPassword: "short" } })
    expect(short.status).toBe(400)
    expect(errorCode(short)).toBe("invalid_request")
    expect(await me(cookie)).toBe(200)
  })

  it("refuses an API key: it has no password", async () => {
    const answer = await call(`${server.api}/auth/password`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { currentPassword: password, newPassword: "another password 0123" }
    })
    expect(answer.status).toBe(400)
    expect(errorCode(answer)).toBe("invalid_request")
  })

  it("ends the person's other sessions, keeps the asking browser signed in, and takes only the new password", async () => {
    const laptop = await signIn(password)
    const phone = await signIn(password)
    const next = "second password 0123456789"
    const changed = await call(`${server.api}/auth/password`, { method: "POST", headers: { cookie: laptop }, body: { currentPassword: password, newPassword: next } })
    expect(changed.status).toBe(204)
    const renewed = changed.headers.get("set-cookie")
    expect(renewed).toMatch(/^acs_session=[\w-]+;.*HttpOnly/i)

    expect(await me(phone), "the other session ended").toBe(401)
    expect(await me(laptop), "the old cookie of the asking browser ended too").toBe(401)
    expect(await me(renewed!.split(";")[0]!), "the asking browser continues on its new cookie").toBe(200)

    const old = await call(`${server.api}/auth/login`, { method: "POST", body: { email, password } })
    expect(old.status).toBe(401)
    expect(await me(await signIn(next))).toBe(200)
  })
})
