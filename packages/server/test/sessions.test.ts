/** People sign in with a password and get a server-side session in an HttpOnly, SameSite=Strict cookie. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { call, errorCode, type RunningServer, startServer } from "./support/server.ts"

let server: RunningServer
const email = "Owner@Example.com"
const password = "correct horse battery staple"

beforeAll(async () => {
  server = await startServer({
    DATABASE_URL: await createDatabase(),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    RATE_LIMIT_LOGIN: "4"
  })
})

afterAll(async () => {
  await server?.stop()
})

const sessionCookie = (setCookie: string | null): string => {
  expect(setCookie).not.toBeNull()
  return setCookie!.split(";")[0]!
}

describe("sessions", () => {
  it("signs the seeded admin in, case-insensitively on the email, with a hardened cookie", async () => {
    const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: email.toLowerCase(), password } })
    expect(login.status).toBe(200)
    expect(login.body).toMatchObject({ principal: { kind: "person", role: "admin", scope: "admin", canApprove: true } })
    const setCookie = login.headers.get("set-cookie")
    expect(setCookie).toMatch(/^acs_session=[\w-]+;/)
    expect(setCookie).toMatch(/HttpOnly/i)
    expect(setCookie).toMatch(/SameSite=Strict/i)

    const cookie = sessionCookie(setCookie)
    const me = await call(`${server.api}/auth/me`, { headers: { cookie } })
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ principal: { kind: "person", role: "admin" } })

    const settings = await call(`${server.api}/settings`, { method: "PUT", headers: { cookie }, body: { platformAutoApply: false } })
    expect(settings.status).toBe(200)
    expect(settings.body).toMatchObject({ platformAutoApply: false })

    const logout = await call(`${server.api}/auth/logout`, { method: "POST", headers: { cookie } })
    expect(logout.status).toBe(204)
    const after = await call(`${server.api}/auth/me`, { headers: { cookie } })
    expect(after.status).toBe(401)
    expect(errorCode(after)).toBe("unauthorized")
  })

  it("answers a wrong password and an unknown email alike", async () => {
    const wrong = await call(`${server.api}/auth/login`, { method: "POST", body: { email: email, password: "nope" } })
    const unknown = await call(`${server.api}/auth/login`, { method: "POST", body: { email: "ghost@example.com", password: "nope" } })
    expect(wrong.status).toBe(401)
    expect(unknown.status).toBe(401)
    expect(wrong.body).toEqual(unknown.body)
    expect(wrong.headers.get("set-cookie")).toBeNull()
  })

  it("rate limits login attempts per email", async () => {
    const target = "limited@example.com"
    const answers = []
    for (let i = 0; i < 5; i++) {
      answers.push(await call(`${server.api}/auth/login`, { method: "POST", body: { email: target, password: "guess" } }))
    }
    expect(answers.slice(0, 4).map((a) => a.status)).toEqual([401, 401, 401, 401])
    const refused = answers[4]!
    expect(refused.status).toBe(429)
    expect(errorCode(refused)).toBe("rate_limited")
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
  })
})
