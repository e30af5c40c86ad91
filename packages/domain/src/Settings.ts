/**
 * Org settings: the `platformAutoApply` kill switch (docs/contract.md 2.5), who may approve (docs/contract.md 5.1),
 * and the guard's verdicts (docs/contract.md 3.4).
 */
import { Schema } from "effect"
import { FourEyesRule } from "./FourEyes.ts"
import { GuardSettings } from "./Guard.ts"

export const Settings = Schema.Struct({
  platformAutoApply: Schema.Boolean.annotations({
    description: "The kill switch: when false nothing auto-applies; every proposal queues for review."
  }),
  fourEyes: FourEyesRule,
  requireSecondApprover: Schema.Boolean.annotations({
    description: "Deprecated, read-only in meaning: `fourEyes` is not \"off\"."
  }),
  approvalTtlHours: Schema.Int.annotations({
    description: "Hours an action queued for a human waits before it expires (status `expired`); default 72"
  }),
  guard: GuardSettings,
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Settings" })
export type Settings = typeof Settings.Type

/** The settings to change; those left out keep their value. */
export const UpdateSettingsRequest = Schema.Struct({
  platformAutoApply: Schema.optional(Schema.Boolean),
  fourEyes: Schema.optional(FourEyesRule),
  requireSecondApprover: Schema.optional(Schema.Boolean.annotations({
    description: "Deprecated: `true` sets `fourEyes` to \"distinct_person\", `false` to \"off\"; send `fourEyes` instead " +
      "(both at once must agree)"
  })),
  approvalTtlHours: Schema.optional(Schema.Int.pipe(Schema.between(1, 8760, {
    message: () => "approvalTtlHours must be an integer from 1 to 8760 (a year)"
  }))),
  guard: Schema.optional(GuardSettings.annotations({ description: "The guard's settings, whole" }))
}).annotations({ identifier: "UpdateSettingsRequest" })
export type UpdateSettingsRequest = typeof UpdateSettingsRequest.Type
