/**
 * A throwaway PostgreSQL cluster for the test run: found under /usr/lib/postgresql (installed with
 * apt-get when missing and we are root), initialised in a temp directory, started on a free port with
 * fsync off, and removed at the end. As root, the server runs as the `postgres` user.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

const isRoot = process.getuid?.() === 0

const findBinDir = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  if (!Fs.existsSync(root)) return undefined
  const versions = Fs.readdirSync(root).filter((v) => Fs.existsSync(Path.join(root, v, "bin", "initdb")))
  versions.sort((a, b) => Number(b) - Number(a))
  return versions[0] ? Path.join(root, versions[0], "bin") : undefined
}

export const postgresBinDir = (): string => {
  const found = findBinDir()
  if (found) return found
  if (!isRoot) throw new Error("PostgreSQL server binaries not found: install the `postgresql` package")
  execFileSync("apt-get", ["update"], { stdio: "inherit" })
  execFileSync("apt-get", ["install", "-y", "postgresql"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  const installed = findBinDir()
  if (!installed) throw new Error("apt-get installed postgresql but no initdb was found")
  return installed
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const asPostgres = (command: string, args: ReadonlyArray<string>) => {
  const result = isRoot
    ? spawnSync("runuser", ["-u", "postgres", "--", command, ...args], { encoding: "utf8" })
    : spawnSync(command, args, { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr || result.stdout}`)
  return result.stdout
}

/** As asPostgres, without blocking the event loop: requests a test sends meanwhile keep going. */
const asPostgresAsync = (command: string, args: ReadonlyArray<string>): Promise<void> =>
  new Promise((resolve, reject) => {
    const [file, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, [...args]]
    execFile(file, argv, (error, stdout, stderr) => error ? reject(new Error(`${command} failed: ${stderr || stdout}`)) : resolve())
  })

export interface Cluster {
  readonly port: number
  readonly url: (database: string) => string
  /** Stops the server as an administrator would (`pg_ctl stop -m fast`: sessions end with 57P01), keeping the data. */
  readonly halt: () => Promise<void>
  /** Starts the halted server again on the same port and data. */
  readonly resume: () => Promise<void>
  readonly stop: () => void
}

export const startCluster = async (): Promise<Cluster> => {
  const bin = postgresBinDir()
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-pg-"))
  Fs.chmodSync(dir, 0o777)
  const data = Path.join(dir, "data")
  if (isRoot) execFileSync("chown", ["postgres", dir])
  asPostgres(Path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  const port = await freePort()
  const startArgs = [
    "-D",
    data,
    "-l",
    Path.join(dir, "server.log"),
    "-w",
    // pg_ctl gives up after 60 s by default; a busy machine may need longer to start a cluster.
    "-t",
    "600",
    "-o",
    // pg_stat_statements: tests and the bench count the statements acs sends (it must be loaded at start).
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_preload_libraries=pg_stat_statements`,
    "start"
  ]
  asPostgres(Path.join(bin, "pg_ctl"), startArgs)
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    halt: () => asPostgresAsync(Path.join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "-t", "600", "stop"]),
    resume: () => asPostgresAsync(Path.join(bin, "pg_ctl"), startArgs),
    stop: () => {
      try {
        asPostgres(Path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "stop"])
      } finally {
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

export const TEMPLATE_DATABASE = "acs_template"
