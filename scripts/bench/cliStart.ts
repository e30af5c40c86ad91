/**
 * How long `acs` takes to start: the CPU (user + system) of one `node dist/cli.mjs …` process, from start to
 * exit, for `--help`, `--version` and client commands. A client command here talks to a closed port, so what
 * is measured is loading the command and its RPC client and checking its input, not a server's answer. The
 * target is under 0.5 s of CPU each (bench/README.md); the median of RUNS runs is reported, and the worst.
 *
 *   node --import tsx scripts/bench/cliStart.ts     alone (builds dist/ first when stale)
 *   pnpm bench --only cli                           the same, from scripts/bench.ts
 */
import { spawnSync } from "node:child_process"
import * as Os from "node:os"
import * as Path from "node:path"
import { buildAll, DEFAULT_OUTDIR, isStale, repoRoot } from "../build.ts"

export const TARGET_CLI_CPU_SECONDS = 0.5

const RUNS = Number(process.env["BENCH_CLI_RUNS"] ?? 7)

/** Nothing listens there: a client command fails at once with `unreachable`, after all its loading. */
const CLOSED = "http://127.0.0.1:9"

const CASES: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["acs --help", ["--help"]],
  ["acs --version", ["--version"]],
  ["acs propose --help", ["propose", "--help"]],
  ["acs accounts (client)", ["accounts", "--url", CLOSED, "--key", "acs_bench"]],
  ["acs ledger (client)", ["ledger", "prj_bench", "--limit", "5", "--url", CLOSED, "--key", "acs_bench"]],
  ["acs propose (client)", [
    "propose",
    "budget_change",
    "prj_bench",
    "--body",
    JSON.stringify({ campaignId: "1", newDailyBudgetMicros: 45_000_000, reason: "bench" }),
    "--url",
    CLOSED,
    "--key",
    "acs_bench"
  ]]
]

export interface CliStartCase {
  readonly name: string
  readonly medianCpuSeconds: number
  readonly maxCpuSeconds: number
  readonly medianWallSeconds: number
}

export interface CliStartResult {
  readonly node: string
  readonly runs: number
  /** The machine's 1-minute load average at the end: CPU time per process grows on a busy machine. */
  readonly loadAverage: number
  readonly cases: ReadonlyArray<CliStartCase>
}

const seconds = (text: string): number => {
  const match = /^(\d+)m([\d.]+)s$/.exec(text)
  return match === null ? Number.NaN : Number(match[1]) * 60 + Number(match[2])
}

/** One run's CPU, from bash's `times` (its second line: the children's user and system time). */
const runOnce = (cli: string, args: ReadonlyArray<string>): { readonly cpu: number; readonly wall: number } => {
  const started = performance.now()
  const result = spawnSync("bash", ["-c", "\"$0\" \"$@\" >/dev/null 2>&1; times", process.execPath, cli, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1" }
  })
  const wall = (performance.now() - started) / 1000
  const [user = "", system = ""] = (result.stdout.trim().split("\n")[1] ?? "").trim().split(/\s+/)
  return { cpu: seconds(user) + seconds(system), wall }
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

export const benchCliStart = async (log: (message: string) => void = () => {}): Promise<CliStartResult> => {
  if (isStale()) {
    log("building dist/ (stale)")
    await buildAll()
  }
  const cli = Path.join(DEFAULT_OUTDIR, "cli.mjs")
  const cases = CASES.map(([name, args]) => {
    runOnce(cli, args) // warm the file cache
    const runs = Array.from({ length: RUNS }, () => runOnce(cli, args))
    log(`${name}: ${runs.map((run) => run.cpu.toFixed(2)).join(" ")} s CPU`)
    return {
      name,
      medianCpuSeconds: median(runs.map((run) => run.cpu)),
      maxCpuSeconds: Math.max(...runs.map((run) => run.cpu)),
      medianWallSeconds: median(runs.map((run) => run.wall))
    }
  })
  return { node: process.version, runs: RUNS, loadAverage: Os.loadavg()[0] ?? 0, cases }
}

export const cliStartMet = (result: CliStartResult): boolean =>
  result.cases.every((c) => c.medianCpuSeconds < TARGET_CLI_CPU_SECONDS)

export const describeCliStart = (result: CliStartResult): Array<string> => [
  `acs start-up, CPU of one process (user + system), median of ${result.runs} runs, Node ${result.node}, ` +
  `load average ${result.loadAverage.toFixed(1)}; target < ${TARGET_CLI_CPU_SECONDS} s`,
  ...result.cases.map((c) =>
    `  ${c.name.padEnd(24)} ${c.medianCpuSeconds.toFixed(2)} s CPU (worst ${c.maxCpuSeconds.toFixed(2)}), ` +
    `${c.medianWallSeconds.toFixed(2)} s wall  ${c.medianCpuSeconds < TARGET_CLI_CPU_SECONDS ? "ok" : "MISSED"}`
  )
]

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === Path.resolve(import.meta.filename)) {
  const result = await benchCliStart((message) => process.stderr.write(`[cli] ${message}\n`))
  process.stdout.write(`${describeCliStart(result).join("\n")}\n`)
  if (!cliStartMet(result)) process.exitCode = 1
}
