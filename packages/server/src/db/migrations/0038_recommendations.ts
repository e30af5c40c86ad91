/**
 * Apple's recommendations (docs/contract.md 4.5): `recommendations` holds the account's as the last sync read them
 * (its owner, warehouse/Recommendations.ts, replaces them whole); the kinds that act on one
 * (`apply_recommendation`, `dismiss_recommendation`) find their actions by `payload ->> 'recommendationId'`.
 * `acs_budget_delta` and `acs_cooldown_keys` price and key a daily-cap apply as the budget change it is
 * (docs/decisions/recommendations.md).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE recommendations (
      project_id text NOT NULL REFERENCES accounts (project_id),
      recommendation_id text NOT NULL,
      type text NOT NULL CHECK (type IN ('daily_cap', 'target_cpa')),
      adam_id text NOT NULL,
      campaign_id text NOT NULL,
      campaign_name text NOT NULL,
      state text NOT NULL CHECK (state IN ('available', 'applied', 'dismissed')),
      current_micros int8,
      recommended_micros int8 NOT NULL,
      last_week jsonb NOT NULL,
      expected jsonb NOT NULL,
      expires_at timestamptz NOT NULL,
      synced_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, recommendation_id)
    )`
  yield* sql`
    CREATE INDEX actions_recommendation ON actions (project_id, (payload ->> 'recommendationId'))
    WHERE kind IN ('apply_recommendation', 'dismiss_recommendation')`
  yield* installFunctions(["acs_budget_delta", "acs_cooldown_keys"])
})
