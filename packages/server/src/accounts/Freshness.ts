/** docs/contract.md 2.3 dataFreshness: when the warehouse copy was last synced and how much of a window it covers. */
import type { DataFreshness } from "@acs/domain/Accounts"

const STALE_AFTER_HOURS = 24

export const dataFreshness = (
  lastSyncAt: string | null,
  coveredDays: number,
  requestedDays: number,
  now: number
): DataFreshness => {
  const covered = Math.max(0, Math.min(coveredDays, requestedDays))
  const coverage = `${covered} of ${requestedDays} requested days`
  if (lastSyncAt === null) {
    return { lastSyncAt: null, ageHours: null, coverage, warning: "this account has never been synced: there is no data yet" }
  }
  const ageHours = Math.round(((now - Date.parse(lastSyncAt)) / 3_600_000) * 10) / 10
  const warnings = [
    ...(ageHours > STALE_AFTER_HOURS ? [`data is ${ageHours} hours old (last sync ${new Date(lastSyncAt).toISOString()})`] : []),
    ...(covered < requestedDays ? [`history covers only ${coverage}`] : [])
  ]
  return {
    lastSyncAt: new Date(lastSyncAt).toISOString(),
    ageHours,
    coverage,
    ...(warnings.length > 0 ? { warning: warnings.join("; ") } : {})
  }
}
