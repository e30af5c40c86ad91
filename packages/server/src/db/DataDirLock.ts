/**
 * The embedded PGlite has no lock of its own: two processes opening one data directory would both write to
 * it. Whoever opens it (the server, the CLI) holds `<ACS_DATA_DIR>/acs.lock` (the owner's pid) meanwhile,
 * and nobody opens it while another live process holds the lock.
 */
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The embedded database is open in another process (the server, or another `acs`). */
export class DatabaseBusy extends Schema.TaggedError<DatabaseBusy>()("DatabaseBusy", {
  message: Schema.String
}) {}

export const LOCK_FILE = "acs.lock"

interface LockOwner {
  readonly pid: number
  readonly owner: string
  readonly since: string
}

const readOwner = (file: string): LockOwner | undefined => {
  try {
    const parsed: unknown = JSON.parse(Fs.readFileSync(file, "utf8"))
    if (typeof parsed === "object" && parsed !== null && "pid" in parsed && typeof parsed.pid === "number") {
      const owner = "owner" in parsed && typeof parsed.owner === "string" ? parsed.owner : "unknown"
      const since = "since" in parsed && typeof parsed.since === "string" ? parsed.since : ""
      return { pid: parsed.pid, owner, since }
    }
    return undefined
  } catch {
    return undefined
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return typeof error === "object" && error !== null && "code" in error && error.code === "EPERM"
  }
}

const busy = (dataDir: string, holder: LockOwner | undefined) =>
  new DatabaseBusy({
    message: `the embedded database under ${dataDir} is in use${
      holder ? ` by ${holder.owner} (pid ${holder.pid})` : ""
    }: stop the acs server first, or use the REST API (POST/GET/DELETE /api/v1/keys) while it runs`
  })

const tryAcquire = (dataDir: string, file: string, owner: string): Effect.Effect<boolean, DatabaseBusy> =>
  Effect.suspend(() => {
    const self: LockOwner = { pid: process.pid, owner, since: new Date().toISOString() }
    try {
      Fs.writeFileSync(file, JSON.stringify(self), { flag: "wx" })
      return Effect.succeed(true)
    } catch (error) {
      if (!(typeof error === "object" && error !== null && "code" in error && error.code === "EEXIST")) {
        return Effect.die(error)
      }
    }
    const holder = readOwner(file)
    if (holder !== undefined && holder.pid !== process.pid && isAlive(holder.pid)) {
      return Effect.fail(busy(dataDir, holder))
    }
    if (holder === undefined) {
      // Being written right now, or garbage: a young file is someone starting up.
      const stat = Fs.statSync(file, { throwIfNoEntry: false })
      if (stat !== undefined && Date.now() - stat.mtimeMs < 5_000) return Effect.fail(busy(dataDir, undefined))
    }
    // A stale lock left by a process that is gone: remove it (unless someone took it over meanwhile) and retry.
    if (readOwner(file)?.pid === holder?.pid) Fs.rmSync(file, { force: true })
    return Effect.succeed(false)
  })

/** Holds the data directory's lock for the lifetime of the scope. */
export const lockDataDir = (dataDir: string, owner: string) =>
  Effect.gen(function*() {
    Fs.mkdirSync(dataDir, { recursive: true })
    const file = Path.join(dataDir, LOCK_FILE)
    let acquired = yield* tryAcquire(dataDir, file, owner)
    if (!acquired) acquired = yield* tryAcquire(dataDir, file, owner)
    if (!acquired) return yield* busy(dataDir, readOwner(file))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (readOwner(file)?.pid === process.pid) Fs.rmSync(file, { force: true })
      })
    )
  })
