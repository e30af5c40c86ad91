/** Org settings: the `platformAutoApply` kill switch (SPEC 2.5) and the four-eyes rule (API.md "Four eyes"). */
import { Schema } from "effect"

export const Settings = Schema.Struct({
  platformAutoApply: Schema.Boolean.annotations({
    description: "The kill switch: when false nothing auto-applies; every proposal queues for review."
  }),
  requireSecondApprover: Schema.Boolean.annotations({
    description: "Four eyes: whoever proposed an action (the same key, the same person, or a key that person " +
      "created) cannot approve it. On by default; a one-person org may turn it off."
  }),
  approvalTtlHours: Schema.Int.annotations({
    description: "Hours an action queued for a human waits before it expires (status `expired`); default 72"
  }),
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Settings" })
export type Settings = typeof Settings.Type

/** The settings to change; those left out keep their value. */
export const UpdateSettingsRequest = Schema.Struct({
  platformAutoApply: Schema.optional(Schema.Boolean),
  requireSecondApprover: Schema.optional(Schema.Boolean),
  approvalTtlHours: Schema.optional(Schema.Int.pipe(Schema.between(1, 8760, {
    message: () => "approvalTtlHours must be an integer from 1 to 8760 (a year)"
  })))
}).annotations({ identifier: "UpdateSettingsRequest" })
export type UpdateSettingsRequest = typeof UpdateSettingsRequest.Type
