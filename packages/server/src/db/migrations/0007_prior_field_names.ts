/**
 * Prior state lives in payload fields named `prior…` (docs/contract.md 1): ledger rows written before the rename keep
 * their values under the new names, so the worker and revert decode one payload shape per kind. Only the
 * key changes, never a value. A proposal refused by local validation stores its request body instead of a
 * payload (no `keywords`, `negatives` or `bidMicros` key there), so the guards leave those rows alone. (`->` is
 * SQL NULL only for a missing key; a JSON null, as a keyword without its own bid has, is still renamed.)
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE actions
    SET payload = (payload - 'keywords') || jsonb_build_object('priorKeywords', payload -> 'keywords')
    WHERE kind = 'remove_keywords' AND payload -> 'keywords' IS NOT NULL AND payload -> 'priorKeywords' IS NULL`
  yield* sql`
    UPDATE actions
    SET payload = (payload - 'negatives') || jsonb_build_object('priorNegatives', payload -> 'negatives')
    WHERE kind = 'remove_negative_keywords' AND payload -> 'negatives' IS NOT NULL AND payload -> 'priorNegatives' IS NULL`
  yield* sql`
    UPDATE actions
    SET payload = (payload - 'bidMicros' - 'status')
      || jsonb_build_object('priorBidMicros', payload -> 'bidMicros', 'priorStatus', payload -> 'status')
    WHERE kind = 'change_match_type' AND payload -> 'bidMicros' IS NOT NULL AND payload -> 'status' IS NOT NULL
      AND payload -> 'priorStatus' IS NULL`
})
