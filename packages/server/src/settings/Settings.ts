/**
 * Org settings: the `platformAutoApply` kill switch (docs/contract.md 2.5), default on, who may approve (`fourEyes`,
 * default `distinct_actor`), and how long a queued action waits for a human before it expires
 * (`approvalTtlHours`, default 72), and how the guard judges applied changes (`guard`, docs/contract.md 3.4).
 */
import { InvalidRequest } from "@acs/domain/Errors"
import { fromRequireSecondApprover } from "@acs/domain/FourEyes"
import { DEFAULT_GUARD } from "@acs/domain/Guard"
import type { Settings, UpdateSettingsRequest } from "@acs/domain/Settings"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Granted } from "../auth/Access.ts"
import { decodeSettings, orgStatements, type SettingsRow } from "../accounts/Orgs.ts"
import { Invalidation } from "../db/Invalidation.ts"


const toSettings = (row: SettingsRow): Settings => ({
  platformAutoApply: row.platformAutoApply,
  fourEyes: row.fourEyes,
  requireSecondApprover: row.fourEyes !== "off",
  approvalTtlHours: row.approvalTtlHours,
  guard: row.guard ?? DEFAULT_GUARD,
  updatedAt: row.settingsUpdatedAt === null ? null : new Date(row.settingsUpdatedAt).toISOString(),
  updatedBy: row.settingsUpdatedBy
})

export class OrgSettings extends Effect.Service<OrgSettings>()("acs/OrgSettings", {
  effect: Effect.gen(function*() {
    const orgs = orgStatements(yield* SqlClient.SqlClient)
    // Every proposal and apply reads the kill switch: cached, and dropped on every instance when the org's row
    // changes (db/Invalidation.ts, migration 0017), so a switch turned off holds for the next request anywhere.
    const cached = (yield* Invalidation).cache<Settings>("o")

    const load = (orgId: string) =>
      orgs.settings(orgId).pipe(
        Effect.orDie,
        Effect.flatMap(decodeSettings),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toSettings))
      )

    const read = (orgId: string) =>
      Effect.flatMap(cached.get(orgId, load(orgId)), Option.match({
        onNone: () => Effect.dieMessage(`no org ${orgId}`),
        onSome: Effect.succeed
      }))

    const get = (grant: Granted<"getSettings">) => read(grant.orgId).pipe(Effect.withSpan("Settings.get"))

    /** The rule asked for: `fourEyes`, or the deprecated boolean's meaning; both must agree. */
    const fourEyesOf = (change: UpdateSettingsRequest) => {
      const legacy = change.requireSecondApprover === undefined ? undefined : fromRequireSecondApprover(change.requireSecondApprover)
      if (change.fourEyes !== undefined && legacy !== undefined && (change.fourEyes !== "off") !== change.requireSecondApprover) {
        return Effect.fail(new InvalidRequest({
          message: `requireSecondApprover: ${change.requireSecondApprover} contradicts fourEyes: "${change.fourEyes}"; send fourEyes alone`
        }))
      }
      return Effect.succeed(change.fourEyes ?? legacy ?? null)
    }

    const update = (grant: Granted<"updateSettings">, change: UpdateSettingsRequest) =>
      Effect.flatMap(fourEyesOf(change), (fourEyes) =>
        orgs.updateSettings(grant.orgId, {
          platformAutoApply: change.platformAutoApply ?? null,
          fourEyes,
          approvalTtlHours: change.approvalTtlHours ?? null,
          guard: change.guard ?? null,
          updatedBy: `${grant.principal.kind}:${grant.principal.id}`
        }).pipe(
          Effect.orDie,
          Effect.flatMap(decodeSettings),
          Effect.map((rows) => toSettings(rows[0]!))
        )).pipe(
        // This instance need not wait for its own notification.
        Effect.ensuring(Effect.sync(() => cached.invalidate(grant.orgId))),
        // Recorded: who switched the kill switch or four eyes, and to what.
        Effect.tap((settings) => Effect.logInfo("settings changed").pipe(Effect.annotateLogs(settings))),
        Effect.withSpan("Settings.update")
      )

    return { read, get, update } as const
  }),
  dependencies: [Invalidation.Default]
}) {}
