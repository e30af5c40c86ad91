/**
 * Where the CPU of a sync goes, on Linux: this process (which hosts the simulator), the acs process, and the
 * PostgreSQL cluster (the postmaster with its reaped children plus the live backends and workers), from
 * /proc/<pid>/stat. Elsewhere every figure is null.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

interface ProcStat {
  readonly ppid: number
  readonly own: number
  readonly children: number
}

const readStat = (pid: number): ProcStat | undefined => {
  try {
    const text = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may hold spaces) start at field 3, "state".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number)
    const at = (field: number) => fields[field - 3] ?? 0
    return { ppid: at(4), own: (at(14) + at(15)) / clockTicks, children: (at(16) + at(17)) / clockTicks }
  } catch {
    return undefined
  }
}

/** User + system CPU seconds of one live process (its threads included), or null when it cannot be read. */
export const processCpuSeconds = (pid: number | undefined): number | null => {
  const stat = pid === undefined ? undefined : readStat(pid)
  return stat === undefined ? null : stat.own
}

const postgresSeconds = (postmaster: number): number | null => {
  const main = readStat(postmaster)
  if (main === undefined) return null
  let total = main.own + main.children
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat !== undefined && stat.ppid === postmaster) total += stat.own
  }
  return total
}

export interface CpuSnapshot {
  readonly at: number
  /** This process: the simulator, plus the bench's own polling. */
  readonly bench: number
  readonly acs: number | null
  readonly postgres: number | null
}

export interface CpuSpan {
  readonly wallSeconds: number
  readonly benchProcessCpuSeconds: number
  readonly acsCpuSeconds: number | null
  readonly postgresCpuSeconds: number | null
}

const round = (value: number | null) => (value === null ? null : Math.round(value * 10) / 10)

export const cpuSpan = (from: CpuSnapshot, to: CpuSnapshot): CpuSpan => ({
  wallSeconds: Math.round((to.at - from.at) / 100) / 10,
  benchProcessCpuSeconds: round(to.bench - from.bench) ?? 0,
  acsCpuSeconds: from.acs === null || to.acs === null ? null : round(to.acs - from.acs),
  postgresCpuSeconds: from.postgres === null || to.postgres === null ? null : round(to.postgres - from.postgres)
})

/** A meter for one acs process and one cluster (its postmaster pid from postmaster.pid in the data directory). */
export const cpuMeter = (acsPid: number | undefined, dataDirectory: string | undefined) => {
  let postmaster: number | undefined
  try {
    if (dataDirectory !== undefined) {
      postmaster = Number(Fs.readFileSync(`${dataDirectory}/postmaster.pid`, "utf8").split("\n")[0])
    }
  } catch {
    postmaster = undefined
  }
  return (): CpuSnapshot => {
    const usage = process.cpuUsage()
    const acs = acsPid === undefined ? undefined : readStat(acsPid)
    return {
      at: Date.now(),
      bench: (usage.user + usage.system) / 1e6,
      acs: acs === undefined ? null : acs.own + acs.children,
      postgres: postmaster === undefined ? null : postgresSeconds(postmaster)
    }
  }
}
