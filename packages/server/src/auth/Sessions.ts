/**
 * Server-side sessions for people: the cookie carries a random token, the database its SHA-256. Ending a
 * session is seen by every instance on the next request, as for keys.
 */
import { Unauthorized } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Config, Effect, Option } from "effect"
import { People, type PersonRow, personPrincipal } from "./People.ts"
import { newSessionToken, sha256, verifyPassword } from "./Secrets.ts"

export const badCredentials = new Unauthorized({ message: "email or password is wrong" })

export class Sessions extends Effect.Service<Sessions>()("acs/Sessions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const people = yield* People
    const ttlHours = yield* Config.number("SESSION_TTL_HOURS").pipe(Config.withDefault(12))

    const login = (email: string, password: string) =>
      Effect.gen(function*() {
        const person = yield* people.findByEmail(email)
        // Verify against a decoy when the email is unknown: both answers cost the same.
        const ok = yield* verifyPassword(password, Option.getOrUndefined(person)?.passwordHash)
        if (!ok || Option.isNone(person)) return yield* badCredentials
        const token = newSessionToken()
        const rows = yield* sql<{ expiresAt: string }>`
          INSERT INTO sessions (token_hash, person_id, org_id, expires_at)
          VALUES (${sha256(token)}, ${person.value.personId}, ${person.value.orgId}, now() + make_interval(secs => ${
          ttlHours * 3600
        }))
          RETURNING expires_at`.pipe(Effect.orDie)
        const expiresAt = new Date(rows[0]!.expiresAt).toISOString()
        yield* Effect.logInfo("person signed in").pipe(Effect.annotateLogs({ personId: person.value.personId }))
        return { token, principal: personPrincipal(person.value, expiresAt), maxAgeSeconds: ttlHours * 3600 }
      }).pipe(Effect.withSpan("Sessions.login"))

    const authenticate = (token: string) =>
      sql<PersonRow & { sessionExpiresAt: string }>`
        SELECT p.*, s.expires_at AS session_expires_at FROM sessions s JOIN people p USING (person_id)
        WHERE s.token_hash = ${sha256(token)} AND s.ended_at IS NULL AND s.expires_at > now() AND p.disabled_at IS NULL`
        .pipe(
          Effect.map((rows) =>
            Option.map(
              Option.fromNullable(rows[0]),
              (row): Principal => personPrincipal(row, new Date(row.sessionExpiresAt).toISOString())
            )
          ),
          Effect.orDie,
          Effect.withSpan("Sessions.authenticate")
        )

    const end = (token: string) =>
      sql`UPDATE sessions SET ended_at = now() WHERE token_hash = ${sha256(token)} AND ended_at IS NULL`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("Sessions.end")
      )

    return { login, authenticate, end } as const
  }),
  dependencies: [People.Default]
}) {}
