/** The spend-ranked account reads and the sync endpoints over REST. */
import { Api } from "@acs/domain/Api"
import { NotFound } from "@acs/domain/Errors"
import { clampLimit, DEFAULT_DAYS } from "@acs/domain/Warehouse"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { Access } from "../auth/Access.ts"
import { freshnessFor, Reads } from "../warehouse/Reads.ts"
import type { SyncRow } from "../warehouse/SyncRuns.ts"
import { Syncs } from "../warehouse/Syncs.ts"
import { windowEndingYesterday } from "../warehouse/Window.ts"

const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString())

export const toSync = (row: SyncRow) => ({
  syncId: row.syncId,
  status: row.status,
  trigger: row.trigger,
  startedAt: new Date(row.startedAt).toISOString(),
  finishedAt: iso(row.finishedAt),
  windowStart: row.windowStart,
  windowEnd: row.windowEnd,
  rowsWritten: Number(row.rowsWritten),
  progress: row.progress,
  error: row.error
})

interface Params {
  readonly days?: number | undefined
  readonly limit?: number | undefined
  readonly campaignId?: string | undefined
  readonly adGroupId?: string | undefined
}

const query = (params: Params) => ({
  days: params.days ?? DEFAULT_DAYS,
  limit: clampLimit(params.limit),
  campaignId: params.campaignId,
  adGroupId: params.adGroupId
})

export const WarehouseHandlers = HttpApiBuilder.group(Api, "warehouse", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const reads = yield* Reads
    const syncs = yield* Syncs
    return handlers
      .handle("listCampaigns", ({ path, urlParams }) =>
        access.check("listCampaigns", path.projectId).pipe(
          Effect.flatMap((grant) => reads.campaigns(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ campaigns: rows, ...rest }))
        ))
      .handle("listAdGroups", ({ path, urlParams }) =>
        access.check("listAdGroups", path.projectId).pipe(
          Effect.flatMap((grant) => reads.adGroups(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ adGroups: rows, ...rest }))
        ))
      .handle("listKeywords", ({ path, urlParams }) =>
        access.check("listKeywords", path.projectId).pipe(
          Effect.flatMap((grant) => reads.keywords(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ keywords: rows, ...rest }))
        ))
      .handle("listSearchTerms", ({ path, urlParams }) =>
        access.check("listSearchTerms", path.projectId).pipe(
          Effect.flatMap((grant) => reads.searchTerms(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ searchTerms: rows, ...rest }))
        ))
      .handle("listAds", ({ path, urlParams }) =>
        access.check("listAds", path.projectId).pipe(
          Effect.flatMap((grant) => reads.ads(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ ads: rows, ...rest }))
        ))
      .handle("listNegativeKeywords", ({ path, urlParams }) =>
        access.check("listNegativeKeywords", path.projectId).pipe(
          Effect.flatMap((grant) => reads.negativeKeywords(grant.account, query(urlParams))),
          Effect.map(({ rows, ...rest }) => ({ negativeKeywords: rows, ...rest }))
        ))
      .handle("listSyncs", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("listSyncs", path.projectId)
          const { rows, total } = yield* syncs.history(grant.account.projectId, clampLimit(urlParams.limit))
          const now = yield* Clock.currentTimeMillis
          return {
            syncs: rows.map(toSync),
            total,
            truncated: rows.length < total,
            dataFreshness: freshnessFor(grant.account, windowEndingYesterday(now, grant.account.timeZone, DEFAULT_DAYS), now)
          }
        }))
      .handle("getSync", ({ path }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("getSync", path.projectId)
          const row = yield* syncs.find(grant.account.projectId, path.syncId)
          if (row === undefined) return yield* new NotFound({ message: `no sync ${path.syncId} in this account` })
          return toSync(row)
        }))
      .handle("startSync", ({ path }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("startSync", path.projectId)
          const { sync } = yield* syncs.begin(grant.account, "manual")
          yield* HttpApp.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setHeader(
              response,
              "location",
              `/api/v1/accounts/${grant.account.projectId}/syncs/${sync.syncId}`
            ))
          )
          return toSync(sync)
        }))
  }))
