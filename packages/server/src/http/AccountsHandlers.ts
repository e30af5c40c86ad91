/** The workspace's accounts and connection over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { Accounts, reaches, toAccount } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import { dataFreshness } from "../accounts/Freshness.ts"
import { Access } from "../auth/Access.ts"

const DEFAULT_DAYS = 30

export const AccountsHandlers = HttpApiBuilder.group(Api, "accounts", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const accounts = yield* Accounts
    const connections = yield* Connections
    return handlers
      .handle("listAccounts", () =>
        Effect.gen(function*() {
          const grant = yield* access.check("listAccounts")
          const rows = (yield* accounts.listInOrg(grant.orgId)).filter((row) => reaches(grant.principal.binding, row.projectId))
          return { accounts: rows.map(toAccount), total: rows.length, truncated: false }
        }))
      .handle("getAccount", ({ path }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("getAccount", path.projectId)
          const now = yield* Clock.currentTimeMillis
          return {
            account: toAccount(grant.account),
            dataFreshness: dataFreshness(grant.account.lastSyncedAt, grant.account.syncedDays, DEFAULT_DAYS, now)
          }
        }))
      .handle("getConnection", () => access.check("getConnection").pipe(Effect.flatMap(connections.get)))
  }))
