/**
 * Migration 0027 on a database that has lived under the earlier rule: orgs keep what they had asked for
 * (`requireSecondApprover: true` → `distinct_person`, `false` → `off`), every key gets the root its creator
 * chain ends at however deep (a person, an org key, or itself), a hand-made loop in `created_by` still ends,
 * and the recorded proposers of the ledger carry their roots.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

let database: string


const key = (keyId: string, createdBy: string | null) =>
  query(
    database,
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, created_by)
     VALUES ($1, 'org_strict', $1, $1, 'admin', true, 'org', $2)`,
    [keyId, createdBy]
  )

beforeAll(async () => {
  database = await createBlankDatabase()
  await migrateThrough(database, "0026_delivered_batches")
  await query(database, `INSERT INTO orgs (org_id, name, require_second_approver) VALUES ('org_strict', 'strict', true), ('org_solo', 'solo', false)`)
  await query(database, `INSERT INTO people (person_id, org_id, email, name, role, password_hash) VALUES ('psn_ann', 'org_strict', 'ann@x.example', 'Ann', 'admin', 'x')`)
  // Ann's chain of 20 keys, an operator's key with a key of its own, a bootstrap key (no creator), a loop.
  await key("key_ann_1", "person:psn_ann")
  for (let n = 2; n <= 20; n++) await key(`key_ann_${n}`, `key:key_ann_${n - 1}`)
  await key("key_operator", "operator")
  await key("key_of_operator", "key:key_operator")
  await key("key_bootstrap", null)
  await key("key_loop_a", "key:key_loop_b")
  await key("key_loop_b", "key:key_loop_a")
  await query(database, `INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone)
    VALUES ('prj_m', 'org_strict', 'u1', 'm', 'active', 'USD', 'UTC')`)
  for (const [actionId, proposedBy] of [
    ["act_by_key", { kind: "key", id: "key_ann_20", name: "deep" }],
    ["act_by_person", { kind: "person", id: "psn_ann", name: "Ann" }],
    ["act_by_operator_key", { kind: "key", id: "key_of_operator", name: "ops" }]
  ] as const) {
    await query(
      database,
      `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by, created_at)
       VALUES ($1, 'org_strict', 'prj_m', 'campaign_status', 'queued', 'proposed', 'review', 's', 'r', '{}', $2::jsonb, clock_timestamp())`,
      [actionId, JSON.stringify(proposedBy)]
    )
  }
  await migrateThrough(database, undefined)
}, 300_000)

describe("migration 0027: who may approve", () => {
  it("maps requireSecondApprover onto fourEyes, and starts new orgs on distinct_actor", async () => {
    await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_new', 'new')`)
    const rows = await query<{ org_id: string; four_eyes: string }>(database, "SELECT org_id, four_eyes FROM orgs ORDER BY org_id")
    expect(rows).toEqual([
      { org_id: "org_new", four_eyes: "distinct_actor" },
      { org_id: "org_solo", four_eyes: "off" },
      { org_id: "org_strict", four_eyes: "distinct_person" }
    ])
  })

  it("gives every key the root its creator chain ends at, however deep, and ends a loop", async () => {
    const rows = await query<{ key_id: string; root_person_id: string | null; root_key_id: string | null }>(
      database,
      "SELECT key_id, root_person_id, root_key_id FROM api_keys"
    )
    const rootOf = (keyId: string) => rows.find((r) => r.key_id === keyId)
    for (let n = 1; n <= 20; n++) expect(rootOf(`key_ann_${n}`)).toMatchObject({ root_person_id: "psn_ann", root_key_id: null })
    expect(rootOf("key_operator")).toMatchObject({ root_person_id: null, root_key_id: null })
    expect(rootOf("key_of_operator")).toMatchObject({ root_person_id: null, root_key_id: "key_operator" })
    expect(rootOf("key_bootstrap")).toMatchObject({ root_person_id: null, root_key_id: null })
    // A loop cannot be made through acs; one made by hand ends as org keys of their own.
    expect(rootOf("key_loop_a")?.root_person_id).toBeNull()
    expect(rootOf("key_loop_b")?.root_person_id).toBeNull()
  })

  it("records the proposers' roots in the ledger", async () => {
    const rows = await query<{ action_id: string; root: unknown }>(database, "SELECT action_id, proposed_by->'root' AS root FROM actions ORDER BY action_id")
    expect(rows).toEqual([
      { action_id: "act_by_key", root: { kind: "person", id: "psn_ann", name: "Ann" } },
      { action_id: "act_by_operator_key", root: { kind: "key", id: "key_operator", name: "key_operator" } },
      { action_id: "act_by_person", root: { kind: "person", id: "psn_ann", name: "Ann" } }
    ])
  })
})
