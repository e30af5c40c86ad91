/**
 * Webhook endpoints isolated from each other (docs/decisions/events-and-webhooks.md "A dead endpoint backs off,
 * recorded on its row"). Three columns of `webhooks`, read and written by the delivery queue (webhooks/Deliveries.ts):
 *
 * - `unanswered`: the endpoint's groups of attempts in a row that ended with an attempt given no answer (a
 *   timeout, a refused or reset connection); 0 once one is answered.
 * - `backoff_until`: while in the future, no claim takes anything of the endpoint; set when a group ends with an
 *   attempt given no answer (doubling with `unanswered`), together with the `run_at` of its waiting deliveries.
 *   An endpoint with `unanswered > 0` is then claimed one delivery at a time (a probe) until one is answered.
 * - `retries_held_until`, `retries_held_by`: the endpoint's queued deliveries (retries, pings) out as one group,
 *   leased like a batch of first attempts (webhook_batches): a claim takes no more of them until the group is
 *   recorded or its lease runs out, so one endpoint's backlog is never all in memory at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN unanswered int NOT NULL DEFAULT 0,
    ADD COLUMN backoff_until timestamptz,
    ADD COLUMN retries_held_until timestamptz,
    ADD COLUMN retries_held_by text`
})
