/**
 * How the tests start acs processes. `pnpm start` and `pnpm acs` run `node --import tsx <package>/src/main.ts`;
 * loading that way costs seconds of CPU per process (tsx's loader hooks see every one of the hundreds of
 * modules), which the suite pays for each of its ~40 servers and ~80 `acs` commands, and many times over on
 * a busy 2-core machine. So the global setup bundles the two entry points once per run, with the esbuild
 * transform tsx applies: the workspace's own code (`packages/*`) inlined, every package of node_modules
 * left to Node at the absolute path Node itself resolves it to (same files, same module instances). A process
 * started from the bundle loads in a fraction of the time and runs the same source.
 *
 * Without the bundle (`ACS_TEST_TSX=1`, or outside vitest, as in scripts/bench) every process goes through
 * tsx. A few tests always do (`via: "tsx"`), so the README's own commands stay covered.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** The repository root (this file is packages/server/test/support/entries.ts). */
export const repoRoot = Path.resolve(import.meta.dirname, "../../../..")

export type Entry = "server" | "cli"

export type Via = "bundle" | "tsx"

const SOURCES: Record<Entry, string> = {
  server: "packages/server/src/main.ts",
  cli: "packages/cli/src/main.ts"
}

/** Set by the global setup to the directory holding `server.mjs` and `cli.mjs`; inherited by the test workers. */
const BUNDLE_DIR = "ACS_TEST_BUNDLE_DIR"

/** The arguments to `node` that run `entry`: from the run's bundle when there is one and `via` allows it. */
export const nodeArgs = (entry: Entry, via: Via = "bundle"): Array<string> => {
  const dir = process.env[BUNDLE_DIR]
  if (via === "bundle" && dir !== undefined && dir !== "") return ["--enable-source-maps", Path.join(dir, `${entry}.mjs`)]
  return ["--import", "tsx", Path.join(repoRoot, SOURCES[entry])]
}

/**
 * Bundles both entry points into a fresh temporary directory and points `nodeArgs` at it (in this process,
 * and in the test workers started after it); returns the clean-up. Does nothing with ACS_TEST_TSX=1, or when
 * another project's global setup of the same run already built them.
 */
export const buildEntries = async (): Promise<() => void> => {
  if (process.env["ACS_TEST_TSX"] === "1") return () => {}
  const existing = process.env[BUNDLE_DIR]
  if (existing !== undefined && Fs.existsSync(Path.join(existing, "cli.mjs"))) return () => {}
  const { build } = await import("esbuild")
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-entries-"))
  await build({
    entryPoints: Object.entries(SOURCES).map(([out, source]) => ({ out, in: Path.join(repoRoot, source) })),
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: `node${process.versions.node}`,
    // Node's own resolution: no `module` condition, no `module` field.
    conditions: [],
    mainFields: ["main"],
    sourcemap: "linked",
    logLevel: "warning",
    plugins: [{
      name: "node-modules-stay-external",
      setup(context) {
        context.onResolve({ filter: /^[^./]/ }, async (args) => {
          if (args.pluginData === "resolving") return undefined
          const resolved = await context.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: "resolving"
          })
          if (resolved.errors.length > 0) return { errors: resolved.errors }
          // Node built-ins are external anyway; the workspace packages (`@acs/*`) are bundled like relative imports.
          if (resolved.external || !resolved.path.split(Path.sep).includes("node_modules")) return undefined
          return { path: resolved.path, external: true }
        })
      }
    }]
  })
  process.env[BUNDLE_DIR] = dir
  return () => {
    delete process.env[BUNDLE_DIR]
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}
