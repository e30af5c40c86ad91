/**
 * The rule every password a person is given must pass, wherever it is set (`POST /auth/password`, `POST /people`,
 * `acs people add`, ADMIN_PASSWORD at first start): at least 12 characters, at most 1024, and not one of the
 * ~49,000 most common passwords (the list @zxcvbn-ts/language-common ships, compared without case). People
 * stores only an `AcceptedPassword`, which only this rule (or the generator) makes: a new way of setting a
 * password that forgets the rule does not compile.
 */
import { ValidationFailed } from "@acs/domain/Errors"
import { dictionary } from "@zxcvbn-ts/language-common"
import { Brand, Effect } from "effect"
import { generatePassword } from "./Secrets.ts"

export const MIN_PASSWORD_CHARACTERS = 12
export const MAX_PASSWORD_CHARACTERS = 1024

export type AcceptedPassword = string & Brand.Brand<"AcceptedPassword">

const accepted = Brand.nominal<AcceptedPassword>()

let common: ReadonlySet<string> | undefined

/** The list is lowercase; built on first use, not at import (the CLI's other commands never need it). */
const commonPasswords = (): ReadonlySet<string> => (common ??= new Set(dictionary["passwords-common"]))

/** Why `password` is refused, as a phrase that completes "the password …"; undefined when it passes. */
export const passwordProblem = (password: string): string | undefined => {
  // Characters as a person counts them: an emoji or an accented letter is one, not two UTF-16 units.
  const characters = [...password].length
  if (characters < MIN_PASSWORD_CHARACTERS) return `must be at least ${MIN_PASSWORD_CHARACTERS} characters`
  if (characters > MAX_PASSWORD_CHARACTERS) return `must be at most ${MAX_PASSWORD_CHARACTERS} characters`
  if (commonPasswords().has(password.toLowerCase())) return "is one of the most common passwords; choose another"
  return undefined
}

/** `password` as People stores it, or 422 `validation_failed` naming `field` and the reason. */
export const acceptPassword = (field: string, password: string): Effect.Effect<AcceptedPassword, ValidationFailed> => {
  const problem = passwordProblem(password)
  return problem === undefined
    ? Effect.succeed(accepted(password))
    : Effect.fail(new ValidationFailed({ message: `${field}: the password ${problem}`, validation_errors: [`${field}: ${problem}`] }))
}

/** A random password (24 characters of base64url), accepted as it is. */
export const generatedPassword = (): AcceptedPassword => accepted(generatePassword())
