/**
 * Runs `acs` as a real process: from the run's bundle of packages/cli/src/main.ts, or as `pnpm acs` does,
 * `node --import tsx packages/cli/src/main.ts …` (packages/server/test/support/entries.ts).
 */
import { spawn } from "node:child_process"
import { expect } from "vitest"
import { nodeArgs, repoRoot, type Via } from "../../../server/test/support/entries.ts"

export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Only PATH and HOME are inherited: the command sees exactly the environment a test gives it. `via: "tsx"`
 * runs it as `pnpm acs` does, whatever the run's bundle. `input` is written to its stdin, which is then closed.
 */
export const runAcs = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: { readonly via?: Via; readonly input?: string } = {}
): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs("cli", options.via), ...args], {
      cwd: repoRoot,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    child.stdin.end(options.input)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Runs `f` on every item, `size` at a time: each run is a Node process loading the whole module graph. */
export const inBatches = async <A, B>(items: ReadonlyArray<A>, size: number, f: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = []
  for (let i = 0; i < items.length; i += size) results.push(...await Promise.all(items.slice(i, i + size).map(f)))
  return results
}

/** The single JSON document a `--json` run printed on stdout. */
export const jsonOf = <A>(run: Run): A => {
  expect(run.code, run.stderr).toBe(0)
  return JSON.parse(run.stdout) as A
}
