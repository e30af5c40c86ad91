/**
 * No triggers (docs/decisions/database.md "Invalidation and bookkeeping by the statements, not triggers"): Citus
 * refuses to distribute a table, or make a reference table of it, while it carries one. What they did, the owners of
 * the rows now do: the lookup caches' `acs_invalidate` notifications of the keys a statement changed, in its
 * transaction (db/Invalidation.ts `invalidating`), the cooldown marks of an action approved or applied, in the same
 * statement (actions/pipeline/Transitions.ts `markCooldowns`), and the bodies that pending webhook deliveries keep
 * of the events retention deletes, in the same statement (webhooks/Deliveries.ts `keepPendingBodies`).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TRIGGER api_keys_invalidate ON api_keys`
  yield* sql`DROP TRIGGER api_keys_invalidate_deleted ON api_keys`
  yield* sql`DROP TRIGGER accounts_invalidate ON accounts`
  yield* sql`DROP TRIGGER orgs_invalidate ON orgs`
  yield* sql`DROP TRIGGER targets_invalidate ON targets`
  yield* sql`DROP TRIGGER sessions_invalidate ON sessions`
  yield* sql`DROP TRIGGER people_invalidate ON people`
  yield* sql`DROP TRIGGER guardrails_invalidate ON guardrails`
  yield* sql`DROP TRIGGER actions_cooldown_marks_inserted ON actions`
  yield* sql`DROP TRIGGER actions_cooldown_marks_changed ON actions`
  yield* sql`DROP TRIGGER events_keep_pending_bodies ON events`
  yield* sql`DROP FUNCTION acs_notify_key_change()`
  yield* sql`DROP FUNCTION acs_notify_account_change()`
  yield* sql`DROP FUNCTION acs_notify_org_change()`
  yield* sql`DROP FUNCTION acs_notify_targets_change()`
  yield* sql`DROP FUNCTION acs_notify_session_change()`
  yield* sql`DROP FUNCTION acs_notify_person_change()`
  yield* sql`DROP FUNCTION acs_notify_guardrails_change()`
  yield* sql`DROP FUNCTION acs_mark_cooldowns()`
  yield* sql`DROP FUNCTION acs_keep_pending_bodies()`
})
