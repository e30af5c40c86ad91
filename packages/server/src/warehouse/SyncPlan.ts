/** The window a sync (re)reads: the first sync's days, then the restated recent days, within the retained 90. */
import { Config } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { addDays, dateIn, MAX_DAYS } from "./Window.ts"

/** Recent days re-read on every sync because the platform restates them. */
export const RESTATED_DAYS = 3
/** Daily rows older than this many days before the last synced day are dropped. */
export const RETAINED_DAYS = 120
export interface SyncPlan {
  readonly windowStart: string
  readonly windowEnd: string
}

/**
 * The window to (re)read: `initialDays` (at most 90) on the first sync, then from a few days before the
 * last synced day, never reaching back further than 90 days.
 */
export const planWindow = (account: AccountRecord, now: number, initialDays = MAX_DAYS): SyncPlan => {
  const windowEnd = addDays(dateIn(now, account.timeZone), -1)
  const earliest = addDays(windowEnd, -(MAX_DAYS - 1))
  const resume = account.lastSyncedDay === null
    ? addDays(windowEnd, -(Math.min(MAX_DAYS, Math.max(1, initialDays)) - 1))
    : addDays(account.lastSyncedDay, -(RESTATED_DAYS - 1))
  return { windowStart: resume > earliest ? resume : earliest, windowEnd }
}

/**
 * The first day a report may ask for at `now`: the platform refuses a DAILY report starting more than 90 days before
 * its today in the account's zone, and that today moves on at midnight, so a sync planned before the account's
 * midnight and reporting after it asks from the day after its window's first (a day the platform no longer gives).
 */
export const reportStart = (plan: SyncPlan, now: number, timeZone: string): string => {
  const earliest = addDays(dateIn(now, timeZone), -MAX_DAYS)
  return plan.windowStart > earliest ? plan.windowStart : earliest
}

/** How many days the first sync of an account reads (1–90); later syncs keep the history growing. */
export const InitialDays = Config.integer("SYNC_INITIAL_DAYS").pipe(Config.withDefault(MAX_DAYS))
