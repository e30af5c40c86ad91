/**
 * Admins manage the people who sign in (docs/contract.md 5.4: add, role, disable): a person added with a
 * generated password signs in with it; a role change takes effect on their next request; disabling ends their
 * sessions at once and enabling lets them back; nobody locks the workspace's admins out.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { PersonList } from "@acs/domain/People"
import { Effect, Either, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { createDatabase } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

let server: RunningServer
let admin: string
const adminEmail = "admin@people.example"
const adminPassword = "people admin password 0123"

const cookieOf = (answer: Answer) => answer.headers.getSetCookie().find((l) => l.startsWith("acs_session="))!.split(";")[0]!

const signIn = async (email: string, password: string) => call(`${server.api}/auth/login`, { method: "POST", body: { email, password } })

const as = (cookie: string, method: string, path: string, body?: unknown) => call(`${server.api}${path}`, { method, body, headers: { cookie } })

beforeAll(async () => {
  server = await startServer({ DATABASE_URL: await createDatabase(), ADMIN_EMAIL: adminEmail, ADMIN_PASSWORD: adminPassword, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY })
  admin = cookieOf(await signIn(adminEmail, adminPassword))
})

afterAll(async () => {
  await server?.stop()
})

describe("people", () => {
  it("adds a person with a generated password shown once, who signs in with it; a taken email is 409", async () => {
    const added = await withApi(server.baseUrl, { cookie: admin }, (client) =>
      client.people.createPerson({ payload: { email: "ana@people.example", name: "Ana", role: "approver" } })
    )
    expect(added.person).toMatchObject({ role: "approver", disabledAt: null })
    // Generated, since none was given: answered this once.
    const password = added.password ?? ""
    expect(password.length).toBeGreaterThanOrEqual(16)
    const login = await signIn("ana@people.example", password)
    expect(login.status).toBe(200)
    expect(login.body).toMatchObject({ principal: { kind: "person", role: "approver", canApprove: true } })

    const listed = await as(admin, "GET", "/people")
    expect(Schema.decodeUnknownSync(PersonList)(listed.body).people.map((p) => p.email)).toEqual(["admin@people.example", "ana@people.example"])
    expect(listed.text).not.toContain("password")

    const again = await as(admin, "POST", "/people", { email: "ANA@people.example", name: "Ana again", role: "viewer" })
    expect(again.status).toBe(409)
    expect(errorCode(again)).toBe("conflict")
  })

  it("changes a role, disables (ending the sessions at once) and enables a person", () =>
    withApi(server.baseUrl, { cookie: admin }, (client) =>
      Effect.gen(function*() {
        const added = yield* client.people.createPerson({ payload: { email: "bo@people.example", name: "Bo", role: "editor", password: "bo password 0123" } })
        const personId = added.person.personId
        const bo = cookieOf(yield* Effect.promise(() => signIn("bo@people.example", "bo password 0123")))
        const asBo = <A, E>(use: (bo: ApiClient) => Effect.Effect<A, E>) => Effect.promise(() => withApi(server.baseUrl, { cookie: bo }, use))

        expect(yield* client.people.updatePerson({ path: { personId }, payload: { role: "viewer" } })).toMatchObject({ role: "viewer" })
        expect((yield* asBo((c) => c.auth.getMe())).principal).toMatchObject({ role: "viewer", scope: "read" })
        expect(yield* asBo((c) => Effect.flip(c.people.listPeople()))).toMatchObject({ _tag: "ForbiddenScope" })

        const disabled = yield* client.people.updatePerson({ path: { personId }, payload: { disabled: true } })
        expect(disabled.disabledAt).not.toBeNull()
        expect(yield* asBo((c) => Effect.flip(c.auth.getMe())), "the session ended").toMatchObject({ _tag: "Unauthorized" })
        expect((yield* Effect.promise(() => signIn("bo@people.example", "bo password 0123"))).status).toBe(401)

        yield* client.people.updatePerson({ path: { personId }, payload: { disabled: false } })
        expect((yield* Effect.promise(() => signIn("bo@people.example", "bo password 0123"))).status).toBe(200)
      })))

  it("refuses to let an admin demote or disable themselves, or the last active admin go", () =>
    withApi(server.baseUrl, { cookie: admin }, (client) =>
      Effect.gen(function*() {
        const me = yield* client.auth.getMe()
        for (const change of [{ role: "viewer" as const }, { disabled: true }]) {
          expect(yield* Effect.flip(client.people.updatePerson({ path: { personId: me.principal.id }, payload: change }))).toMatchObject({ _tag: "Conflict" })
        }
        expect(yield* Effect.flip(client.people.updatePerson({ path: { personId: "psn_nobody" }, payload: { role: "viewer" } })))
          .toMatchObject({ _tag: "NotFound" })
      })))
})

/** The password rule (docs/contract.md 8) where an admin sets someone's password: 422 naming `password` and why. */
const WEAK: ReadonlyArray<readonly [string, string]> = [
  ["password", "password: must be at least 12 characters"],
  ["Tr0ub4dor&3", "password: must be at least 12 characters"],
  ["qwerty123456", "password: is one of the most common passwords; choose another"]
]

describe("a given password", () => {
  it("is refused over REST when short or common, and a good one is taken", async () => {
    for (const [weak, reason] of WEAK) {
      const refused = await as(admin, "POST", "/people", { email: "weak@people.example", name: "Weak", role: "viewer", password: weak })
      expect(refused.status, weak).toBe(422)
      expect(refused.body, weak).toMatchObject({ error: { code: "validation_failed", validation_errors: [reason] } })
    }
    const added = await as(admin, "POST", "/people", { email: "strong@people.example", name: "Strong", role: "viewer", password: "strong person password" })
    expect(added.status, added.text).toBe(201)
    expect((await signIn("strong@people.example", "strong person password")).status).toBe(200)
    expect((await signIn("weak@people.example", "qwerty123456")).status, "no weak person was added").toBe(401)
  })

  it("is refused over RPC alike", async () => {
    const createPerson = (password: string) =>
      Effect.runPromise(
        Effect.flatMap(AcsClient, (client) => Effect.either(client.createPerson({ payload: { email: "rpc@people.example", name: "Rpc", role: "viewer", password } }))).pipe(
          Effect.provide(AcsClient.layer({ url: server.baseUrl, key: BOOTSTRAP_KEY })),
          Effect.scoped
        )
      )
    for (const [weak, reason] of WEAK) {
      const refused = await createPerson(weak)
      expect(Either.isLeft(refused) && refused.left, weak).toMatchObject({ _tag: "ValidationFailed", validation_errors: [reason] })
    }
    const added = await createPerson("rpc person password 0123")
    expect(Either.isRight(added) && added.right.person.email).toBe("rpc@people.example")
  })
})
