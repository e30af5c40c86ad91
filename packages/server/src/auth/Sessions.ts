/**
 * Server-side sessions for people: the cookie carries a random token, the database its SHA-256. A request's
 * session lookup is served from a short-lived cache that every instance drops on the change notification of
 * the session or of its person (db/Invalidation.ts, migration 0019), so an ended session, a disabled person or
 * a changed role is seen by every instance on the next request, as for keys.
 */
import { Unauthorized, ValidationFailed } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Clock, Config, Effect, Option, Schema } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { decodeRows } from "../db/Rows.ts"
import { PasswordAttempts } from "../limits/PasswordAttempts.ts"
import { acceptPassword } from "./PasswordRule.ts"
import { People, personColumns, PersonRow, personPrincipal } from "./People.ts"
import { newSessionToken, sha256, verifyPassword } from "./Secrets.ts"
import { sessionStatements } from "./SessionStore.ts"

/** A live session's person, and when the session expires. */
const decodeLiveSessions = decodeRows(Schema.Struct({ ...PersonRow.fields, sessionExpiresAt: Schema.String }))

export const badCredentials = new Unauthorized({ message: "email or password is wrong" })

/** A live session as the cache holds it: its person's principal, and when it expires. */
interface LiveSession {
  readonly principal: Principal
  readonly expiresAtMs: number
}

export class Sessions extends Effect.Service<Sessions>()("acs/Sessions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sessions = sessionStatements(sql)
    const people = yield* People
    const ttlHours = yield* Config.number("SESSION_TTL_HOURS").pipe(Config.withDefault(12))
    const liveSessions = (yield* Invalidation).cache<LiveSession>("s")
    const passwordAttempts = yield* PasswordAttempts

    /** A new session of the person: the token for the cookie, and the principal it authenticates. */
    const start = (person: PersonRow) =>
      Effect.gen(function*() {
        const token = newSessionToken()
        const expiresAt = new Date(yield* sessions.start(sha256(token), person.personId, person.orgId, ttlHours * 3600)).toISOString()
        return { token, principal: personPrincipal(person, expiresAt), maxAgeSeconds: ttlHours * 3600 }
      })

    const login = (email: string, password: string) =>
      Effect.gen(function*() {
        const person = yield* people.findByEmail(email)
        // Verify against a decoy when the email is unknown: both answers cost the same.
        const ok = yield* verifyPassword(password, Option.getOrUndefined(person)?.passwordHash)
        if (!ok || Option.isNone(person)) return yield* badCredentials
        const session = yield* start(person.value)
        yield* Effect.logInfo("person signed in").pipe(Effect.annotateLogs({ personId: person.value.personId }))
        return session
      }).pipe(Effect.withSpan("Sessions.login"))

    /**
     * A person changes their own password knowing the current one; every session of theirs ends, so a stolen
     * cookie stops working. The browser that asked continues on a new session (`resume`), which REST sets.
     * The new password is checked first (a refusal tells nothing about the current one), then the attempt is
     * counted against the person's limit (limits/PasswordAttempts.ts), then the current password is verified.
     */
    const changePassword = (personId: string, currentPassword: string, newPassword: string) =>
      Effect.gen(function*() {
        const accepted = yield* acceptPassword("newPassword", newPassword)
        yield* passwordAttempts.consume(personId)
        const person = yield* people.findById(personId)
        const ok = yield* verifyPassword(currentPassword, Option.getOrUndefined(person)?.passwordHash)
        if (!ok || Option.isNone(person)) {
          return yield* new ValidationFailed({
            message: "the current password is wrong",
            validation_errors: ["currentPassword: does not match the signed-in person's password"]
          })
        }
        yield* people.setPassword(personId, accepted)
        yield* sessions.endAllOf(personId)
        yield* Effect.logInfo("person changed their password; their sessions ended").pipe(Effect.annotateLogs({ personId }))
      }).pipe(Effect.withSpan("Sessions.changePassword"))

    /** A new session for a person who just proved who they are (a changed password); none for a disabled one. */
    const resume = (personId: string) =>
      Effect.flatMap(people.findById(personId), Option.match({ onNone: () => Effect.succeed(Option.none()), onSome: (person) => Effect.map(start(person), Option.some) }))

    const loadLiveSession = (tokenHash: string) =>
      sql`/* prepared */
        SELECT ${sql.unsafe(personColumns("p"))}, s.expires_at AS session_expires_at FROM sessions s JOIN people p USING (person_id)
        WHERE s.token_hash = ${tokenHash} AND s.ended_at IS NULL AND s.expires_at > now() AND p.disabled_at IS NULL`.pipe(
        Effect.flatMap(decodeLiveSessions),
        Effect.map((rows) =>
          Option.map(Option.fromNullable(rows[0]), (row): LiveSession => {
            const expiresAt = new Date(row.sessionExpiresAt)
            return { principal: personPrincipal(row, expiresAt.toISOString()), expiresAtMs: expiresAt.getTime() }
          })
        ),
        Effect.withSpan("Sessions.load", HOT_SPAN)
      )

    /** The principal of a session token, if the session is neither ended nor expired and its person is not disabled. */
    const authenticate = (token: string) =>
      Effect.gen(function*() {
        const tokenHash = sha256(token)
        const found = yield* liveSessions.get(tokenHash, loadLiveSession(tokenHash))
        if (Option.isNone(found)) return Option.none<Principal>()
        // A cached session can pass its expiry while cached.
        if (found.value.expiresAtMs <= (yield* Clock.currentTimeMillis)) return Option.none<Principal>()
        return Option.some(found.value.principal)
      }).pipe(Effect.orDie, Effect.withSpan("Sessions.authenticate", HOT_SPAN))

    const end = (token: string) => {
      const tokenHash = sha256(token)
      return sessions.end(tokenHash).pipe(
        // Committed: this instance forgets the session now; the others on the notification sent with the change.
        Effect.tap(() => Effect.sync(() => liveSessions.invalidate(tokenHash))),
        Effect.withSpan("Sessions.end")
      )
    }

    return { login, changePassword, resume, authenticate, end } as const
  }),
  dependencies: [People.Default, Invalidation.Default, PasswordAttempts.Default]
}) {}
