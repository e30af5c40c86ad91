/** The upstream connection and account discovery over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Connections } from "../accounts/Connections.ts"
import { Access } from "../auth/Access.ts"

export const ConnectionHandlers = HttpApiBuilder.group(Api, "connection", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const connections = yield* Connections
    return handlers
      .handle("getConnection", () => access.check("getConnection").pipe(Effect.flatMap(connections.get)))
      .handle("updateConnection", ({ payload }) =>
        access.check("updateConnection").pipe(Effect.flatMap((grant) => connections.update(grant, payload))))
      .handle("createConnectionKeyPair", () =>
        access.check("createConnectionKeyPair").pipe(Effect.flatMap(connections.createKeyPair)))
      .handle("discoverAccounts", () => access.check("discoverAccounts").pipe(Effect.flatMap(connections.discover)))
  }))
