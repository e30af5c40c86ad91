/**
 * Slack approvals (docs/contract.md 6.1): a person's Slack user (`people.slack_user_id`, unique within an org),
 * each org's Slack signing secret sealed at rest (`slack_signing_secrets`, owner webhooks/SlackSigningSecrets.ts),
 * the signatures of interactions already taken, kept for the 5-minute window so a replay is refused on every
 * instance (`slack_seen_signatures`, same owner), and the webhook format `slack_app`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE people ADD COLUMN slack_user_id text`
  yield* sql`CREATE UNIQUE INDEX people_slack_user ON people (org_id, slack_user_id) WHERE slack_user_id IS NOT NULL`
  yield* sql`
    CREATE TABLE slack_signing_secrets (
      org_id text PRIMARY KEY REFERENCES orgs (org_id),
      secret_sealed text NOT NULL,
      set_by text NOT NULL,
      set_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE slack_seen_signatures (
      signature text PRIMARY KEY,
      seen_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX slack_seen_signatures_seen_at ON slack_seen_signatures (seen_at)`
  yield* sql`ALTER TABLE webhooks DROP CONSTRAINT webhooks_format_check`
  yield* sql`ALTER TABLE webhooks ADD CONSTRAINT webhooks_format_check CHECK (format IN ('json', 'slack', 'slack_app'))`
})
