/** Logout ends a person's session; what ends it (the cookie) is REST's, the refusal of a key is the operation's. */
import { InvalidRequest } from "@acs/domain/Errors"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

export const logoutRefusal = (grant: Granted<"logout">): Effect.Effect<void, InvalidRequest> =>
  grant.principal.kind === "person"
    ? Effect.void
    : Effect.fail(new InvalidRequest({ message: "logout ends a person's session; an API key is ended with DELETE /keys/{keyId}" }))
