/**
 * A person changes their own password (`POST /auth/password`, docs/contract.md 5.4): the old password stops
 * working, every other session of theirs ends, and the browser that asked carries on with a new cookie. The new
 * password must pass the rule (12 characters, not a common password), and the current-password check is
 * limited like a sign-in, per person whatever the session (docs/contract.md 8).
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
    expect(short.status).toBe(422)
    expect(errorCode(short)).toBe("validation_failed")
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

/** A person added over REST with `secret` (the bootstrap key is an admin's), and a session of theirs. */
const addPerson = async (who: string, secret: string) => {
  const added = await call(`${server.api}/people`, { method: "POST", key: BOOTSTRAP_KEY, body: { email: who, name: who, role: "viewer", password: secret } })
  expect(added.status, added.text).toBe(201)
}

const sessionOf = async (who: string, secret: string) => {
  const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: who, password: secret } })
  expect(login.status, login.text).toBe(200)
  return login.headers.get("set-cookie")!.split(";")[0]!
}

describe("the password rule on a new password", () => {
  it("refuses `password`, 11 characters and a common password of 12, naming newPassword and why; takes a good one", async () => {
    const who = "rule@password.example"
    const secret = "rule person password 0123"
    await addPerson(who, secret)
    const cookie = await sessionOf(who, secret)
    const change = (newPassword: string) =>
      call(`${server.api}/auth/password`, { method: "POST", headers: { cookie }, body: { currentPassword: secret, newPassword } })
    for (
      const [weak, reason] of [
        ["password", "newPassword: must be at least 12 characters"],
        ["Tr0ub4dor&3", "newPassword: must be at least 12 characters"],
        ["qwerty123456", "newPassword: is one of the most common passwords; choose another"],
        ["QWERTY123456", "newPassword: is one of the most common passwords; choose another"]
      ] as const
    ) {
      const refused = await change(weak)
      expect(refused.status, weak).toBe(422)
      expect(refused.body, weak).toMatchObject({ error: { code: "validation_failed", validation_errors: [reason] } })
    }
    expect(await me(cookie), "nothing changed").toBe(200)

    const good = "a long and uncommon passphrase"
    const changed = await change(good)
    expect(changed.status, changed.text).toBe(204)
    expect(await me(await sessionOf(who, good))).toBe(200)
  })
})

describe("the current-password check", () => {
  it("answers the 6th attempt in 15 minutes with 429 and Retry-After, from a new session too, and changes nothing", async () => {
    const who = "guessed@password.example"
    const secret = "guessed person password 0123"
    await addPerson(who, secret)
    const guess = (cookie: string, currentPassword: string) =>
      call(`${server.api}/auth/password`, { method: "POST", headers: { cookie }, body: { currentPassword, newPassword: "the thief's new password 0123" } })

    const stolen = await sessionOf(who, secret)
    for (let i = 1; i <= 5; i++) {
      const wrong = await guess(stolen, `guess number ${i}`)
      expect(wrong.status, `guess ${i}`).toBe(422)
      expect(errorCode(wrong)).toBe("validation_failed")
    }
    // A new session is the same person: the count goes on.
    const fresh = await sessionOf(who, secret)
    const limited = await guess(fresh, "guess number 6")
    expect(limited.status, limited.text).toBe(429)
    expect(errorCode(limited)).toBe("rate_limited")
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(15 * 60)
    // Even the right password waits now; the password and the sessions are as they were.
    expect((await guess(fresh, secret)).status).toBe(429)
    expect(await me(stolen)).toBe(200)
    expect(await me(await sessionOf(who, secret))).toBe(200)
  })
})
