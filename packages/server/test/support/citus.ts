/**
 * Citus for the tests, built from the vendored source once per machine and run as a coordinator with two
 * workers on loopback.
 *
 * The source is the repository's neighbour `../shared/vendor/` (or ACS_CITUS_SOURCE): Debian carries no Citus
 * package. `citusTree()` builds it against the machine's PostgreSQL into a private copy of that PostgreSQL
 * (its `usr/lib/postgresql/<major>` and `usr/share/postgresql/<major>`, with Citus's library and extension
 * files laid over them), so the system's PostgreSQL stays as it was: PostgreSQL finds its share and lib
 * directories relative to its own binary, so the copy runs where it lies. The copy is cached in ACS_CITUS_CACHE,
 * else ~/.cache/acs (as node24.ts caches Node 24), but as root in /var/cache/acs: the servers then run as the
 * `postgres` user, who cannot enter /root. One run builds while others wait on its lock file (a run that died
 * leaves a lock whose process is gone, and the next takes it over), and the tree lands whole or not at all. The build's packages are installed with apt-get when missing (as root), at the version of the
 * installed server, so the server's own package is not upgraded under the clusters of other runs.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { freePort, postgresBinDir } from "./postgres.ts"
import { waitFor } from "./wait.ts"

export const CITUS_VERSION = "13.2.2"

const isRoot = process.getuid?.() === 0

const repoRoot = Path.resolve(import.meta.dirname, "../../../..")

/** The packages the build needs beyond the PostgreSQL server headers (the set it was checked with). */
const BUILD_PACKAGES = [
  "libcurl4-openssl-dev",
  "liblz4-dev",
  "libzstd-dev",
  "libkrb5-dev",
  "libssl-dev",
  "libselinux1-dev",
  "libxslt1-dev",
  "libpam0g-dev",
  "libreadline-dev"
] as const

interface Source {
  readonly tarball: string
  readonly patch: string
}

/** The repository a local clone was made from (its `origin`, when that is a directory), whose neighbours a clone shares. */
const originDirectory = (): string | undefined => {
  const result = spawnSync("git", ["config", "--get", "remote.origin.url"], { cwd: repoRoot, encoding: "utf8" })
  const url = result.status === 0 ? result.stdout.trim() : ""
  const path = url.startsWith("file://") ? url.slice("file://".length) : url
  return path.startsWith("/") && Fs.existsSync(path) ? path : undefined
}

/**
 * The vendored source: ACS_CITUS_SOURCE, else `<repository>/../shared/vendor`, else beside the repository a local
 * clone was made from (a clone in a temporary directory); a missing one fails the test, saying where it looked.
 */
const citusSource = (): Source => {
  const given = process.env["ACS_CITUS_SOURCE"]
  const origin = originDirectory()
  const candidates = [
    ...(given !== undefined && given !== "" ? [given] : []),
    Path.resolve(repoRoot, "..", "shared", "vendor"),
    ...(origin === undefined ? [] : [Path.resolve(origin, "..", "shared", "vendor")])
  ]
  for (const dir of candidates) {
    const tarball = Path.join(dir, `citus-${CITUS_VERSION}.tar.gz`)
    if (Fs.existsSync(tarball)) return { tarball, patch: Path.join(dir, `citus-${CITUS_VERSION}-pg15-minor.patch`) }
  }
  throw new Error(
    `the Citus source citus-${CITUS_VERSION}.tar.gz was not found in ${candidates.join(" nor in ")}: ` +
      `put the vendored source there or point ACS_CITUS_SOURCE at its directory`
  )
}

const cacheDir = (): string => {
  const given = process.env["ACS_CITUS_CACHE"]
  if (given !== undefined && given !== "") return given
  if (isRoot) return "/var/cache/acs"
  return Path.join(process.env["XDG_CACHE_HOME"] ?? Path.join(Os.homedir(), ".cache"), "acs")
}

/** Runs a command without blocking the event loop (a build takes minutes); fails with the end of its output. */
const run = (command: string, args: ReadonlyArray<string>, options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {}): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(command, args, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, ...options }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`${command} ${args.join(" ")} failed (${error.code ?? error.signal}):\n${`${stdout}${stderr}`.slice(-6000)}`))
        : resolve(stdout))
  })

const isInstalled = (pkg: string): boolean =>
  spawnSync("dpkg-query", ["-W", "-f", "${Status}", pkg], { encoding: "utf8" }).stdout.includes("install ok installed")

const installedVersion = (pkg: string): string | undefined => {
  const result = spawnSync("dpkg-query", ["-W", "-f", "${Version}", pkg], { encoding: "utf8" })
  return result.status === 0 && result.stdout !== "" ? result.stdout : undefined
}

/**
 * Installs the server headers and the build's libraries when any is missing. The headers are asked for at the
 * installed server's version first, so apt does not upgrade the server under clusters that other runs have
 * started; only when the package lists no longer hold that version are both taken at the newest.
 */
const installBuildPackages = async (major: string): Promise<void> => {
  const dev = `postgresql-server-dev-${major}`
  const missing = [dev, ...BUILD_PACKAGES].filter((pkg) => !isInstalled(pkg))
  if (missing.length === 0) return
  if (!isRoot) throw new Error(`building Citus needs these packages: ${missing.join(" ")} (install them, or run the tests as root)`)
  // Another process may hold dpkg's lock: wait for it rather than fail.
  const aptGet = (args: ReadonlyArray<string>) =>
    run("apt-get", ["-o", "DPkg::Lock::Timeout=900", ...args], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  const server = installedVersion(`postgresql-${major}`)
  const pinned = missing.map((pkg) => (pkg === dev && server !== undefined ? `${dev}=${server}` : pkg))
  const install = (packages: ReadonlyArray<string>) => aptGet(["install", "-y", "--no-install-recommends", ...packages])
  try {
    await install(pinned)
    return
  } catch {
    // The lists may be missing or stale (a fresh image): read them and try the same version again.
  }
  await aptGet(["update"])
  try {
    await install(pinned)
  } catch {
    // That version is gone from the lists: the newest headers, and the server moved to the same release.
    await install([...missing, `postgresql-${major}`])
  }
}

const BUILD_PREFIX = "citus-build-"
const STALE_BUILD_MS = 6 * 60 * 60_000

/**
 * PostgreSQL's build system compiles every file a second time, with clang, into bitcode for the server's JIT. The
 * tests never JIT Citus's own code, so that half of the build is skipped (bench/history.md).
 */
const MAKE_OPTIONS = ["with_llvm=no"]

const sha256 = (files: ReadonlyArray<string>, options: ReadonlyArray<string>): string => {
  const hash = Crypto.createHash("sha256")
  for (const file of files) hash.update(Fs.readFileSync(file))
  hash.update(options.join(" "))
  return hash.digest("hex")
}

/** `PostgreSQL 15.18 (Debian …)` → `15.18`. */
const versionOf = (output: string): string => output.match(/(\d+(?:\.\d+)*)/)?.[1] ?? output.trim()

/** Whether the process that wrote a lock file still runs (a killed run leaves its lock behind). */
const holderRuns = (lock: string): boolean => {
  const text = Fs.readFileSync(lock, "utf8")
  // Empty, it is being written (it is created before its pid is written), unless that was long ago.
  if (text === "") return Date.now() - Fs.statSync(lock).mtimeMs < 60_000
  const pid = Number(text)
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

/** Takes the build's lock, or answers false while another run holds it; a dead run's lock is taken over. */
const takeLock = (lock: string): boolean => {
  try {
    Fs.writeFileSync(lock, String(process.pid), { flag: "wx" })
    return true
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
  }
  try {
    if (!holderRuns(lock)) Fs.rmSync(lock, { force: true })
  } catch {
    // The holder released it meanwhile.
  }
  return false
}

/** The `usr/lib/postgresql/<major>/bin` of a Citus tree, built on first use (minutes) and cached for later runs. */
export const citusTree = async (): Promise<string> => {
  const source = citusSource()
  const systemBin = postgresBinDir()
  const major = Path.basename(Path.dirname(systemBin))
  const serverVersion = versionOf(await run(Path.join(systemBin, "postgres"), ["--version"]))
  // A new source, patch or server makes a new tree; an old one stays usable by whoever still names it.
  const key = sha256([source.tarball, source.patch].filter((file) => Fs.existsSync(file)), MAKE_OPTIONS).slice(0, 12)
  const home = Path.join(cacheDir(), `citus-${CITUS_VERSION}-${key}-pg${serverVersion}`)
  const bin = Path.join(home, "usr", "lib", "postgresql", major, "bin")
  if (Fs.existsSync(bin)) return bin

  // One run builds while the others wait for its tree (two builds at once on two cores take four times as long).
  Fs.mkdirSync(cacheDir(), { recursive: true })
  const lock = `${home}.lock`
  await waitFor(
    `the Citus build of another run (${lock})`,
    async () => Fs.existsSync(bin) || takeLock(lock),
    (done) => done,
    { timeoutMs: 40 * 60_000, intervalMs: 1_000, show: () => "still building" }
  )
  try {
    if (!Fs.existsSync(bin)) await build(source, systemBin, major, home)
  } finally {
    Fs.rmSync(lock, { force: true })
  }
  return bin
}

/** Builds the tree in a directory of its own and moves it to `home` whole. */
const build = async (source: Source, systemBin: string, major: string, home: string): Promise<void> => {
  await installBuildPackages(major)
  const pgConfig = Path.join(systemBin, "pg_config")
  const headers = versionOf(await run(pgConfig, ["--version"]))
  const server = versionOf(await run(Path.join(systemBin, "postgres"), ["--version"]))
  if (headers !== server) throw new Error(`the PostgreSQL headers (${headers}) and server (${server}) differ: Citus built on them would not load`)

  // A build whose run was killed leaves its directory; one that old is nobody's now.
  for (const entry of Fs.readdirSync(cacheDir())) {
    const path = Path.join(cacheDir(), entry)
    if (entry.startsWith(BUILD_PREFIX) && Date.now() - Fs.statSync(path).mtimeMs > STALE_BUILD_MS) Fs.rmSync(path, { recursive: true, force: true })
  }
  const work = Fs.mkdtempSync(Path.join(cacheDir(), BUILD_PREFIX))
  try {
    const tree = Path.join(work, "tree")
    const src = Path.join(work, "src")
    Fs.mkdirSync(Path.join(tree, "usr", "lib", "postgresql"), { recursive: true })
    Fs.mkdirSync(Path.join(tree, "usr", "share", "postgresql"), { recursive: true })
    await run("cp", ["-a", Path.dirname(systemBin), Path.join(tree, "usr", "lib", "postgresql", major)])
    await run("cp", ["-a", `/usr/share/postgresql/${major}`, Path.join(tree, "usr", "share", "postgresql", major)])

    Fs.mkdirSync(src)
    await run("tar", ["-xzf", source.tarball, "-C", src, "--strip-components=1"])
    // Newer PostgreSQL 15 minors export have_createdb_privilege, which Citus 13.2.2 still defines itself.
    const includeServer = (await run(pgConfig, ["--includedir-server"])).trim()
    const dbcommands = Fs.readFileSync(Path.join(includeServer, "commands", "dbcommands.h"), "utf8")
    if (dbcommands.includes("have_createdb_privilege")) await run("patch", ["-p1", "-i", source.patch], { cwd: src })
    await run("./configure", [`PG_CONFIG=${pgConfig}`], { cwd: src })
    await run("make", [`-j${Math.max(1, Os.availableParallelism())}`, ...MAKE_OPTIONS], { cwd: src })
    await run("make", ["install", `DESTDIR=${tree}`, ...MAKE_OPTIONS], { cwd: src })

    // mkdtemp made the directory private; the servers run as `postgres` when we are root.
    Fs.chmodSync(tree, 0o755)
    // In place whole or not at all; a run that took over a dead run's lock may race one more: its tree is as good.
    try {
      Fs.renameSync(tree, home)
    } catch (error) {
      if (!Fs.existsSync(home)) throw error
    }
  } finally {
    Fs.rmSync(work, { recursive: true, force: true })
  }
}

const asPostgres = (command: string, args: ReadonlyArray<string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const [file, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, [...args]]
    execFile(file, argv, { encoding: "utf8" }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(" ")} failed: ${stderr || stdout}`)) : resolve(stdout))
  })

export interface CitusNode {
  readonly port: number
  readonly url: (database: string) => string
}

export interface CitusCluster {
  readonly coordinator: CitusNode
  /** The coordinator's server log (pg_ctl -l). */
  readonly coordinatorLog: string
  readonly workers: ReadonlyArray<CitusNode>
  /** Creates `database` on every node with the citus extension, and registers the workers in the coordinator's. */
  readonly createDatabase: (database: string) => Promise<string>
  /** Stops every node at once and removes their data. */
  readonly stop: () => Promise<void>
}

const sql = async (url: string, text: string): Promise<void> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** A coordinator and two workers, each a PostgreSQL of the Citus tree with citus preloaded on its own loopback port. */
export const startCitusCluster = async (): Promise<CitusCluster> => {
  const bin = await citusTree()
  if (isRoot && spawnSync("runuser", ["-u", "postgres", "--", "test", "-x", Path.join(bin, "postgres")]).status !== 0) {
    throw new Error(`the postgres user, whom the servers run as, cannot run ${bin}: point ACS_CITUS_CACHE at a directory it can read`)
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-citus-"))
  Fs.chmodSync(dir, 0o777)
  if (isRoot) execFileSync("chown", ["postgres", dir])
  const names = ["coordinator", "worker1", "worker2"] as const
  const started: Array<string> = []
  const stop = async () => {
    try {
      await Promise.allSettled(started.map((data) => asPostgres(Path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "-t", "600", "stop"])))
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    const nodes = await Promise.all(names.map(async (name) => {
      const data = Path.join(dir, name)
      await asPostgres(Path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
      const port = await freePort()
      const options = [
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
        // Citus must come first in the list; pg_stat_statements as on the suite's cluster (postgres.ts).
        "-c shared_preload_libraries=citus,pg_stat_statements"
      ].join(" ")
      // pg_ctl -w returns once the server accepts connections; -t 600: a busy machine may need long.
      await asPostgres(Path.join(bin, "pg_ctl"), ["-D", data, "-l", Path.join(dir, `${name}.log`), "-w", "-t", "600", "-o", options, "start"])
      started.push(data)
      const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
      await waitFor(`the Citus ${name} to accept connections`, () => sql(url("postgres"), "SELECT 1"), () => true, { ignoreErrors: true })
      return { port, url }
    }))
    const [coordinator, ...workers] = nodes as [CitusNode, CitusNode, CitusNode]
    return {
      coordinator,
      coordinatorLog: Path.join(dir, "coordinator.log"),
      workers,
      createDatabase: async (database) => {
        await Promise.all(nodes.map(async (node) => {
          await sql(node.url("postgres"), `CREATE DATABASE ${database}`)
          await sql(node.url(database), "CREATE EXTENSION citus")
        }))
        await sql(coordinator.url(database), `SELECT citus_set_coordinator_host('127.0.0.1', ${coordinator.port})`)
        for (const worker of workers) await sql(coordinator.url(database), `SELECT citus_add_node('127.0.0.1', ${worker.port})`)
        return coordinator.url(database)
      },
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}
