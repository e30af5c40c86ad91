/** The operator's brief: goals and constraints in prose, shown to agents (`GET/PUT /accounts/{projectId}/brief`). */
import { Schema } from "effect"

export const MAX_BRIEF_LENGTH = 20_000

export const Brief = Schema.Struct({
  text: Schema.String,
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String).annotations({ description: "`key:<keyId>` or `person:<personId>`" })
}).annotations({ identifier: "Brief" })
export type Brief = typeof Brief.Type

export const UpdateBriefRequest = Schema.Struct({
  text: Schema.String.pipe(Schema.maxLength(MAX_BRIEF_LENGTH, {
    message: () => `text must be at most ${MAX_BRIEF_LENGTH} characters`
  }))
}).annotations({ identifier: "UpdateBriefRequest" })
