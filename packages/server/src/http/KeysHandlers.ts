/** API key administration over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Access } from "../auth/Access.ts"
import { KeyStore, specFromRequest } from "../auth/KeyStore.ts"

export const KeysHandlers = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const keys = yield* KeyStore
    return handlers
      .handle("createKey", ({ payload }) =>
        access.check("createKey").pipe(Effect.flatMap((grant) => keys.create(grant, specFromRequest(payload)))))
      .handle("listKeys", () =>
        access.check("listKeys").pipe(
          Effect.flatMap(keys.list),
          Effect.map((list) => ({ keys: list, total: list.length, truncated: false }))
        ))
      .handle("revokeKey", ({ path }) =>
        access.check("revokeKey").pipe(Effect.flatMap((grant) => keys.revoke(grant, path.keyId))))
      .handle("createAccountKey", ({ path, payload }) =>
        access.check("createAccountKey", path.projectId).pipe(Effect.flatMap((grant) =>
          keys.create(grant, {
            name: payload.name,
            scope: payload.scope,
            canApprove: payload.canApprove ?? false,
            binding: { kind: "account", projectId: grant.account.projectId },
            expiresAt: payload.expiresAt ?? null
          })
        )))
  }))
