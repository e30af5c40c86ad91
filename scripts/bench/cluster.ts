/**
 * The bench's PostgreSQL: the test support's throwaway cluster, which loads pg_stat_statements, so a run can
 * count the statements acs sends per proposal (utility statements such as BEGIN and COMMIT count too:
 * track_utility is on by default). A role `bench` is created for the bench's own queries (monitoring, seeding,
 * polling): statement counts keep only the `postgres` role's, which acs and pgbench use.
 */
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { type Cluster, postgresBinDir, startCluster } from "../../packages/server/test/support/postgres.ts"
import { makePool } from "./pg.ts"

export interface BenchCluster extends Cluster {
  readonly bin: string
  readonly dataDirectory: string
  /** The same database as `url`, as the `bench` role (its statements are left out of the counts). */
  readonly benchUrl: (database: string) => string
  /** Runs a PostgreSQL binary as the cluster's owner (root runs it as `postgres`, as the cluster was started). */
  readonly run: (binary: string, args: ReadonlyArray<string>) => { readonly status: number | null; readonly stdout: string; readonly stderr: string }
  /** Creates a database with pg_stat_statements available in it. */
  readonly createDatabase: (name: string) => Promise<void>
}

const isRoot = process.getuid?.() === 0

export const startBenchCluster = async (): Promise<BenchCluster> => {
  const cluster = await startCluster()
  const bin = postgresBinDir()
  const run = (binary: string, args: ReadonlyArray<string>) => {
    const command = Path.join(bin, binary)
    const result = isRoot
      ? spawnSync("runuser", ["-u", "postgres", "--", command, ...args], { encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
      : spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 * 2 ** 20 })
    return { status: result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? "" }
  }
  try {
    const admin = makePool({ connectionString: cluster.url("postgres"), max: 1 })
    let dataDirectory: string
    try {
      dataDirectory = (await admin.query<{ d: string }>("SELECT current_setting('data_directory') AS d")).rows[0]?.d ?? ""
      await admin.query("CREATE ROLE bench LOGIN SUPERUSER")
      await admin.query("CREATE EXTENSION pg_stat_statements")
    } finally {
      await admin.end()
    }
    const benchUrl = (database: string) => cluster.url(database).replace("postgres://postgres@", "postgres://bench@")
    return {
      ...cluster,
      bin,
      dataDirectory,
      benchUrl,
      run,
      createDatabase: async (name) => {
        const pool = makePool({ connectionString: benchUrl("postgres"), max: 1 })
        try {
          await pool.query(`CREATE DATABASE ${name}`)
        } finally {
          await pool.end()
        }
      }
    }
  } catch (error) {
    cluster.stop()
    throw error
  }
}
