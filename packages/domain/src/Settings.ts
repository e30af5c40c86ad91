/** Org settings: today the `platformAutoApply` kill switch (SPEC 2.5). */
import { Schema } from "effect"

export const Settings = Schema.Struct({
  platformAutoApply: Schema.Boolean.annotations({
    description: "The kill switch: when false nothing auto-applies; every proposal queues for review."
  }),
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Settings" })

export const UpdateSettingsRequest = Schema.Struct({
  platformAutoApply: Schema.Boolean
}).annotations({ identifier: "UpdateSettingsRequest" })
