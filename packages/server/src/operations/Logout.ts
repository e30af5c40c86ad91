/**
 * The operations of a person's session: logout ends it (what ends it, the cookie, is REST's) and a person
 * changes their own password or links their own Slack user; a key is refused as a malformed request. Logout counts against no rate-limit
 * bucket (Operations.ts): a person whose writes are used up can still end their session.
 */
import { InvalidRequest } from "@acs/domain/Errors"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

export const logoutRefusal = (grant: Granted<"logout">): Effect.Effect<void, InvalidRequest> =>
  grant.principal.kind === "person"
    ? Effect.void
    : Effect.fail(new InvalidRequest({ message: "logout ends a person's session; an API key is ended with DELETE /keys/{keyId}" }))

export const passwordRefusal = (grant: Granted<"changePassword">): Effect.Effect<string, InvalidRequest> =>
  grant.principal.kind === "person"
    ? Effect.succeed(grant.principal.id)
    : Effect.fail(new InvalidRequest({ message: "an API key has no password; a person changes theirs signed in" }))

export const slackLinkRefusal = (grant: Granted<"linkSlackUser">): Effect.Effect<string, InvalidRequest> =>
  grant.principal.kind === "person"
    ? Effect.succeed(grant.principal.id)
    : Effect.fail(new InvalidRequest({ message: "an API key has no Slack user; a person links theirs signed in" }))
