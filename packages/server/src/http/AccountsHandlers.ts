/** The workspace's accounts, and importing upstream accounts as projects, over REST. */
import { Api } from "@acs/domain/Api"
import { DEFAULT_DAYS } from "@acs/domain/Warehouse"
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { Accounts, reaches, toAccount } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import { Access } from "../auth/Access.ts"
import { Syncs } from "../warehouse/Syncs.ts"
import { freshnessFor } from "../warehouse/Reads.ts"
import { windowEndingYesterday } from "../warehouse/Window.ts"

export const AccountsHandlers = HttpApiBuilder.group(Api, "accounts", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const accounts = yield* Accounts
    const connections = yield* Connections
    const syncs = yield* Syncs
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
            dataFreshness: freshnessFor(grant.account, windowEndingYesterday(now, grant.account.timeZone, DEFAULT_DAYS), now)
          }
        }))
      .handle("importAccounts", ({ payload }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("importAccounts")
          const imported = yield* connections.importInto(grant.orgId, payload.upstreamAccountIds)
          // New accounts get their first sync right away, in the background.
          for (const projectId of imported.created) {
            const account = yield* accounts.find(projectId)
            if (account._tag === "Some") yield* syncs.begin(account.value, "import").pipe(Effect.ignore)
          }
          return { accounts: imported.accounts }
        }))
  }))
