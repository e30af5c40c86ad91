/**
 * Full-row reports (`POST /accounts/{projectId}/reports`): one page of the upstream's own report, with its
 * paging, through the org's connection. Requests are checked here first, so a bad one is 400 naming the field
 * rather than the platform's refusal.
 */
import { InvalidRequest } from "@acs/domain/Errors"
import type { Report, ReportRequest } from "@acs/domain/Research"
import { clampLimit } from "@acs/domain/Warehouse"
import type { Metrics, ReportRow, UpstreamClient } from "@acs/upstream/Upstream"
import { Clock, Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Connections } from "../accounts/Connections.ts"
import type { Granted } from "../auth/Access.ts"
import { metricsOf } from "../warehouse/Reads.ts"
import { addDays, dateIn, daysBetween, MAX_DAYS } from "../warehouse/Window.ts"

/** The largest page the platform serves: used to page through a report for its grand totals. */
const UPSTREAM_PAGE = 1000

const zero: Metrics = { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }

const add = (a: Metrics, b: Metrics): Metrics => ({
  impressions: a.impressions + b.impressions,
  taps: a.taps + b.taps,
  installs: a.installs + b.installs,
  spendMicros: a.spendMicros + b.spendMicros
})

const invalid = (message: string) => Effect.fail(new InvalidRequest({ message }))

/** The platform's rules for reports, in the account's calendar. */
const checkRequest = (request: ReportRequest, account: AccountRecord, now: number) => {
  const today = dateIn(now, account.timeZone)
  if (request.level !== "campaigns" && request.campaignId === undefined) {
    return invalid(`campaignId: required for level ${request.level} (reports below campaigns are per campaign)`)
  }
  if (request.startDate > request.endDate) return invalid("startDate: must not be after endDate")
  if (request.startDate > today) return invalid(`startDate: must not be in the future (today is ${today} in ${account.timeZone})`)
  if (request.granularity === "DAILY") {
    if (daysBetween(request.startDate, request.endDate) > MAX_DAYS) return invalid(`endDate: DAILY reports span at most ${MAX_DAYS} days`)
    if (request.startDate < addDays(today, -MAX_DAYS)) return invalid(`startDate: DAILY reports start within the last ${MAX_DAYS} days`)
  }
  return Effect.void
}

const toRow = (row: ReportRow) => ({
  campaignId: row.campaignId,
  adGroupId: row.adGroupId,
  keywordId: row.keywordId,
  searchTerm: row.searchTerm,
  matchType: row.matchType,
  total: metricsOf(row.total),
  periods: row.periods
})

export class Reports extends Effect.Service<Reports>()("acs/Reports", {
  effect: Effect.gen(function*() {
    const connections = yield* Connections

    /**
     * Totals over every row of the report. The page asked for holds them all in the common case; otherwise the
     * report is read again in MONTHLY periods (the fewest per row, the same rows) a full page at a time.
     */
    const grandTotals = (client: UpstreamClient, accountId: string, request: ReportRequest, first: { rows: ReadonlyArray<ReportRow>; offset: number; totalResults: number }) =>
      Effect.gen(function*() {
        if (first.offset === 0 && first.rows.length >= first.totalResults) return first.rows.map((r) => r.total).reduce(add, zero)
        let totals = zero
        for (let offset = 0; offset < first.totalResults; offset += UPSTREAM_PAGE) {
          const page = yield* client.report(accountId, {
            level: request.level,
            ...(request.campaignId === undefined ? {} : { campaignId: request.campaignId }),
            startDate: request.startDate,
            endDate: request.endDate,
            granularity: "MONTHLY",
            offset,
            limit: UPSTREAM_PAGE
          })
          totals = page.rows.map((r) => r.total).reduce(add, totals)
          if (page.rows.length === 0) break
        }
        return totals
      })

    const run = (grant: Granted<"runReport">, request: ReportRequest) =>
      Effect.gen(function*() {
        const account = grant.account
        yield* checkRequest(request, account, yield* Clock.currentTimeMillis)
        const client = yield* connections.clientFor(grant.orgId)
        const offset = request.offset ?? 0
        const limit = clampLimit(request.limit)
        const page = yield* client.report(account.upstreamAccountId, {
          level: request.level,
          ...(request.campaignId === undefined ? {} : { campaignId: request.campaignId }),
          startDate: request.startDate,
          endDate: request.endDate,
          granularity: request.granularity,
          offset,
          limit
        })
        const report: Report = {
          rows: page.rows.map(toRow),
          grandTotals: metricsOf(yield* grandTotals(client, account.upstreamAccountId, request, page)),
          pagination: { offset: page.offset, limit: page.limit, totalResults: page.totalResults }
        }
        return report
      }).pipe(Effect.withSpan("Reports.run"))

    return { run } as const
  })
}) {}
