/**
 * The apply's warehouse write-back (`acs_write_back`, migration 0021) against a real Postgres: what an apply
 * touched is written as the upstream answered it, an entity a composite touched twice ends as its last record
 * says, deletions and removals take what lies under them, and other accounts are left alone.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { expect } from "vitest"
import type { Touched } from "../src/actions/kinds/Kind.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { writeBackCall } from "../src/worker/WarehouseWriteBack.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_write_back"
const PROJECT = "prj_write_back"
const OTHER = "prj_write_back_other"

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  await insertAccount(url, ORG, OTHER)
  return databaseLayer("write-back test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const campaign = (campaignId: string, name: string, dailyBudgetMicros: number | null, deleted = false) => ({
  campaignId, name, adamId: "900", countriesOrRegions: ["US", "GB"], dailyBudgetMicros, status: "ENABLED" as const,
  bidStrategy: "MANUAL_CPT" as const, targetCpaMicros: null, deleted
})

const writeBack = (projectId: string, touched: Touched) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT ${writeBackCall(sql, projectId, touched)}`).pipe(Effect.orDie)

/** Each of the account's rows of `table`, as `id: name` (or `id` alone), sorted. */
const rows = (table: string, id: string, projectId = PROJECT) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly row: string }>`SELECT ${sql(id)} || coalesce(': ' || ${sql.unsafe(table === "keywords" || table === "negative_keywords" ? "text" : "name")}, '') AS row
      FROM ${sql(table)} WHERE project_id = ${projectId} ORDER BY 1`).pipe(Effect.orDie, Effect.map((found) => found.map((r) => r.row)))

layer(TestDatabase)("the warehouse write-back", (it) => {
  it.effect("writes what the upstream answered; an entity touched twice ends as its last record says", () =>
    Effect.gen(function*() {
      yield* writeBack(OTHER, { campaigns: [campaign("c1", "elsewhere", 1)] })
      yield* writeBack(PROJECT, {
        campaigns: [campaign("c1", "Brand", 10_000_000), campaign("c2", "Generic", null), campaign("c1", "Brand (renamed)", 12_000_000)],
        adGroups: [{ adGroupId: "g1", campaignId: "c1", name: "Core", status: "ENABLED", defaultBidMicros: 500_000, cpaGoalMicros: null, searchMatch: true, deleted: false }],
        keywords: [
          { keywordId: "k1", adGroupId: "g1", campaignId: "c1", text: "shoes", matchType: "EXACT", status: "ACTIVE", bidMicros: null, deleted: false },
          { keywordId: "k1", adGroupId: "g1", campaignId: "c1", text: "shoes", matchType: "EXACT", status: "PAUSED", bidMicros: 700_000, deleted: false }
        ],
        negativeKeywords: [
          { negativeKeywordId: "n1", campaignId: "c1", adGroupId: null, text: "free", matchType: "BROAD", status: "ACTIVE", deleted: false }
        ]
      })
      expect(yield* rows("campaigns", "campaign_id")).toEqual(["c1: Brand (renamed)", "c2: Generic"])
      expect(yield* rows("campaigns", "campaign_id", OTHER)).toEqual(["c1: elsewhere"])
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`SELECT daily_budget_micros::text AS budget, countries_or_regions AS places FROM campaigns WHERE project_id = ${PROJECT} AND campaign_id = 'c1'`)
        .toEqual([{ budget: "12000000", places: ["US", "GB"] }])
      expect(yield* sql`SELECT status, bid_micros::text AS bid FROM keywords WHERE project_id = ${PROJECT} AND keyword_id = 'k1'`)
        .toEqual([{ status: "PAUSED", bid: "700000" }])
      expect(yield* rows("ad_groups", "ad_group_id")).toEqual(["g1: Core"])
      expect(yield* rows("negative_keywords", "negative_keyword_id")).toEqual(["n1: free"])
    }))

  it.effect("deletes what was deleted, and a removed ad group or campaign takes what lies under it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* writeBack(PROJECT, {
        campaigns: [campaign("c3", "Tree", 1_000_000), campaign("c4", "Gone", 1_000_000)],
        adGroups: [
          { adGroupId: "g3", campaignId: "c3", name: "Kept", status: "ENABLED", defaultBidMicros: 1, cpaGoalMicros: null, searchMatch: false, deleted: false },
          { adGroupId: "g4", campaignId: "c3", name: "Removed", status: "ENABLED", defaultBidMicros: 1, cpaGoalMicros: null, searchMatch: false, deleted: false }
        ],
        keywords: [
          { keywordId: "k3", adGroupId: "g3", campaignId: "c3", text: "kept", matchType: "EXACT", status: "ACTIVE", bidMicros: null, deleted: false },
          { keywordId: "k4", adGroupId: "g4", campaignId: "c3", text: "under removed", matchType: "EXACT", status: "ACTIVE", bidMicros: null, deleted: false },
          { keywordId: "k5", adGroupId: "g3", campaignId: "c3", text: "deleted", matchType: "EXACT", status: "ACTIVE", bidMicros: null, deleted: false }
        ]
      })
      yield* sql`INSERT INTO ads (project_id, ad_id, ad_group_id, campaign_id, name, creative_type, status)
        VALUES (${PROJECT}, 'ad3', 'g3', 'c3', 'Ad', 'DEFAULT', 'ENABLED'), (${PROJECT}, 'ad4', 'g4', 'c3', 'Ad under removed', 'DEFAULT', 'ENABLED')`
      yield* writeBack(PROJECT, {
        campaigns: [campaign("c4", "Gone", 1_000_000, true)],
        keywords: [{ keywordId: "k5", adGroupId: "g3", campaignId: "c3", text: "deleted", matchType: "EXACT", status: "ACTIVE", bidMicros: null, deleted: true }],
        ads: [{ adId: "ad3", adGroupId: "g3", campaignId: "c3", name: "Ad (renamed)", creativeType: "DEFAULT", status: "PAUSED", deleted: false }],
        removedAdGroups: ["g4"]
      })
      expect(yield* rows("campaigns", "campaign_id")).toContain("c3: Tree")
      expect(yield* rows("campaigns", "campaign_id")).not.toContain("c4: Gone")
      expect(yield* rows("ad_groups", "ad_group_id")).toContain("g3: Kept")
      expect(yield* rows("ad_groups", "ad_group_id")).not.toContain("g4: Removed")
      expect((yield* rows("keywords", "keyword_id")).filter((k) => /^k[345]/.test(k))).toEqual(["k3: kept"])
      expect((yield* rows("ads", "ad_id")).filter((a) => a.startsWith("ad"))).toEqual(["ad3: Ad (renamed)"])

      yield* writeBack(PROJECT, { removedCampaigns: ["c3"] })
      for (const [table, id] of [["campaigns", "campaign_id"], ["ad_groups", "ad_group_id"], ["keywords", "keyword_id"], ["ads", "ad_id"]] as const) {
        expect((yield* rows(table, id)).filter((row) => /^(c3|g3|k3|ad3)\b/.test(row))).toEqual([])
      }
    }))
})
