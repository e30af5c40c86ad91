/**
 * Migrations 0043 and 0044 on a database that has lived: every action, changeset, job and step is kept, each step
 * gains its action's account, each delivery batch its endpoint's org; from then on every key of the pipeline's
 * tables names the account and every key of the events' and webhooks' tables the org: a row pointing at another
 * account's action or another org's endpoint is refused, where before it was taken.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

let database: string

const action = (actionId: string, projectId: string, extra: { readonly revertOf?: string; readonly changesetId?: string } = {}) =>
  query(
    database,
    `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by, created_at,
       revert_of, changeset_id)
     VALUES ($1, 'org_k', $2, 'campaign_status', 'queued', 'proposed', 'review', 's', 'r', '{}', '{"kind":"key","id":"k","name":"k"}',
       clock_timestamp(), $3, $4)`,
    [actionId, projectId, extra.revertOf ?? null, extra.changesetId ?? null]
  )

beforeAll(async () => {
  database = await createBlankDatabase()
  // Every migration before 0043 ("0042_…" sorts before "0043").
  await migrateThrough(database, "0043")
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_k', 'k')`)
  for (const projectId of ["prj_a", "prj_b"]) {
    await query(database, `INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone)
      VALUES ($1, 'org_k', $1, $1, 'active', 'USD', 'UTC')`, [projectId])
  }
  await query(database, `INSERT INTO changesets (changeset_id, org_id, project_id, title, on_failure, status, opened_by)
    VALUES ('cs_1', 'org_k', 'prj_a', 't', 'stop', 'open', '{"kind":"key","id":"k","name":"k"}')`)
  await action("act_1", "prj_a")
  await action("act_2", "prj_a", { revertOf: "act_1", changesetId: "cs_1" })
  await action("act_3", "prj_b")
  await query(database, `INSERT INTO jobs (job_id, action_id, project_id) VALUES ('job_1', 'act_1', 'prj_a')`)
  await query(database, `INSERT INTO jobs (job_id, changeset_id, project_id) VALUES ('job_2', 'cs_1', 'prj_a')`)
  for (const [actionId, step] of [["act_1", 1], ["act_1", 2], ["act_3", 1]] as const) {
    await query(database, `INSERT INTO action_steps (action_id, run, phase, step, name, status) VALUES ($1, 1, 'apply', $2, 'n', 'succeeded')`, [actionId, step])
  }
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_l', 'l')`)
  await query(database, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
    VALUES ('wh_k', 'org_k', 'https://k.example', '["action.applied"]', 'json', 's', 'k'), ('wh_l', 'org_l', 'https://l.example', '["action.applied"]', 'json', 's', 'l')`)
  await query(database, `INSERT INTO events (event_id, org_id, type, data, position) VALUES ('evt_1', 'org_k', 'action.applied', '{}', 1)`)
  await query(database, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
    VALUES ('dlv_1', 'wh_k', 'org_k', 'evt_1', 'action.applied', '{}', now())`)
  await query(database, `INSERT INTO webhook_batches (batch_id, webhook_id, after_position, through_position, locked_by, lease_until)
    VALUES ('bat_1', 'wh_l', 0, 1, 'w', now())`)
  await migrateThrough(database, undefined)
}, 300_000)

const keysOf = async (tables: ReadonlyArray<string>) => {
  const constraints = await query<{ table: string; definition: string }>(
    database,
    `SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS definition FROM pg_constraint
     WHERE conrelid::regclass::text = ANY ($1) AND contype IN ('p', 'u', 'f') AND confrelid::regclass::text IS DISTINCT FROM 'orgs'`,
    [tables]
  )
  const uniqueIndexes = await query<{ table: string; definition: string }>(
    database,
    `SELECT indrelid::regclass::text AS table, pg_get_indexdef(indexrelid) AS definition FROM pg_index
     WHERE indisunique AND indrelid::regclass::text = ANY ($1)`,
    [tables]
  )
  return [...constraints, ...uniqueIndexes]
}

describe("migration 0043: the pipeline's keys name the account", () => {
  it("keeps every row, and each step carries its action's account", async () => {
    expect(await query(database, "SELECT action_id, project_id, revert_of, changeset_id FROM actions ORDER BY action_id")).toEqual([
      { action_id: "act_1", project_id: "prj_a", revert_of: null, changeset_id: null },
      { action_id: "act_2", project_id: "prj_a", revert_of: "act_1", changeset_id: "cs_1" },
      { action_id: "act_3", project_id: "prj_b", revert_of: null, changeset_id: null }
    ])
    expect(await query(database, "SELECT job_id, action_id, changeset_id, project_id FROM jobs ORDER BY job_id")).toEqual([
      { job_id: "job_1", action_id: "act_1", changeset_id: null, project_id: "prj_a" },
      { job_id: "job_2", action_id: null, changeset_id: "cs_1", project_id: "prj_a" }
    ])
    expect(await query(database, "SELECT action_id, step, project_id FROM action_steps ORDER BY action_id, step")).toEqual([
      { action_id: "act_1", step: 1, project_id: "prj_a" },
      { action_id: "act_1", step: 2, project_id: "prj_a" },
      { action_id: "act_3", step: 1, project_id: "prj_b" }
    ])
  })

  it("names the account in every primary, unique and foreign key of the pipeline's tables, the syncs', audits' and generations'", async () => {
    const keys = await keysOf(["actions", "changesets", "jobs", "action_steps", "syncs", "audits", "metric_generations"])
    expect(keys.length).toBeGreaterThan(20)
    for (const key of keys) expect(key.definition, `${key.table}: ${key.definition}`).toMatch(/project_id/)
  })

  it("refuses a revert, a member, a job or a step that points at another account's row", async () => {
    const refused = async (statement: string) => {
      await expect(query(database, statement)).rejects.toThrow(/foreign key/)
    }
    await refused(`UPDATE actions SET revert_of = 'act_1' WHERE action_id = 'act_3'`)
    await refused(`UPDATE actions SET changeset_id = 'cs_1' WHERE action_id = 'act_3'`)
    await refused(`INSERT INTO jobs (job_id, action_id, project_id) VALUES ('job_x', 'act_1', 'prj_b')`)
    await refused(`INSERT INTO action_steps (action_id, project_id, run, phase, step, name, status) VALUES ('act_1', 'prj_b', 2, 'apply', 1, 'n', 'started')`)
  })
})

describe("migration 0044: the events' and webhooks' keys name the org", () => {
  it("keeps every row, and a delivery batch carries its endpoint's org", async () => {
    expect(await query(database, "SELECT event_id, org_id, position FROM events")).toEqual([{ event_id: "evt_1", org_id: "org_k", position: "1" }])
    expect(await query(database, "SELECT delivery_id, org_id FROM webhook_deliveries")).toEqual([{ delivery_id: "dlv_1", org_id: "org_k" }])
    expect(await query(database, "SELECT batch_id, org_id FROM webhook_batches")).toEqual([{ batch_id: "bat_1", org_id: "org_l" }])
  })

  it("names the org in every primary, unique and foreign key of the five tables", async () => {
    const keys = await keysOf(["events", "webhooks", "webhook_deliveries", "webhook_batches", "webhook_delivered_batches"])
    expect(keys.length).toBeGreaterThan(10)
    for (const key of keys) expect(key.definition, `${key.table}: ${key.definition}`).toMatch(/org_id/)
  })

  it("refuses a delivery or a batch of another org's endpoint", async () => {
    await expect(query(database, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
      VALUES ('dlv_x', 'wh_l', 'org_k', 'evt_1', 'action.applied', '{}', now())`)).rejects.toThrow(/foreign key/)
    await expect(query(database, `INSERT INTO webhook_batches (batch_id, webhook_id, org_id, after_position, through_position, locked_by, lease_until)
      VALUES ('bat_x', 'wh_k', 'org_l', 0, 1, 'w', now())`)).rejects.toThrow(/foreign key/)
  })
})
