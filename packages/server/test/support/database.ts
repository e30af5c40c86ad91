/** Per-test databases cloned from the migrated template, and plain SQL for arranging test state. */
import * as Crypto from "node:crypto"
import pg from "pg"
import { inject } from "vitest"
import { TEMPLATE_DATABASE } from "./postgres.ts"

export const clusterUrl = (database: string): string => `postgres://postgres@127.0.0.1:${inject("postgresPort")}/${database}`

const cloneDatabase = async (template: string): Promise<string> => {
  const name = `acs_test_${Crypto.randomBytes(6).toString("hex")}`
  const admin = new pg.Client({ connectionString: clusterUrl("postgres") })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`)
  } finally {
    await admin.end()
  }
  return clusterUrl(name)
}

/** A fresh, migrated, empty database; its URL. */
export const createDatabase = (): Promise<string> => cloneDatabase(TEMPLATE_DATABASE)

/** A fresh database without even the migrations. */
export const createBlankDatabase = (): Promise<string> => cloneDatabase("template0")

export const query = async <Row extends Record<string, unknown>>(
  url: string,
  text: string,
  values: ReadonlyArray<unknown> = []
): Promise<Array<Row>> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<Row>(text, [...values])).rows
  } finally {
    await client.end()
  }
}

/** Inserts an account into the org (accounts arrive through the upstream import in production). */
export const insertAccount = async (
  url: string,
  orgId: string,
  projectId: string,
  overrides: { readonly status?: string; readonly readOnly?: boolean } = {}
): Promise<void> => {
  await query(
    url,
    `INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone, read_only)
     VALUES ($1, $2, $3, $4, $5, 'USD', 'America/New_York', $6)`,
    [projectId, orgId, `upstream-${projectId}`, `Account ${projectId}`, overrides.status ?? "active", overrides.readOnly ?? false]
  )
}

export const insertOrg = async (url: string, orgId: string): Promise<void> => {
  await query(url, `INSERT INTO orgs (org_id, name) VALUES ($1, $2)`, [orgId, `Org ${orgId}`])
}
