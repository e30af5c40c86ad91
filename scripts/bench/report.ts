/** The bench's output: numbers formatted, the target table, the machine and its load, the results files. */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { repoRoot } from "../../packages/server/test/support/server.ts"

export const fmt = (value: number, digits = 2) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 }) : String(value)

export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`
  return [line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n")
}

export interface TargetRow {
  readonly name: string
  readonly target: string
  readonly measured: string
  readonly value: number | null
  /** null: informational, not a target. */
  readonly pass: boolean | null
}

export const printTargets = (targets: ReadonlyArray<TargetRow>) =>
  table(
    ["target", "goal", "measured", "result"],
    targets.map((t) => [t.name, t.target, t.measured, t.pass === null ? "info" : t.pass ? "PASS" : "FAIL"])
  )

/** Load averages sampled through the run (every 5 s), to judge how busy the machine was. */
export const loadSampler = () => {
  const samples: Array<number> = [Os.loadavg()[0] ?? 0]
  const timer = setInterval(() => samples.push(Os.loadavg()[0] ?? 0), 5_000)
  timer.unref()
  return {
    stop: () => clearInterval(timer),
    summary: () => {
      const sorted = [...samples].sort((a, b) => a - b)
      const r = (v: number | undefined) => Math.round((v ?? 0) * 100) / 100
      return { samples: sorted.length, min: r(sorted[0]), median: r(sorted[Math.floor(sorted.length / 2)]), max: r(sorted[sorted.length - 1]) }
    }
  }
}

export type LoadSummary = ReturnType<ReturnType<typeof loadSampler>["summary"]>

export const machine = (load: LoadSummary) => ({
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model ?? "?",
  memoryGiB: Math.round(Os.totalmem() / 2 ** 30),
  node: process.version,
  loadAverage1m: load
})

export const describeMachine = (load: LoadSummary) =>
  `${Os.cpus().length} cores (${Os.cpus()[0]?.model ?? "?"}), node ${process.version}; load average (1 min) over the run: ` +
  `median ${load.median}, min ${load.min}, max ${load.max} (a load above ${Os.cpus().length} means other work competed for the cores)`

/** Writes bench/<name>.json; returns its path relative to the repository. */
export const writeResults = (name: string, results: unknown) => {
  const outDir = Path.join(repoRoot, "bench")
  Fs.mkdirSync(outDir, { recursive: true })
  const file = Path.join(outDir, `${name}.json`)
  Fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  return Path.relative(repoRoot, file)
}
