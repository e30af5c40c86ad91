/** `acs campaigns`, `acs keywords` and `acs search-terms`: spend-ranked slices of the synced account data. */
import type { SearchTermRow } from "@acs/domain/Warehouse"
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { checked, clientOptions, currencyFor, given, limit, projectId, withClient } from "../Client.ts"
import { collectionFooter, emit, money, renderTable } from "../Output.ts"

const days = Options.integer("days").pipe(
  Options.withDescription("the window: complete days ending yesterday, 1–90 (default 30)"),
  Options.optional
)

const metricColumns = <Row extends { spendMicros: number; taps: number; installs: number; cpaMicros: number | null }>(
  currency: string
) => [
  { header: "SPEND", cell: (r: Row) => money(r.spendMicros, currency) },
  { header: "TAPS", cell: (r: Row) => r.taps },
  { header: "INSTALLS", cell: (r: Row) => r.installs },
  { header: "CPA", cell: (r: Row) => money(r.cpaMicros, currency) }
] as const

export const campaignsCommand = Command.make("campaigns", { projectId, days, limit, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listCampaigns", {
        path: { projectId: input.projectId },
        urlParams: given({ days: input.days, limit: input.limit })
      })
      const [answer, currency] = yield* Effect.all([client.listCampaigns(request), currencyFor(client, input)], {
        concurrency: 2
      })
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "CAMPAIGN ID", cell: (c) => c.campaignId },
            { header: "NAME", cell: (c) => c.name },
            { header: "STATUS", cell: (c) => c.status },
            { header: "DAILY BUDGET", cell: (c) => money(c.dailyBudgetMicros, currency) },
            { header: "BID STRATEGY", cell: (c) => c.bidStrategy },
            ...metricColumns<(typeof answer.campaigns)[number]>(currency)
          ], answer.campaigns),
          "",
          collectionFooter(answer.campaigns.length, answer)
        ].join("\n"))
    }))
).pipe(Command.withDescription("campaigns ranked by spend in the window, with their metrics (scope read)"))

export const keywordsCommand = Command.make("keywords", {
  projectId,
  days,
  limit,
  campaign: Options.text("campaign").pipe(Options.withDescription("only this campaign's keywords"), Options.optional),
  adGroup: Options.text("ad-group").pipe(Options.withDescription("only this ad group's keywords"), Options.optional),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listKeywords", {
        path: { projectId: input.projectId },
        urlParams: given({ days: input.days, limit: input.limit, campaignId: input.campaign, adGroupId: input.adGroup })
      })
      const [answer, currency] = yield* Effect.all([client.listKeywords(request), currencyFor(client, input)], {
        concurrency: 2
      })
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "KEYWORD ID", cell: (k) => k.keywordId },
            { header: "TEXT", cell: (k) => k.text },
            { header: "MATCH", cell: (k) => k.matchType },
            { header: "STATUS", cell: (k) => k.status },
            { header: "BID", cell: (k) => money(k.bidMicros, currency) },
            { header: "AD GROUP ID", cell: (k) => k.adGroupId },
            ...metricColumns<(typeof answer.keywords)[number]>(currency)
          ], answer.keywords),
          "",
          collectionFooter(answer.keywords.length, answer)
        ].join("\n"))
    }))
).pipe(Command.withDescription("keywords ranked by spend in the window, with their metrics (scope read)"))

/** A term's source as one cell: the matched keyword (text and match type), Search Match, or the bucket's none. */
const sourceCell = (t: typeof SearchTermRow.Type) =>
  t.source === null
    ? "(low volume: all sources)"
    : t.source.type === "searchMatch"
    ? "Search Match"
    : `${t.source.text ?? "?"} (${t.source.matchType ?? "?"})`

export const searchTermsCommand = Command.make("search-terms", {
  projectId,
  days,
  limit,
  campaign: Options.text("campaign").pipe(Options.withDescription("only this campaign's search terms"), Options.optional),
  adGroup: Options.text("ad-group").pipe(Options.withDescription("only this ad group's search terms"), Options.optional),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("listSearchTerms", {
        path: { projectId: input.projectId },
        urlParams: given({ days: input.days, limit: input.limit, campaignId: input.campaign, adGroupId: input.adGroup })
      })
      const [answer, currency] = yield* Effect.all([client.listSearchTerms(request), currencyFor(client, input)], {
        concurrency: 2
      })
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "TERM", cell: (t) => t.text ?? "(low volume)" },
            { header: "SOURCE", cell: sourceCell },
            { header: "AD GROUP ID", cell: (t) => t.adGroupId },
            ...metricColumns<(typeof answer.searchTerms)[number]>(currency)
          ], answer.searchTerms),
          "",
          collectionFooter(answer.searchTerms.length, answer)
        ].join("\n"))
    }))
).pipe(Command.withDescription("search terms ranked by spend in the window, each with its keyword or Search Match (scope read)"))
