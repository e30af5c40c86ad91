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
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Settings" })
export type Settings = typeof Settings.Type

/** The settings to change; those left out keep their value. */
export const UpdateSettingsRequest = Schema.Struct({
  platformAutoApply: Schema.optional(Schema.Boolean),
  requireSecondApprover: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "UpdateSettingsRequest" })
export type UpdateSettingsRequest = typeof UpdateSettingsRequest.Type
