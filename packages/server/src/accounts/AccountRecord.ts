/**
 * An account as acs holds it: the API's `Account` with its org and how far the warehouse reaches. Declared on its
 * own so that `Accounts` (which reads it) and `Granted` (which carries it) both name it without naming each other.
 */
import type { Account } from "@acs/domain/Accounts"

export interface AccountRecord extends Account {
  readonly orgId: string
  readonly lastSyncedAt: string | null
  /** The first and last calendar days the warehouse holds metrics for. */
  readonly firstSyncedDay: string | null
  readonly lastSyncedDay: string | null
}
