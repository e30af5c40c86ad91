/** The accounts (projects) of each org, as the warehouse knows them. */
import type { Account } from "@acs/domain/Accounts"
import type { Binding } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { Invalidation } from "../db/Invalidation.ts"
import type { AccountRecord } from "./AccountRecord.ts"
import type { Granted } from "./Granted.ts"

interface AccountRow {
  readonly projectId: string
  readonly orgId: string
  readonly upstreamAccountId: string
  readonly name: string
  readonly status: Account["status"]
  readonly currency: string
  readonly timeZone: string
  readonly readOnly: boolean
  readonly lastSyncedAt: string | null
  readonly firstSyncedDay: string | null
  readonly lastSyncedDay: string | null
}

export const toAccount = (row: AccountRecord): Account => ({
  projectId: row.projectId,
  name: row.name,
  upstreamAccountId: row.upstreamAccountId,
  status: row.status,
  currency: row.currency,
  timeZone: row.timeZone,
  readOnly: row.readOnly
})

export const reaches = (binding: Binding, projectId: string): boolean =>
  binding.kind === "org" ||
  (binding.kind === "subset" && binding.projectIds.includes(projectId)) ||
  (binding.kind === "account" && binding.projectId === projectId)

export const boundProjects = (binding: Binding): ReadonlyArray<string> =>
  binding.kind === "subset" ? binding.projectIds : binding.kind === "account" ? [binding.projectId] : []

/** True when `holder` reaches every account `target` reaches: what a credential may hand out or manage. */
export const covers = (holder: Binding, target: Binding): boolean =>
  holder.kind === "org" || (target.kind !== "org" && boundProjects(target).every((id) => reaches(holder, id)))

export class Accounts extends Effect.Service<Accounts>()("acs/Accounts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cached = (yield* Invalidation).cache<AccountRecord>("a")

    const find = (projectId: string) =>
      sql<AccountRow>`/* prepared */ SELECT * FROM accounts WHERE project_id = ${projectId}`.pipe(
        Effect.map((rows): Option.Option<AccountRecord> => Option.fromNullable(rows[0])),
        Effect.orDie,
        Effect.withSpan("Accounts.find", HOT_SPAN)
      )

    /**
     * The account as the access check reads it on every request: from a short-lived cache that every
     * instance drops on the account's change notification (db/Invalidation.ts). Writers read `find`.
     */
    const findForAccess = (projectId: string) => cached.get(projectId, find(projectId))

    const listInOrg = (orgId: string) =>
      sql<AccountRow>`SELECT * FROM accounts WHERE org_id = ${orgId} ORDER BY name, project_id`.pipe(
        Effect.orDie,
        Effect.withSpan("Accounts.listInOrg")
      )

    const existing = (orgId: string, projectIds: ReadonlyArray<string>) =>
      projectIds.length === 0
        ? Effect.succeed<ReadonlyArray<string>>([])
        : sql<{ projectId: string }>`SELECT project_id FROM accounts WHERE org_id = ${orgId} AND ${
          sql.in("project_id", projectIds)
        }`.pipe(Effect.map((rows) => rows.map((row) => row.projectId)), Effect.orDie)

    /** The org's accounts the caller reaches: all of them, or the subset its key is bound to (listAccounts). */
    const listReachable = (grant: Granted<"listAccounts">) =>
      Effect.map(listInOrg(grant.orgId), (rows) => rows.filter((row) => reaches(grant.principal.binding, row.projectId)))

    return { find, findForAccess, listInOrg, listReachable, existing } as const
  }),
  dependencies: [Invalidation.Default]
}) {}

/**
 * Marks the account read-only (the upstream refused a write for the role) until a sync sees it back: the write
 * of the apply that failed for it, in that apply's transaction (worker/RunEndings.ts).
 */
export const markReadOnly = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`UPDATE accounts SET read_only = true WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie)
