/** Child processes of the benchmark: the bare baseline server. (acs itself starts through the test support.) */
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { freePort } from "../../packages/server/test/support/postgres.ts"
import { repoRoot } from "../../packages/server/test/support/server.ts"

export interface BareServer {
  readonly baseUrl: string
  readonly logs: () => string
  readonly stop: () => Promise<void>
}

const waitFor = async (url: string, child: ChildProcess, logs: () => string, what: string) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}:\n${logs()}`)
    try {
      const response = await fetch(url)
      if (response.status === 200) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${what} did not become ready:\n${logs()}`)
}

const stopChild = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

/** Starts scripts/bench/bareServer.ts as its own process, the same way acs runs (node --import tsx). */
export const startBareServer = async (databaseUrl: string, projectId?: string): Promise<BareServer> => {
  const port = await freePort()
  let output = ""
  const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "scripts/bench/bareServer.ts")], {
    cwd: repoRoot,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      PROJECT_ID: projectId ?? ""
    },
    // stdin stays open for the server's life: it exits when the bench does, even if the bench is killed.
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const baseUrl = `http://127.0.0.1:${port}`
  const logs = () => output
  try {
    await waitFor(`${baseUrl}/ready`, child, logs, "the bare server")
  } catch (error) {
    await stopChild(child)
    throw error
  }
  return { baseUrl, logs, stop: () => stopChild(child) }
}
