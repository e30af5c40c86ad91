/** Org settings: the `platformAutoApply` kill switch (SPEC 2.5), default on. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

interface SettingsRow {
  readonly platformAutoApply: boolean
  readonly settingsUpdatedAt: string | null
  readonly settingsUpdatedBy: string | null
}

const toSettings = (row: SettingsRow) => ({
  platformAutoApply: row.platformAutoApply,
  updatedAt: row.settingsUpdatedAt === null ? null : new Date(row.settingsUpdatedAt).toISOString(),
  updatedBy: row.settingsUpdatedBy
})

export class OrgSettings extends Effect.Service<OrgSettings>()("acs/OrgSettings", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const read = (orgId: string) =>
      sql<SettingsRow>`SELECT platform_auto_apply, settings_updated_at, settings_updated_by FROM orgs WHERE org_id = ${orgId}`
        .pipe(Effect.map((rows) => toSettings(rows[0]!)), Effect.orDie)

    const get = (grant: Granted<"getSettings">) => read(grant.orgId).pipe(Effect.withSpan("Settings.get"))

    const update = (grant: Granted<"updateSettings">, change: { readonly platformAutoApply: boolean }) =>
      sql<SettingsRow>`
        UPDATE orgs SET platform_auto_apply = ${change.platformAutoApply}, settings_updated_at = now(),
          settings_updated_by = ${`${grant.principal.kind}:${grant.principal.id}`}
        WHERE org_id = ${grant.orgId}
        RETURNING platform_auto_apply, settings_updated_at, settings_updated_by`.pipe(
        Effect.map((rows) => toSettings(rows[0]!)),
        Effect.orDie,
        Effect.tap((settings) => Effect.logInfo("settings changed").pipe(Effect.annotateLogs(settings))),
        Effect.withSpan("Settings.update")
      )

    return { read, get, update } as const
  })
}) {}
