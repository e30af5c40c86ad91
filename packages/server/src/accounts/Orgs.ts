/**
 * The `orgs` table's owner (docs/decisions/architecture.md "One owner per table"): an org's row, created by the
 * first start (auth/Bootstrap.ts), and its settings (settings/Settings.ts), which read and change them here.
 */
import type { SqlClient } from "@effect/sql"
import { FourEyesRule } from "@acs/domain/FourEyes"
import { GuardSettings } from "@acs/domain/Guard"
import { Schema } from "effect"
import { invalidateKey, invalidating } from "../db/Invalidation.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"

/** An org's settings as its row holds them. */
export const SettingsRow = Schema.Struct({
  platformAutoApply: Schema.Boolean,
  fourEyes: FourEyesRule,
  approvalTtlHours: Schema.Number,
  /** Null while nobody set them: the defaults. */
  guard: Schema.NullOr(GuardSettings),
  settingsUpdatedAt: Schema.NullOr(Schema.String),
  settingsUpdatedBy: Schema.NullOr(Schema.String)
})
export type SettingsRow = typeof SettingsRow.Type

const settingsColumns = columnsOf(SettingsRow)
export const decodeSettings = decodeRows(SettingsRow)

/** A change of settings: a null keeps the current value. */
export interface SettingsChange {
  readonly platformAutoApply: boolean | null
  readonly fourEyes: FourEyesRule | null
  readonly approvalTtlHours: number | null
  readonly guard: GuardSettings | null
  /** `kind:id` of the principal who changed them. */
  readonly updatedBy: string
}

export const orgStatements = (sql: SqlClient.SqlClient) => ({
  create: (orgId: string, name: string) => sql`INSERT INTO orgs (org_id, name) VALUES (${orgId}, ${name})`,

  /** Prepared: every proposal and apply reads the settings when their cache has dropped them. */
  settings: (orgId: string) => sql`/* prepared */ SELECT ${sql.unsafe(settingsColumns)} FROM orgs WHERE org_id = ${orgId}`,

  updateSettings: (orgId: string, change: SettingsChange) =>
    invalidating(sql, "o", sql`
      UPDATE orgs SET platform_auto_apply = coalesce(${change.platformAutoApply}::boolean, platform_auto_apply),
        four_eyes = coalesce(${change.fourEyes}::text, four_eyes),
        approval_ttl_hours = coalesce(${change.approvalTtlHours}::int, approval_ttl_hours),
        guard = coalesce(${change.guard === null ? null : JSON.stringify(change.guard)}::jsonb, guard),
        settings_updated_at = now(), settings_updated_by = ${change.updatedBy}
      WHERE org_id = ${orgId}
      RETURNING ${sql.unsafe(settingsColumns)}, ${invalidateKey(sql, sql`org_id`)}`)
})
