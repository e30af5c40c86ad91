/** People of a workspace as admins manage them (docs/contract.md 5.4: add, role, disable). */
import { Schema } from "effect"
import { RoleSchema } from "./Principal.ts"
import { SlackUserId } from "./Slack.ts"

export const Person = Schema.Struct({
  personId: Schema.String,
  email: Schema.String,
  name: Schema.String,
  role: RoleSchema,
  disabledAt: Schema.NullOr(Schema.String).annotations({ description: "When an admin disabled the person; null while they may sign in" }),
  slackUserId: Schema.NullOr(Schema.String).annotations({ description: "Their Slack user: Slack approvals act as this person" }),
  createdAt: Schema.String
}).annotations({ identifier: "Person" })
export type Person = typeof Person.Type

export const PersonList = Schema.Struct({
  people: Schema.Array(Person),
  total: Schema.Int,
  truncated: Schema.Boolean
}).annotations({ identifier: "PersonList" })

/**
 * A password chosen for someone, at most 1024 characters. The rule (at least 12 characters, not a common
 * password) is the server's, applied wherever a password is set and answered 422 `validation_failed` naming
 * the field, not a decode failure.
 */
export const NewPassword = Schema.String.pipe(Schema.maxLength(1024)).annotations({
  description: "At least 12 characters and not a common password (422 `validation_failed` otherwise); at most 1024"
})

export const CreatePersonRequest = Schema.Struct({
  email: Schema.Trim.pipe(
    Schema.maxLength(320),
    Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "email must be an email address" })
  ),
  name: Schema.Trim.pipe(Schema.minLength(1, { message: () => "name must not be empty" }), Schema.maxLength(200)),
  role: RoleSchema,
  password: Schema.optional(NewPassword.annotations({
    description: "Left out: acs generates one and answers it once. Given: at least 12 characters and not a common password " +
      "(422 `validation_failed` otherwise); at most 1024"
  }))
}).annotations({ identifier: "CreatePersonRequest" })

export const CreatedPerson = Schema.Struct({
  person: Person,
  password: Schema.optional(Schema.String.annotations({ description: "The generated password, shown once; absent when one was given" }))
}).annotations({ identifier: "CreatedPerson" })

/** What to change; what is left out keeps its value. Disabling ends every session of the person at once. */
export const UpdatePersonRequest = Schema.Struct({
  role: Schema.optional(RoleSchema),
  disabled: Schema.optional(Schema.Boolean),
  slackUserId: Schema.optional(Schema.NullOr(SlackUserId).annotations({ description: "Their Slack user id (unique in the workspace); null unlinks" }))
}).annotations({ identifier: "UpdatePersonRequest" })
