/**
 * The README's walk-through, run as written on a fresh install: the embedded defaults (no DATABASE_URL, no
 * bootstrap key), one admin with the password printed at first start, the demo accounts synced. The block
 * marked `# acs-walkthrough` is taken from the README and run by bash with curl and jq, with only the port
 * changed: the admin signs in, makes their script's write key, the script proposes a budget cut, the admin
 * approves it with their session (their agent's change, under the default four-eyes rule), it applies, and
 * the admin reverts it.
 */
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withApi } from "./support/apiClient.ts"
import { call, repoRoot, type RunningServer, startServer } from "./support/server.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

const workDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-walkthrough-"))
let server: RunningServer
let password: string

/** The README's block that begins with `# acs-walkthrough`, pointed at this test's server. */
const walkthrough = (baseUrl: string): string => {
  const readme = Fs.readFileSync(Path.join(repoRoot, "README.md"), "utf8")
  const block = /```sh\n(# acs-walkthrough\n[\s\S]*?)```/.exec(readme)
  if (block === null) throw new Error("README has no `# acs-walkthrough` block")
  expect(block[1], "the block talks to the default address").toContain("http://127.0.0.1:3000")
  return block[1]!.replaceAll("http://127.0.0.1:3000", baseUrl)
}

/** Runs a script with bash in the work directory; its output, or a failure that shows it. */
const bash = (script: string, env: Record<string, string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = spawn("bash", ["-euo", "pipefail", "-c", script], { cwd: workDir, env: { ...process.env, ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    // A hang detector, not a bound: the apply it polls for takes seconds.
    const timer = setTimeout(() => child.kill("SIGKILL"), WAIT_MS)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

const installed = (tool: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

beforeAll(async () => {
  // The walk-through's tools, as a reader of the README has them (CI machines install what is missing).
  const missing = ["curl", "jq"].filter((tool) => !installed(tool))
  if (missing.length > 0) execFileSync("apt-get", ["install", "-y", "-q", ...missing], { stdio: "ignore" })
  server = await startServer({ ACS_DATA_DIR: Path.join(workDir, "data") })
  const notice = /First start: sign in to acs as the first admin\.[\s\S]*?password +(\S+)/.exec(server.logs())
  if (notice === null) throw new Error(`no first-start notice:\n${server.logs()}`)
  password = notice[1]!
  // The reader waits for the demo's first sync too: the walk-through reads its campaigns.
  await waitFor("the demo accounts' first syncs", async () => {
    const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: "admin@acs.local", password } })
    const cookie = login.headers.getSetCookie()[0]?.split(";")[0] ?? ""
    return withApi(server.baseUrl, { cookie }, (client) =>
      client.accounts.listAccounts().pipe(Effect.flatMap(({ accounts }) =>
        Effect.forEach(accounts, ({ projectId }) =>
          Effect.map(client.warehouse.listSyncs({ path: { projectId }, urlParams: {} }), ({ syncs }) => syncs[0]?.status))
      ))
    )
  }, (syncs) => syncs.length > 0 && syncs.every((status) => status === "succeeded"), { ignoreErrors: true })
}, 600_000)

afterAll(async () => {
  await server?.stop()
  Fs.rmSync(workDir, { recursive: true, force: true })
})

describe("the README's walk-through on a fresh install", () => {
  it("runs as written: the script's change is proposed, approved by its person, applied and reverted", async () => {
    const script = `${walkthrough(server.baseUrl)}\necho "walkthrough-action=$A project=$P"\n`
    const run = await bash(script, { ACS_PASSWORD: password })
    expect(run.code, `${run.stdout.slice(-3000)}\n${run.stderr}\n${server.logs().slice(-3000)}`).toBe(0)
    const ids = /walkthrough-action=(act_\S+) project=(\S+)/.exec(run.stdout)
    expect(ids, run.stdout).not.toBeNull()
    const [, actionId, projectId] = ids!
    // The approval the walk-through made was the admin's session reviewing their script's key: it applied.
    expect(run.stdout).toContain(`"callerMay"`)
    const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: "admin@acs.local", password } })
    const cookie = login.headers.getSetCookie()[0]!.split(";")[0]!
    const action = await call(`${server.api}/accounts/${projectId}/actions/${actionId}`, { headers: { cookie } })
    expect(action.body).toMatchObject({
      kind: "budget_change",
      mode: "queued",
      proposedBy: { kind: "key", name: "bidding script", root: { kind: "person", name: expect.any(String) } },
      decidedBy: { kind: "person" }
    })
    // Its revert, the walk-through's last step, applies at once.
    const revert = await waitFor(
      "the revert to apply",
      async () => {
        const ledger = await withApi(server.baseUrl, { cookie }, (client) => client.actions.listActions({ path: { projectId: projectId! }, urlParams: { limit: 20 } }))
        return ledger.actions.find((a) => a.revertOf === actionId)
      },
      (found) => found?.status === "applied"
    )
    expect(revert).toMatchObject({ kind: "budget_change", status: "applied", proposedBy: { kind: "person" } })
  })
})
