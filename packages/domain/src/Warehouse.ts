/** Rows of the spend-ranked account reads, syncs, and the read query (docs/contract.md 2.2). */
import { Schema } from "effect"
import { DataFreshness } from "./Accounts.ts"

export const Metrics = Schema.Struct({
  impressions: Schema.Int,
  taps: Schema.Int,
  installs: Schema.Int,
  spendMicros: Schema.Int,
  avgCptMicros: Schema.NullOr(Schema.Int),
  cpaMicros: Schema.NullOr(Schema.Int).annotations({ description: "null when the window has no installs" }),
  ttr: Schema.NullOr(Schema.Number),
  conversionRate: Schema.NullOr(Schema.Number)
})

export const CampaignRow = Schema.Struct({
  campaignId: Schema.String,
  name: Schema.String,
  status: Schema.String,
  adamId: Schema.String,
  countriesOrRegions: Schema.Array(Schema.String),
  dailyBudgetMicros: Schema.NullOr(Schema.Int),
  bidStrategy: Schema.String,
  targetCpaMicros: Schema.NullOr(Schema.Int),
  ...Metrics.fields
}).annotations({ identifier: "CampaignRow" })

export const AdGroupRow = Schema.Struct({
  adGroupId: Schema.String,
  campaignId: Schema.String,
  name: Schema.String,
  status: Schema.String,
  defaultBidMicros: Schema.Int,
  cpaGoalMicros: Schema.NullOr(Schema.Int),
  searchMatch: Schema.Boolean,
  ...Metrics.fields
}).annotations({ identifier: "AdGroupRow" })

export const KeywordRow = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  matchType: Schema.String,
  status: Schema.String,
  bidMicros: Schema.NullOr(Schema.Int).annotations({ description: "null: the ad group's default bid applies" }),
  ...Metrics.fields
}).annotations({ identifier: "KeywordRow" })

/** The keyword a search term matched, as the report named it. */
export const KeywordTermSource = Schema.Struct({
  type: Schema.Literal("keyword"),
  keywordId: Schema.String,
  text: Schema.NullOr(Schema.String).annotations({ description: "null when neither the report nor the account names it" }),
  matchType: Schema.NullOr(Schema.Literal("EXACT", "BROAD"))
}).annotations({ identifier: "KeywordTermSource" })

/** A search term Search Match found (no keyword). */
export const SearchMatchTermSource = Schema.Struct({ type: Schema.Literal("searchMatch") }).annotations({
  identifier: "SearchMatchTermSource"
})

export const SearchTermRow = Schema.Struct({
  text: Schema.NullOr(Schema.String).annotations({ description: "null for the low-volume bucket" }),
  lowVolume: Schema.Boolean.annotations({
    description: "the ad group's terms too rare for the platform to name, summed over its sources: one row per ad group"
  }),
  source: Schema.NullOr(Schema.Union(KeywordTermSource, SearchMatchTermSource)).annotations({
    description: "the matched keyword, or Search Match; null for the low-volume bucket"
  }),
  campaignId: Schema.String,
  adGroupId: Schema.String,
  keywordId: Schema.NullOr(Schema.String).annotations({ description: "null for Search Match and the low-volume bucket" }),
  ...Metrics.fields
}).annotations({ identifier: "SearchTermRow" })

export const AdRow = Schema.Struct({
  adId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  name: Schema.String,
  creativeType: Schema.String,
  status: Schema.String,
  ...Metrics.fields
}).annotations({ identifier: "AdRow" })

export const NegativeKeywordRow = Schema.Struct({
  negativeKeywordId: Schema.String,
  campaignId: Schema.String,
  adGroupId: Schema.NullOr(Schema.String).annotations({ description: "null at campaign level" }),
  text: Schema.String,
  matchType: Schema.String
}).annotations({ identifier: "NegativeKeywordRow" })

/** docs/contract.md 2.2 collection envelope around `rows` under the collection's name. */
export const collection = <K extends string, A, I>(name: K, row: Schema.Schema<A, I>) =>
  Schema.Struct({
    [name]: Schema.Array(row),
    total: Schema.Int,
    truncated: Schema.Boolean,
    dataFreshness: DataFreshness
  } as { [P in K]: Schema.Array$<Schema.Schema<A, I>> } & {
    total: typeof Schema.Int
    truncated: typeof Schema.Boolean
    dataFreshness: typeof DataFreshness
  })

/** The window of a metric read when `days` is not given (docs/contract.md 4). */
export const DEFAULT_DAYS = 30
export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 1000

/**
 * An integer query parameter. A query string is text, so the server decodes `"30"` to 30 (anything else is
 * 400 naming the parameter); the OpenAPI document shows what a client means, the integer with its bounds and
 * default, so that a generated client takes `{ days: 30 }`. The JSON Schema sits on a node of its own (a
 * composition) because effect's generator ignores one on an integer refinement of a transformation and
 * documents the encoded string.
 */
export const IntegerParam = <A extends number>(
  integer: Schema.Schema<A, number>,
  documented: { readonly minimum: number; readonly maximum: number; readonly default: number; readonly description: string }
) => Schema.compose(Schema.NumberFromString, integer).annotations({ jsonSchema: { type: "integer", ...documented } })

/** `limit` of a list clamped by `clampLimit`: never an error when it is an integer. */
export const LimitParam = IntegerParam(Schema.Int, {
  minimum: 1,
  maximum: MAX_LIMIT,
  default: DEFAULT_LIMIT,
  description: `Max rows; clamped to 1–${MAX_LIMIT}`
})

/** `days` 1–90 (out of range is 400 naming `days`); `limit` clamped to 1–1000, never an error when numeric. */
export const ReadParams = Schema.Struct({
  days: Schema.optional(IntegerParam(
    Schema.Int.pipe(Schema.between(1, 90, { message: () => "days must be an integer from 1 to 90" })),
    {
      minimum: 1,
      maximum: 90,
      default: DEFAULT_DAYS,
      description: "Metrics window in days, ending yesterday in the account's time zone"
    }
  )),
  limit: Schema.optional(LimitParam),
  campaignId: Schema.optional(Schema.String.annotations({ description: "Only this Apple Ads campaign's rows" })),
  adGroupId: Schema.optional(Schema.String.annotations({ description: "Only this ad group's rows" }))
})

export const clampLimit = (limit: number | undefined): number =>
  limit === undefined ? DEFAULT_LIMIT : Math.min(MAX_LIMIT, Math.max(1, limit))

export const Sync = Schema.Struct({
  syncId: Schema.String,
  status: Schema.Literal("running", "succeeded", "failed"),
  trigger: Schema.Literal("manual", "schedule", "import"),
  startedAt: Schema.String,
  finishedAt: Schema.NullOr(Schema.String),
  windowStart: Schema.NullOr(Schema.String),
  windowEnd: Schema.NullOr(Schema.String),
  rowsWritten: Schema.Int,
  progress: Schema.Struct({
    step: Schema.optional(Schema.String),
    done: Schema.optional(Schema.Int),
    total: Schema.optional(Schema.Int)
  }),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Sync" })

export const SyncList = Schema.Struct({
  syncs: Schema.Array(Sync),
  total: Schema.Int,
  truncated: Schema.Boolean,
  dataFreshness: DataFreshness
}).annotations({ identifier: "SyncList" })

export const SyncHistoryParams = Schema.Struct({ limit: Schema.optional(LimitParam) })

/** One account's place in the sync queue (GET /sync-queue). */
export const SyncQueueEntry = Schema.Struct({
  projectId: Schema.String,
  name: Schema.String,
  state: Schema.Literal("fresh", "due", "running", "waiting", "off").annotations({
    description: "fresh: within its freshness target; due: starts at the next pass; running; waiting: due, but `reason` holds it; " +
      "off: scheduled syncs are off (only syncs started by hand or by an import run)"
  }),
  reason: Schema.NullOr(Schema.Literal("rate_limited", "org_at_bound", "instance_at_bound", "after_failure")).annotations({
    description: "Why a due account waits: its upstream credential is rate-limited until `until`; the org runs its most syncs at " +
      "once; this instance runs its most; its last sync failed and it is tried again at `until`"
  }),
  dueAt: Schema.NullOr(Schema.String).annotations({
    description: "When it is (or was) due: its last fresh copy plus the freshness target; null when scheduled syncs are off"
  }),
  until: Schema.NullOr(Schema.String).annotations({ description: "Until when it waits, when known" }),
  credential: Schema.String.annotations({ description: "The upstream credential its syncs spend (a hash of the API client id)" })
}).annotations({ identifier: "SyncQueueEntry" })

export const SyncQueue = Schema.Struct({
  scheduled: Schema.Boolean.annotations({ description: "Whether scheduled syncs run (SYNC_INTERVAL_MINUTES > 0)" }),
  freshnessTargetMinutes: Schema.Int,
  bounds: Schema.Struct({
    instance: Schema.Int.annotations({ description: "Syncs at once per instance (SYNC_CONCURRENCY)" }),
    perOrg: Schema.Int.annotations({ description: "Syncs at once per org, across instances (SYNC_CONCURRENCY_PER_ORG)" }),
    runningHere: Schema.Int.annotations({ description: "Syncs running on the instance that answered" })
  }),
  accounts: Schema.Array(SyncQueueEntry),
  total: Schema.Int,
  truncated: Schema.Boolean
}).annotations({ identifier: "SyncQueue" })
