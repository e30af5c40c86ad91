/**
 * Org settings: the `platformAutoApply` kill switch (SPEC 2.5), default on, four eyes, default on, and how
 * long a queued action waits for a human before it expires (`approvalTtlHours`, default 72).
 */
import type { Settings, UpdateSettingsRequest } from "@acs/domain/Settings"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

interface SettingsRow {
  readonly platformAutoApply: boolean
  readonly requireSecondApprover: boolean
  readonly approvalTtlHours: number
  readonly settingsUpdatedAt: string | null
  readonly settingsUpdatedBy: string | null
}

const toSettings = (row: SettingsRow): Settings => ({
  platformAutoApply: row.platformAutoApply,
  requireSecondApprover: row.requireSecondApprover,
  approvalTtlHours: row.approvalTtlHours,
  updatedAt: row.settingsUpdatedAt === null ? null : new Date(row.settingsUpdatedAt).toISOString(),
  updatedBy: row.settingsUpdatedBy
})

export class OrgSettings extends Effect.Service<OrgSettings>()("acs/OrgSettings", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const read = (orgId: string) =>
      sql<SettingsRow>`
        SELECT platform_auto_apply, require_second_approver, approval_ttl_hours, settings_updated_at, settings_updated_by
        FROM orgs WHERE org_id = ${orgId}`.pipe(Effect.map((rows) => toSettings(rows[0]!)), Effect.orDie)

    const get = (grant: Granted<"getSettings">) => read(grant.orgId).pipe(Effect.withSpan("Settings.get"))

    const update = (grant: Granted<"updateSettings">, change: UpdateSettingsRequest) =>
      sql<SettingsRow>`
        UPDATE orgs SET platform_auto_apply = coalesce(${change.platformAutoApply ?? null}::boolean, platform_auto_apply),
          require_second_approver = coalesce(${change.requireSecondApprover ?? null}::boolean, require_second_approver),
          approval_ttl_hours = coalesce(${change.approvalTtlHours ?? null}::int, approval_ttl_hours),
          settings_updated_at = now(), settings_updated_by = ${`${grant.principal.kind}:${grant.principal.id}`}
        WHERE org_id = ${grant.orgId}
        RETURNING platform_auto_apply, require_second_approver, approval_ttl_hours, settings_updated_at, settings_updated_by`.pipe(
        Effect.map((rows) => toSettings(rows[0]!)),
        Effect.orDie,
        // Recorded: who switched the kill switch or four eyes, and to what.
        Effect.tap((settings) => Effect.logInfo("settings changed").pipe(Effect.annotateLogs(settings))),
        Effect.withSpan("Settings.update")
      )

    return { read, get, update } as const
  })
}) {}
