/** The accounts (projects) of each org, as the warehouse knows them. */
import type { Account } from "@acs/domain/Accounts"
import type { Binding } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { invalidateKey, invalidating, Invalidation } from "../db/Invalidation.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import { type AccountRecord, AccountRow } from "./AccountRecord.ts"
import type { Granted } from "./Granted.ts"

const accountColumns = columnsOf(AccountRow)
export const decodeAccounts = decodeRows(AccountRow)
const ImportedRow = AccountRow.pick("projectId", "upstreamAccountId", "name", "currency")
const importedColumns = columnsOf(ImportedRow)
const decodeImportedAccounts = decodeRows(ImportedRow)
const decodeImported = decodeRows(Schema.Struct({ ...AccountRow.fields, inserted: Schema.Boolean }))
const decodeProjectIds = decodeRows(AccountRow.pick("projectId"))

/** For the `RETURNING` of a statement that changes accounts: the changed account, which every instance drops at commit. */
const changedAccount = (sql: SqlClient.SqlClient) => invalidateKey(sql, sql`accounts.project_id`)

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

/**
 * The statements that write `accounts`, this module being the table's owner (docs/decisions/architecture.md "One
 * owner per table"). Each takes the caller's client, so it runs in the caller's transaction (one of its own when there
 * is none), and drops the changed account from every instance's lookup cache at its commit (`invalidating`).
 */
export const accountWrites = (sql: SqlClient.SqlClient) => ({
  /** An upstream account imported as a project; one imported before is updated and answered, never duplicated. */
  upsertImported: (orgId: string, projectId: string, account: UpstreamAccountFacts) =>
    invalidating(sql, "a", sql`
      INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone, read_only)
      VALUES (${projectId}, ${orgId}, ${account.upstreamAccountId}, ${account.name}, 'active', ${account.currency}, ${account.timeZone},
        ${account.readOnly})
      ON CONFLICT (org_id, upstream_account_id) DO UPDATE SET name = excluded.name, read_only = excluded.read_only,
        status = CASE WHEN accounts.status = 'disconnected' THEN 'active' ELSE accounts.status END
      RETURNING ${sql.unsafe(accountColumns)}, (xmax = 0) AS inserted,
        -- An account imported before changed (a new one is in no cache).
        ${invalidateKey(sql, sql`CASE WHEN xmax <> 0 THEN accounts.project_id END`)}`).pipe(Effect.flatMap(decodeImported)),

  /** The org's imported accounts, locked until the caller's transaction ends: what a new listing is matched against. */
  lockImported: (orgId: string) =>
    sql`SELECT ${sql.unsafe(importedColumns)} FROM accounts WHERE org_id = ${orgId} FOR UPDATE`.pipe(Effect.flatMap(decodeImportedAccounts)),

  /** The project now answers to another upstream id (the platform renamed what it lists). */
  moveUpstream: (projectId: string, upstreamAccountId: string) =>
    invalidating(sql, "a", sql`UPDATE accounts SET upstream_account_id = ${upstreamAccountId} WHERE project_id = ${projectId} RETURNING ${changedAccount(sql)}`),

  /** The credentials no longer reach the account: its last copy stays readable. */
  markDisconnected: (projectId: string) =>
    invalidating(sql, "a", sql`UPDATE accounts SET status = 'disconnected' WHERE project_id = ${projectId} RETURNING ${changedAccount(sql)}`),

  /** A sync's copy became the account's (warehouse/SwapCopy.ts): how far the warehouse reaches, and the account's state. */
  markSynced: (projectId: string, synced: SyncedCopy) =>
    invalidating(sql, "a", sql`
      UPDATE accounts SET
        last_synced_at = now(),
        last_synced_day = ${synced.windowEnd},
        first_synced_day = greatest(
          least(coalesce(first_synced_day, ${synced.windowStart}::date), ${synced.windowStart}::date),
          ${synced.windowEnd}::date - ${synced.retainedDays - 1}::int),
        status = ${synced.status},
        read_only = ${synced.readOnly}
      WHERE project_id = ${projectId}
      RETURNING ${changedAccount(sql)}`)
})

/** What an import writes of an upstream account. */
export interface UpstreamAccountFacts {
  readonly upstreamAccountId: string
  readonly name: string
  readonly currency: string
  readonly timeZone: string
  readonly readOnly: boolean
}

/** What a sync's swap writes on its account. */
export interface SyncedCopy {
  readonly windowStart: string
  readonly windowEnd: string
  /** The days the warehouse keeps: the first synced day is never older. */
  readonly retainedDays: number
  readonly status: "active" | "paused"
  readonly readOnly: boolean
}

export class Accounts extends Effect.Service<Accounts>()("acs/Accounts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cached = (yield* Invalidation).cache<AccountRecord>("a")

    const find = (projectId: string) =>
      sql`/* prepared */ SELECT ${sql.unsafe(accountColumns)} FROM accounts WHERE project_id = ${projectId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAccounts),
        Effect.map((rows): Option.Option<AccountRecord> => Option.fromNullable(rows[0])),
        Effect.withSpan("Accounts.find", HOT_SPAN)
      )

    /**
     * The account as the access check reads it on every request: from a short-lived cache that every
     * instance drops on the account's change notification (db/Invalidation.ts). Writers read `find`.
     */
    const findForAccess = (projectId: string) => cached.get(projectId, find(projectId))

    const listInOrg = (orgId: string) =>
      sql`SELECT ${sql.unsafe(accountColumns)} FROM accounts WHERE org_id = ${orgId} ORDER BY name, project_id`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAccounts),
        Effect.withSpan("Accounts.listInOrg")
      )

    const existing = (orgId: string, projectIds: ReadonlyArray<string>) =>
      projectIds.length === 0
        ? Effect.succeed<ReadonlyArray<string>>([])
        : sql`SELECT project_id FROM accounts WHERE org_id = ${orgId} AND ${
          sql.in("project_id", projectIds)
        }`.pipe(Effect.orDie, Effect.flatMap(decodeProjectIds), Effect.map((rows) => rows.map((row) => row.projectId)))

    /** The org's accounts the caller reaches: all of them, or the subset its key is bound to (listAccounts). */
    const listReachable = (grant: Granted<"listAccounts" | "getSyncQueue">) =>
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
  invalidating(sql, "a", sql`UPDATE accounts SET read_only = true WHERE project_id = ${projectId} RETURNING ${changedAccount(sql)}`).pipe(
    Effect.asVoid,
    Effect.orDie
  )
