/**
 * Research queries (`POST /research/*`): app and geo search on the platform through the org's connection,
 * and keyword ideas mined from an account's search terms in the warehouse.
 */
import { InvalidRequest } from "@acs/domain/Errors"
import type { AppSearchRequest, GeoSearchRequest, KeywordIdeasRequest } from "@acs/domain/Research"
import { clampLimit, DEFAULT_DAYS } from "@acs/domain/Warehouse"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { Connections } from "../accounts/Connections.ts"
import type { Granted } from "../auth/Access.ts"
import { decodeRows } from "../db/Rows.ts"
import { freshnessFor, metricsOf } from "../warehouse/Reads.ts"
import { windowEndingYesterday } from "../warehouse/Window.ts"

/** Words of the seeds, lowercased; one-letter words would match nearly every term. */
export const seedTokens = (seeds: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(seeds.flatMap((seed) => seed.toLowerCase().split(/[^\p{L}\p{N}]+/u)).filter((word) => word.length >= 2))]

const likePattern = (token: string) => `%${token.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

const num = (value: string | number | null): number => (value === null ? 0 : Number(value))

/** A keyword idea: the term, how many ad groups saw it, its sums (numeric as text) and the `total` of ideas. */
const IdeaRow = Schema.Struct({
  text: Schema.String,
  adGroups: Schema.Number,
  impressions: Schema.String,
  taps: Schema.String,
  installs: Schema.String,
  spend: Schema.String,
  total: Schema.Number
})
const decodeIdeas = decodeRows(IdeaRow)

export class Research extends Effect.Service<Research>()("acs/Research", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections

    const apps = (grant: Granted<"searchApps">, request: typeof AppSearchRequest.Type) =>
      Effect.gen(function*() {
        const client = yield* connections.clientFor(grant.orgId)
        return { apps: yield* client.searchApps(request.query, clampLimit(request.limit)) }
      }).pipe(Effect.withSpan("Research.apps"))

    const geo = (grant: Granted<"searchGeo">, request: typeof GeoSearchRequest.Type) =>
      Effect.gen(function*() {
        const client = yield* connections.clientFor(grant.orgId)
        return { geo: yield* client.searchGeo(request.query, request.countryCode?.toUpperCase() ?? null) }
      }).pipe(Effect.withSpan("Research.geo"))

    /**
     * Search terms containing any word of the seeds, not yet a keyword or a negative anywhere in the account,
     * ranked by installs, then spend, then text. Spellings that differ in case are one idea, shown in lower case.
     */
    const keywordIdeas = (grant: Granted<"keywordIdeas">, request: typeof KeywordIdeasRequest.Type) =>
      Effect.gen(function*() {
        const account = grant.account
        const p = account.projectId
        const tokens = seedTokens(request.seeds)
        if (tokens.length === 0) {
          return yield* new InvalidRequest({ message: "seeds: no seed holds a word of two or more letters or digits" })
        }
        const now = yield* Clock.currentTimeMillis
        const window = windowEndingYesterday(now, account.timeZone, request.days ?? DEFAULT_DAYS)
        const limit = clampLimit(request.limit)
        const rows = yield* sql`
          WITH terms AS (
            SELECT lower(btrim(st.text)) AS term, count(DISTINCT st.ad_group_id)::int AS ad_groups,
              sum(m.impressions) AS impressions, sum(m.taps) AS taps, sum(m.installs) AS installs, sum(m.spend_micros) AS spend
            FROM search_terms st
            JOIN daily_metrics m ON m.project_id = st.project_id AND m.level = 'searchTerms' AND m.entity_key = st.entity_key
              AND m.day BETWEEN ${window.start}::date AND ${window.end}::date
            WHERE st.project_id = ${p} AND st.text IS NOT NULL AND lower(st.text) LIKE ANY (${tokens.map(likePattern)}::text[])
            GROUP BY lower(btrim(st.text))
          ), ideas AS (
            SELECT * FROM terms t
            WHERE NOT EXISTS (SELECT 1 FROM keywords k WHERE k.project_id = ${p} AND lower(btrim(k.text)) = t.term)
              AND NOT EXISTS (SELECT 1 FROM negative_keywords n WHERE n.project_id = ${p} AND lower(btrim(n.text)) = t.term)
          )
          SELECT term AS text, ad_groups, impressions, taps, installs, spend, count(*) OVER ()::int AS total
          FROM ideas ORDER BY installs DESC, spend DESC, term LIMIT ${limit}`.pipe(Effect.orDie, Effect.flatMap(decodeIdeas))
        const total = rows[0]?.total ?? 0
        return {
          ideas: rows.map((r) => ({
            text: r.text,
            adGroups: r.adGroups,
            ...metricsOf({ impressions: num(r.impressions), taps: num(r.taps), installs: num(r.installs), spendMicros: num(r.spend) })
          })),
          total,
          truncated: rows.length < total,
          dataFreshness: freshnessFor(account, window, now)
        }
      }).pipe(Effect.withSpan("Research.keywordIdeas"))

    return { apps, geo, keywordIdeas } as const
  })
}) {}
