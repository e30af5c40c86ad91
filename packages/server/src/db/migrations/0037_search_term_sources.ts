/**
 * Search terms keep their source as the report named it (docs/decisions/warehouse-and-reads.md, "Search-term
 * sources and the low-volume bucket"): the matched keyword's text and match type beside its id (a keyword removed
 * since still names its terms), none for Search Match. The low-volume bucket (no text) is one row per ad group with
 * no source; rows an older sync keyed per keyword lose the keyword they cannot be attributed by.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // On the partitioned parent: every account's partition, and every sync's copy made LIKE it, has them.
  yield* sql`ALTER TABLE search_terms ADD COLUMN keyword_text text, ADD COLUMN match_type text`
  yield* sql`UPDATE search_terms SET keyword_id = NULL WHERE text IS NULL AND keyword_id IS NOT NULL`
})
