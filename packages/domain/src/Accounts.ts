/** Accounts of a workspace and how fresh their warehouse copy is (docs/contract.md 2.2, 2.3). */
import { Schema } from "effect"

export const AccountStatus = Schema.Literal("active", "paused", "disconnected")

export const DataFreshness = Schema.Struct({
  lastSyncAt: Schema.NullOr(Schema.String),
  ageHours: Schema.NullOr(Schema.Number),
  coverage: Schema.String,
  warning: Schema.optional(Schema.String)
}).annotations({ identifier: "DataFreshness" })
export type DataFreshness = typeof DataFreshness.Type

export const Account = Schema.Struct({
  projectId: Schema.String,
  name: Schema.String,
  upstreamAccountId: Schema.String,
  status: AccountStatus,
  currency: Schema.String,
  timeZone: Schema.String,
  readOnly: Schema.Boolean
}).annotations({ identifier: "Account" })
export type Account = typeof Account.Type

export const AccountList = Schema.Struct({
  accounts: Schema.Array(Account),
  total: Schema.Int,
  truncated: Schema.Boolean
}).annotations({ identifier: "AccountList" })

export const AccountWithFreshness = Schema.Struct({
  account: Account,
  dataFreshness: DataFreshness
}).annotations({ identifier: "AccountWithFreshness" })
