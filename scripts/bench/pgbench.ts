/**
 * The proposal-shaped baseline: pgbench running, against acs's own database and tables, the transaction a key
 * proposal needs (bench/README.md): the account's advisory lock, the 24-hour count on the ledger, the ledger row,
 * the apply job. Six statements with BEGIN and COMMIT, run both ways pgbench can send them: its default simple
 * protocol (the baseline the targets are set against: bench/README.md) and `-M prepared` (what a lean
 * client of this schema could send at best, reported beside it). Its ledger rows are queued proposals as a key's are (`counts_toward_cap` false); its
 * jobs are due at `infinity`, so acs's apply worker never claims them, and the bench deletes them after each
 * run (scripts/bench/proposals.ts).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { BenchCluster } from "./cluster.ts"

/** acs's per-account proposal lock namespace (packages/server/src/policy/AutoApplyWindow.ts). */
const ACCOUNT_LOCK_NAMESPACE = 4_242_002

/** The script; the simple protocol pastes `:aid` as text, so there it is quoted (the -D values are, below). */
export const proposalScript = (protocol: PgbenchProtocol) => `
BEGIN;
SELECT pg_advisory_xact_lock(${ACCOUNT_LOCK_NAMESPACE}, hashtext(:project));
SELECT count(*) AS used FROM actions
  WHERE project_id = :project AND counts_toward_cap AND created_at > clock_timestamp() - interval '24 hours';
INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
    payload, proposed_by, counts_toward_cap, created_at)
  VALUES ('act_pgb_' || gen_random_uuid(), :org, :project, 'budget_change', 'queued', 'proposed', 'review',
    '["proposed with an API key: every key-proposed change queues for review"]'::jsonb,
    'Change the daily budget of campaign "pgbench" from 100.00 USD to 99.00 USD (-1.0%)', 'pgbench',
    '{"campaignId":"1","campaignName":"pgbench","currency":"USD","newDailyBudgetMicros":99000000,"priorDailyBudgetMicros":100000000}'::jsonb,
    '{"kind":"key","id":"key_pgbench","name":"pgbench"}'::jsonb, false,
    GREATEST(clock_timestamp(), (SELECT max(created_at) + interval '1 microsecond' FROM actions WHERE project_id = :project)))
  RETURNING action_id AS aid \\gset
INSERT INTO jobs (job_id, action_id, project_id, run_at) VALUES ('job_pgb_' || gen_random_uuid(), ${protocol === "simple" ? "':aid'" : ":aid"}, :project, 'infinity');
COMMIT;
`

/** `simple`: pgbench's default, one query string per statement; `prepared`: named statements, parsed once. */
export type PgbenchProtocol = "simple" | "prepared"

export interface PgbenchRun {
  readonly clients: number
  readonly seconds: number
  readonly transactions: number
  readonly tps: number
  readonly latencyMs: number | null
}

export interface ProposalScripts {
  readonly file: (protocol: PgbenchProtocol) => string
  readonly remove: () => void
}

/** Writes the scripts where the cluster's owner can read them; their paths and the clean-up. */
export const writeProposalScripts = (): ProposalScripts => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-pgbench-"))
  Fs.chmodSync(dir, 0o755)
  const file = (protocol: PgbenchProtocol) => Path.join(dir, `proposal-${protocol}.sql`)
  for (const protocol of ["simple", "prepared"] as const) Fs.writeFileSync(file(protocol), proposalScript(protocol), { mode: 0o644 })
  return { file, remove: () => Fs.rmSync(dir, { recursive: true, force: true }) }
}

const literal = (protocol: PgbenchProtocol, text: string) => (protocol === "simple" ? `'${text.replaceAll("'", "''")}'` : text)

/** One pgbench run of `seconds` at `clients` (as the cluster's owner, over TCP like acs). */
export const runPgbench = (options: {
  readonly cluster: BenchCluster
  readonly database: string
  readonly scripts: ProposalScripts
  readonly protocol: PgbenchProtocol
  readonly clients: number
  readonly seconds: number
  readonly orgId: string
  readonly projectId: string
}): PgbenchRun => {
  const { cluster, clients, seconds } = options
  const result = cluster.run("pgbench", [
    "-h", "127.0.0.1",
    "-p", String(cluster.port),
    "-U", "postgres",
    "-n",
    "-M", options.protocol,
    "-c", String(clients),
    "-j", String(Math.min(clients, Os.cpus().length)),
    "-T", String(seconds),
    // The simple protocol pastes a variable's text into the statement; the prepared one binds it as a parameter.
    "-D", `project=${literal(options.protocol, options.projectId)}`,
    "-D", `org=${literal(options.protocol, options.orgId)}`,
    "-f", options.scripts.file(options.protocol),
    options.database
  ])
  const out = `${result.stdout}\n${result.stderr}`
  if (result.status !== 0) throw new Error(`pgbench failed (${result.status}):\n${out}`)
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1]
  const transactions = /number of transactions actually processed: (\d+)/.exec(out)?.[1]
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1]
  const failed = /number of failed transactions: (\d+)/.exec(out)?.[1]
  if (tps === undefined || transactions === undefined) throw new Error(`pgbench printed no tps:\n${out}`)
  if (failed !== undefined && Number(failed) > 0) throw new Error(`pgbench: ${failed} failed transactions:\n${out}`)
  return {
    clients,
    seconds,
    transactions: Number(transactions),
    tps: Number(tps),
    latencyMs: latency === undefined ? null : Number(latency)
  }
}
