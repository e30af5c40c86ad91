/**
 * Migration 0037 on a warehouse synced before it: every account's partition of `search_terms` gains the source
 * columns (empty until the next sync; the read falls back to the keyword row), named terms keep their keyword, and a
 * low-volume row an older sync kept per keyword loses the keyword it cannot be attributed by.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

let database: string


beforeAll(async () => {
  database = await createBlankDatabase()
  await migrateThrough(database, "0036_change_places")
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_m', 'm')`)
  await query(database, `INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone)
    VALUES ('prj_m', 'org_m', 'u1', 'm', 'active', 'USD', 'UTC')`)
  // The account's partition, as a sync attaches it.
  await query(database, `CREATE TABLE search_terms_m (LIKE search_terms INCLUDING CONSTRAINTS)`)
  await query(database, `ALTER TABLE search_terms ATTACH PARTITION search_terms_m FOR VALUES IN ('prj_m')`)
  for (const [keywordId, text] of [["kw1", "photo editor"], [null, "photo app"], ["kw1", null], [null, null]] as const) {
    await query(
      database,
      `INSERT INTO search_terms (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text) VALUES ('prj_m', $1, 'c1', 'g1', $2, $3)`,
      [JSON.stringify(["g1", keywordId, text]), keywordId, text]
    )
  }
  await migrateThrough(database, undefined)
}, 300_000)

describe("migration 0037: search-term sources", () => {
  it("adds the source columns to every partition, keeps named terms' keywords, and takes the keyword off a bucket row", async () => {
    const rows = await query<{ keyword_id: string | null; text: string | null; keyword_text: string | null; match_type: string | null }>(
      database,
      "SELECT keyword_id, text, keyword_text, match_type FROM search_terms_m ORDER BY text NULLS LAST, keyword_id NULLS LAST"
    )
    expect(rows).toEqual([
      { keyword_id: null, text: "photo app", keyword_text: null, match_type: null },
      { keyword_id: "kw1", text: "photo editor", keyword_text: null, match_type: null },
      { keyword_id: null, text: null, keyword_text: null, match_type: null },
      { keyword_id: null, text: null, keyword_text: null, match_type: null }
    ])
    // A sync's copy, made LIKE the parent, has them too.
    await query(database, `CREATE TABLE search_terms_syn_m (LIKE search_terms INCLUDING CONSTRAINTS)`)
    const columns = await query<{ column_name: string }>(
      database,
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'search_terms_syn_m' AND column_name IN ('keyword_text', 'match_type') ORDER BY 1`
    )
    expect(columns.map((c) => c.column_name)).toEqual(["keyword_text", "match_type"])
  })
})
