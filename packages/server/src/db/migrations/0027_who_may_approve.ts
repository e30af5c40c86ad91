/**
 * Who may approve (docs/contract.md 5.1, docs/decisions/access-and-keys.md).
 *
 * - `orgs.four_eyes` replaces `require_second_approver`: `true` was the chain-proof rule (`distinct_person`),
 *   `false` is `off`; orgs created from now on start with `distinct_actor`.
 * - Every key records its root as it is created: the person at the end of its creator chain
 *   (`root_person_id`), or the org key it descends from (`root_key_id`); both null for an org key, which is its
 *   own root. A key's creator exists before it and `created_by` is never written again, so a chain cannot loop;
 *   the walk below uses UNION all the same, so that even a hand-edited cycle ends (as an org key).
 * - Every recorded actor of a key or a person carries its root, so an approval compares roots without a walk.
 * - A person's change drops every cached key as well as every cached session: a key acts with at most its
 *   person's current role, and not at all once that person is disabled.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE orgs ADD COLUMN four_eyes text NOT NULL DEFAULT 'distinct_actor'
      CHECK (four_eyes IN ('distinct_actor', 'distinct_person', 'off'))`
  yield* sql`UPDATE orgs SET four_eyes = CASE WHEN require_second_approver THEN 'distinct_person' ELSE 'off' END`
  yield* sql`ALTER TABLE orgs DROP COLUMN require_second_approver`

  yield* sql`
    ALTER TABLE api_keys
      ADD COLUMN root_person_id text REFERENCES people (person_id),
      ADD COLUMN root_key_id text REFERENCES api_keys (key_id),
      ADD CONSTRAINT api_keys_one_root CHECK (root_person_id IS NULL OR root_key_id IS NULL)`
  yield* sql`
    WITH RECURSIVE walk (key_id, at_key, link) AS (
      SELECT key_id, key_id, created_by FROM api_keys
      UNION
      SELECT w.key_id, k.key_id, k.created_by FROM walk w JOIN api_keys k ON w.link = 'key:' || k.key_id
    ),
    ends AS (
      SELECT DISTINCT ON (key_id) key_id, at_key, link FROM walk
      WHERE link IS NULL OR link NOT LIKE 'key:%'
      ORDER BY key_id
    )
    UPDATE api_keys k SET
      root_person_id = CASE WHEN e.link LIKE 'person:%' AND EXISTS (SELECT 1 FROM people WHERE person_id = substr(e.link, 8))
                            THEN substr(e.link, 8) END,
      root_key_id = CASE WHEN (e.link IS NULL OR e.link NOT LIKE 'person:%') AND e.at_key <> k.key_id THEN e.at_key END
    FROM ends e WHERE e.key_id = k.key_id`
  yield* sql`CREATE INDEX api_keys_root_person ON api_keys (root_person_id) WHERE root_person_id IS NOT NULL`

  // The recorded actors: a person is their own root; a key's root is the one just computed.
  yield* sql`
    UPDATE actions a SET proposed_by = a.proposed_by || jsonb_build_object('root',
      jsonb_build_object('kind', 'person', 'id', p.person_id, 'name', p.name))
    FROM people p WHERE a.proposed_by->>'kind' = 'person' AND p.person_id = a.proposed_by->>'id'`
  yield* sql`
    UPDATE actions a SET proposed_by = a.proposed_by || jsonb_build_object('root',
      CASE WHEN k.root_person_id IS NOT NULL
           THEN jsonb_build_object('kind', 'person', 'id', p.person_id, 'name', p.name)
           ELSE jsonb_build_object('kind', 'key', 'id', coalesce(k.root_key_id, k.key_id), 'name', coalesce(rk.name, k.name)) END)
    FROM api_keys k
    LEFT JOIN people p ON p.person_id = k.root_person_id
    LEFT JOIN api_keys rk ON rk.key_id = k.root_key_id
    WHERE a.proposed_by->>'kind' = 'key' AND k.key_id = a.proposed_by->>'id'`

  // Its body then (its trigger on people also drops the keys, which carry their person's role); migration 0041 drops it.
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION public.acs_notify_person_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 's:*');
      PERFORM pg_notify('acs_invalidate', 'k:*');
      RETURN NULL;
    END $function$`)
})
