/**
 * How the tests start acs processes: from the production build (scripts/build.ts, what `pnpm start` and
 * `pnpm acs` run), made once per test run by the global setup into a directory of its own, so the suites
 * test the very JavaScript that ships and pay no TypeScript loader per process (tsx's hooks see every one of
 * the hundreds of modules: seconds of CPU for each of the suite's ~40 servers and ~80 `acs` commands).
 *
 * Without that build (`ACS_TEST_TSX=1`, or outside vitest, as in scripts/bench) every process runs the
 * sources through tsx. A few tests always do (`via: "tsx"`), so the development path stays covered.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { buildAll, ENTRIES, type Entry } from "../../../../scripts/build.ts"

/** The repository root (this file is packages/server/test/support/entries.ts). */
export const repoRoot = Path.resolve(import.meta.dirname, "../../../..")

export type { Entry }

export type Via = "bundle" | "tsx"

/** Set by the global setup to the directory holding `server.mjs` and `cli.mjs`; inherited by the test workers. */
const BUNDLE_DIR = "ACS_TEST_BUNDLE_DIR"

/** The arguments to `node` that run `entry`: from the run's bundle when there is one and `via` allows it. */
export const nodeArgs = (entry: Entry, via: Via = "bundle"): Array<string> => {
  const dir = process.env[BUNDLE_DIR]
  if (via === "bundle" && dir !== undefined && dir !== "") return ["--enable-source-maps", Path.join(dir, `${entry}.mjs`)]
  return ["--import", "tsx", Path.join(repoRoot, ENTRIES[entry])]
}

/**
 * Builds both entry points into a fresh directory under the repository's `.tmp/` (inside the repository, so
 * the build's few external packages resolve from its node_modules as they do from `dist/`) and points
 * `nodeArgs` at it (in this process, and in the test workers started after it); returns the clean-up. Does
 * nothing with ACS_TEST_TSX=1, or when another project's global setup of the same run already built them.
 */
export const buildEntries = async (): Promise<() => void> => {
  if (process.env["ACS_TEST_TSX"] === "1") return () => {}
  const existing = process.env[BUNDLE_DIR]
  if (existing !== undefined && Fs.existsSync(Path.join(existing, "cli.mjs"))) return () => {}
  const parent = Path.join(repoRoot, ".tmp")
  Fs.mkdirSync(parent, { recursive: true })
  const dir = Fs.mkdtempSync(Path.join(parent, "test-build-"))
  await buildAll(dir)
  process.env[BUNDLE_DIR] = dir
  return () => {
    delete process.env[BUNDLE_DIR]
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}
