/**
 * What an unauthenticated sign-in flood costs in heap (docs/decisions/access-and-keys.md): runs
 * packages/server/test/support/loginFloodHeap.ts in its own process (with --expose-gc, so the heap is read
 * after a full collection, undisturbed by the rest of the benchmark) and returns its scenarios.
 * `pnpm bench --only=login-flood` runs this section alone.
 */
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { repoRoot } from "../../packages/server/test/support/server.ts"
import type { FloodScenario } from "../../packages/server/test/support/loginFloodHeap.ts"

export const LOGIN_FLOOD_LOGINS = 20_000

export interface LoginFloodResult {
  readonly logins: number
  readonly scenarios: ReadonlyArray<FloodScenario>
}

export const benchLoginFlood = (log: (message: string) => void, logins = LOGIN_FLOOD_LOGINS): Promise<LoginFloodResult> =>
  new Promise((resolve, reject) => {
    log(`login flood: ${logins} sign-ins with unique emails against the rate limiter`)
    const script = Path.join(repoRoot, "packages/server/test/support/loginFloodHeap.ts")
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", script, String(logins)], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    let errors = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()))
    child.once("error", reject)
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`login flood exited with ${code}:\n${errors}`))
      try {
        resolve({ logins, scenarios: JSON.parse(output) as ReadonlyArray<FloodScenario> })
      } catch (error) {
        reject(error)
      }
    })
  })

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MiB`

/** One line per scenario: heap retained after the flood and a window later, and the windows held. */
export const describeLoginFlood = (result: LoginFloodResult): ReadonlyArray<string> =>
  result.scenarios.map((s) =>
    `${s.name}: ${s.allowed}/${s.logins} let through; heap retained ${mib(s.retainedBytes)}, a minute later ${mib(s.retainedBytesAfterWindow)}` +
    (s.windows === null ? "" : `; windows held ${s.windows}, a minute later ${s.windowsAfterWindow}`)
  )
