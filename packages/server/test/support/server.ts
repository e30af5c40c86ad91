/**
 * Starts the real server process (`packages/server/src/bin/api.ts`, bundled once per run or through tsx as the
 * README does: entries.ts) and talks to it over HTTP. Each server gets a free port and its own environment.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { nodeArgs, repoRoot, type Via } from "./entries.ts"
import { freePort } from "./postgres.ts"
import { waitFor } from "./wait.ts"

export { repoRoot }

export interface RunningServer {
  readonly baseUrl: string
  readonly api: string
  readonly process: ChildProcess
  readonly logs: () => string
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/** The secrets key every test server runs with: an in-process service over the same database reads its connections. */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString("base64")

export const BOOTSTRAP_KEY = "acs_test_bootstrap_key_0123456789abcdefghijklmnop"

/** Limits no test reaches, for suites that send thousands of requests with one key. */
export const NO_RATE_LIMITS = {
  RATE_LIMIT_READ: "1000000",
  RATE_LIMIT_WRITE: "1000000",
  RATE_LIMIT_EXPENSIVE: "1000000",
  RATE_LIMIT_LOGIN: "1000000",
  RATE_LIMIT_PASSWORD_CHECK: "1000000"
} as const

/** Waits (minutes, on a busy machine: wait.ts) for /readyz to answer 200; fails at once if the process ends. */
const waitReady = async (baseUrl: string, child: ChildProcess, logs: () => string) => {
  const exited = () => child.exitCode !== null || child.signalCode !== null
  try {
    await waitFor(
      `the server at ${baseUrl} to be ready`,
      async () => exited() ? "exited" : (await fetch(`${baseUrl}/readyz`)).status,
      (status) => status === 200 || status === "exited",
      { ignoreErrors: true, show: (status) => `/readyz answered ${status}` }
    )
  } catch (error) {
    child.kill("SIGKILL")
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs()}`)
  }
  if (exited()) throw new Error(`server exited with ${child.exitCode ?? child.signalCode}:\n${logs()}`)
}

/**
 * `via: "tsx"` runs the sources through tsx, whatever the run's build (entries.ts); `node` is the Node binary
 * (default: the one running the tests; the Node 24 smoke test passes another).
 */
export const startServer = async (
  env: Record<string, string>,
  options: { readonly via?: Via; readonly node?: string } = {}
): Promise<RunningServer> => {
  const port = await freePort()
  let output = ""
  const child = spawn(options.node ?? process.execPath, nodeArgs("server", options.via), {
    cwd: repoRoot,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", PORT: String(port), LOG_LEVEL: "warn", ACS_SECRETS_KEY: TEST_SECRETS_KEY, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const baseUrl = `http://127.0.0.1:${port}`
  const logs = () => output
  await waitReady(baseUrl, child, logs)
  return {
    baseUrl,
    api: `${baseUrl}/api/v1`,
    process: child,
    logs,
    stop: (signal = "SIGTERM") => stopProcess(child, signal)
  }
}

/** Signals a process and answers its exit code; a process that already ended has nothing left to stop. */
export const stopProcess = (child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> =>
  new Promise((resolve) => {
    // Ended by a signal, its exitCode stays null.
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
    child.once("exit", (code) => resolve(code))
    child.kill(signal)
  })

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
  readonly text: string
}

/**
 * One HTTP call, as a same-origin JSON client makes it: every unsafe method says `Content-Type:
 * application/json` (the session cookie counts only then), unless the test sets its own. The answer's body is
 * parsed as JSON when it is JSON.
 */
export const call = async (
  url: string,
  init: { readonly method?: string; readonly key?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Promise<Answer> => {
  const headers: Record<string, string> = { ...init.headers }
  if (init.key !== undefined) headers["authorization"] = `Bearer ${init.key}`
  const method = init.method ?? "GET"
  if (init.body !== undefined || (method !== "GET" && method !== "HEAD")) headers["content-type"] ??= "application/json"
  const response = await fetch(url, {
    method,
    headers,
    ...(init.body !== undefined ? { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) } : {})
  })
  const text = await response.text()
  let body: unknown = undefined
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined
  } catch {
    body = undefined
  }
  return { status: response.status, headers: response.headers, body, text }
}

/** The `error.code` of an envelope, or undefined. */
export const errorCode = (answer: Answer): string | undefined => {
  const body = answer.body
  if (typeof body !== "object" || body === null || !("error" in body)) return undefined
  const error = body.error
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined
}
