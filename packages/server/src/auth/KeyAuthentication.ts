/**
 * A caller by its API key: the Bearer scheme (in any case, docs/contract.md 5.3) and a key the key store knows, not
 * revoked and not expired. Every failure is the same 401. REST (with sessions too), RPC and MCP all use it.
 */
import type { Principal } from "@acs/domain/Principal"
import { Unauthorized } from "@acs/domain/Errors"
import { Effect, Option } from "effect"
import { KeyStore } from "./KeyStore.ts"

export const unauthorized = new Unauthorized({
  message: "missing, invalid, revoked or expired credentials: send Authorization: Bearer <API key>"
})

const BEARER = /^bearer ([\x21-\x7e]{1,512})$/i

export const orUnauthorized = <A, E, R>(found: Effect.Effect<Option.Option<A>, E, R>) =>
  Effect.flatMap(found, Option.match({ onNone: () => Effect.fail(unauthorized), onSome: Effect.succeed }))

/** The key a Bearer header presents, by the given key store; 401 for any other header. */
export const keyAuthenticator = (keys: KeyStore) => (authorization: string | undefined): Effect.Effect<Principal, Unauthorized> => {
  const match = authorization === undefined ? null : BEARER.exec(authorization)
  return match === null ? Effect.fail(unauthorized) : orUnauthorized(keys.authenticate(match[1]!))
}

/** The key a Bearer header presents; 401 for any other header. */
export const authenticateKey = (authorization: string | undefined) => Effect.flatMap(KeyStore, (keys) => keyAuthenticator(keys)(authorization))
