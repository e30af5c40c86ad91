/**
 * An account as acs holds it: the API's `Account` with its org and how far the warehouse reaches; the `accounts`
 * row, declared once (its owner, Accounts.ts, selects and decodes it). Declared on its own so that `Accounts`
 * (which reads it) and `Granted` (which carries it) both name it without naming each other.
 */
import { Account } from "@acs/domain/Accounts"
import { Schema } from "effect"

export const AccountRow = Schema.Struct({
  ...Account.fields,
  orgId: Schema.String,
  lastSyncedAt: Schema.NullOr(Schema.String),
  /** The first and last calendar days the warehouse holds metrics for. */
  firstSyncedDay: Schema.NullOr(Schema.String),
  lastSyncedDay: Schema.NullOr(Schema.String)
})

export type AccountRecord = typeof AccountRow.Type
