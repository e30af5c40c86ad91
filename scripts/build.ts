/**
 * Builds acs for production: `dist/server.mjs` (the server, `pnpm start`) and `dist/cli.mjs` (the `acs`
 * command), plain JavaScript that `node` runs with no TypeScript loader.
 *
 *   node --import tsx scripts/build.ts             build
 *   node --import tsx scripts/build.ts --if-stale  build only when a source, package.json or the lockfile is
 *                                                  newer than the last build (what `pnpm start` and `pnpm acs`
 *                                                  run first)
 *
 * Both also build the console (packages/console/scripts/build.ts, `pnpm build:console`), which the server
 * serves at `/` from packages/console/dist.
 *
 * One esbuild bundle per entry point, with the code of node_modules inlined and tree-shaken: Node then loads
 * a few files instead of the ~1,600 modules behind the entry points, which is most of the start-up time
 * (README.md). Only RUNTIME_PACKAGES stay outside, loaded by Node from node_modules: the root
 * package.json depends on them so that `dist/` resolves them. Code splitting gives each `acs` command its own
 * chunk (packages/cli/src/Commands.ts imports them lazily), so `acs --help` loads none of them.
 *
 * The test suites run the same build (packages/server/test/support/entries.ts), into a directory of their own.
 */
import { build, type BuildResult, type Plugin } from "esbuild"
import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Path from "node:path"
import { buildConsole, consoleDist } from "../packages/console/scripts/build.ts"

export const repoRoot = Path.resolve(import.meta.dirname, "..")

export const ENTRIES = {
  server: "packages/server/src/bin/api.ts",
  cli: "packages/cli/src/main.ts"
} as const

export type Entry = keyof typeof ENTRIES

/**
 * Left to Node: PGlite finds its WebAssembly and data files next to its own module, its socket server must
 * share that module, and pg may load its optional native binding. Keep them in the root package.json's
 * `dependencies`, at the versions packages/server uses.
 */
export const RUNTIME_PACKAGES = ["@electric-sql/pglite", "@electric-sql/pglite-socket", "pg", "pg-native"] as const

export const DEFAULT_OUTDIR = Path.join(repoRoot, "dist")

/** The functions' bodies (packages/server/src/db/functions/FunctionFiles.ts), copied next to the bundle. */
const FUNCTION_FILES = "packages/server/src/db/functions"

/** What the last build read, to tell whether it is stale. */
const MANIFEST = "build.json"

interface Manifest {
  readonly builtAt: number
  readonly inputs: ReadonlyArray<string>
}

/** Inputs besides the bundled files: a dependency change, or a change to this script, rebuilds too. */
const ALWAYS_INPUTS = ["package.json", "pnpm-lock.yaml", "scripts/build.ts"]

/**
 * @effect/cli imports parsers of YAML, TOML and INI configuration files at load, for options acs never
 * declares; they are ~80 CommonJS modules evaluated at every `acs` start. A stub stands in for them.
 */
const STUB_NAMESPACE = "acs-stub"

const noConfigFileParsers: Plugin = {
  name: "no-config-file-parsers",
  setup(context) {
    context.onResolve({ filter: /^(yaml|toml|ini)$/ }, (args) =>
      args.importer.includes(`${Path.sep}@effect${Path.sep}cli${Path.sep}`) ? { path: args.path, namespace: STUB_NAMESPACE } : undefined
    )
    context.onLoad({ filter: /^(yaml|toml|ini)$/, namespace: STUB_NAMESPACE }, (args) => ({
      contents: `export const parse = () => { throw new Error("acs reads no ${args.path} files") }`,
      loader: "js"
    }))
  }
}

/**
 * @effect/rpc and @effect/platform import msgpackr for their MessagePack serialization, which acs never uses
 * (RPC speaks NDJSON/JSON). Loading it costs every process ~70 KB of code and a search of the disk for its
 * native addon (msgpackr-extract). A stub stands in: the names they import, which throw if ever constructed;
 * an import of a name the stub lacks fails the build.
 */
const noMessagePack: Plugin = {
  name: "no-message-pack",
  setup(context) {
    context.onResolve({ filter: /^msgpackr$/ }, (args) =>
      args.importer.includes(`${Path.sep}@effect${Path.sep}`) ? { path: args.path, namespace: STUB_NAMESPACE } : undefined
    )
    context.onLoad({ filter: /^msgpackr$/, namespace: STUB_NAMESPACE }, () => ({
      contents: ["Packr", "Unpackr", "Encoder", "Decoder"]
        .map((name) => `export class ${name} { constructor() { throw new Error("acs uses no MessagePack") } }`)
        .join("\n"),
      loader: "js"
    }))
  }
}

/**
 * Effect's packages (effect, @effect/*) re-export every module of theirs from one index (`export * as
 * HttpClient from "./HttpClient.js"`). esbuild splits code by file: once any file reachable from an `acs` client command
 * imports such an index, every module the index names that the bundle uses anywhere lands in the chunks that
 * command loads; for @effect/platform that is the 3.3 MB Scalar page of the server's API reference. Our
 * sources' `import { HttpClient } from "@effect/platform"` are read as `import * as HttpClient from
 * "@effect/platform/HttpClient"`, the same namespace, so each file reaches only the modules it names.
 */
const barrelModules = new Map<string, ReadonlySet<string> | undefined>()

/** The modules a package's index re-exports as namespaces; undefined when the index is anything else. */
const barrelOf = (pkg: string, resolveDir: string): ReadonlySet<string> | undefined => {
  if (barrelModules.has(pkg)) return barrelModules.get(pkg)
  let names: ReadonlySet<string> | undefined
  try {
    const require = Module.createRequire(Path.join(resolveDir, "noop.js"))
    const manifestPath = require.resolve(`${pkg}/package.json`)
    const index = Fs.readFileSync(Path.join(Path.dirname(manifestPath), "dist", "esm", "index.js"), "utf8")
    // effect's index also re-exports a few functions by name (`export { pipe, … } from "./Function.js"`):
    // imports of those are left as they are.
    const statements = index.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "").replace(/export \{[^}]*\} from "[^"]*";?/g, "").split("\n").map((line) => line.trim()).filter((line) => line !== "")
    const found = statements.map((line) => /^export \* as (\w+) from "\.\/([\w/]+)\.js";?$/.exec(line))
    // A module re-exported from a subfolder (@effect/cli's `Span`, from HelpDoc/Span.js) keeps the index.
    names = found.every((match) => match !== null)
      ? new Set(found.filter((match) => match![1] === match![2]).map((match) => match![1]!))
      : undefined
  } catch {
    names = undefined
  }
  barrelModules.set(pkg, names)
  return names
}

const NAMED_IMPORT = /import\s+\{([^}]*)\}\s+from\s+"(effect|@effect\/[\w-]+)";?/g

const deepEffectImports: Plugin = {
  name: "deep-effect-imports",
  setup(context) {
    context.onLoad({ filter: /[\\/]packages[\\/][^\\/]+[\\/]src[\\/].*\.ts$/ }, (args) => {
      const source = Fs.readFileSync(args.path, "utf8")
      const resolveDir = Path.dirname(args.path)
      const contents = source.replace(NAMED_IMPORT, (statement, list: string, pkg: string) => {
        const modules = barrelOf(pkg, resolveDir)
        if (modules === undefined) return statement
        const specifiers = list.split(",").map((item) => item.trim()).filter((item) => item !== "" && !item.startsWith("type "))
        const parsed = specifiers.map((item) => /^(\w+)(?:\s+as\s+(\w+))?$/.exec(item))
        if (parsed.some((match) => match === null || !modules.has(match[1]!))) return statement
        // The same number of lines, so the sourcemap's positions stay right.
        const lines = "\n".repeat(statement.split("\n").length - 1)
        return parsed.map((match) => `import * as ${match![2] ?? match![1]!} from "${pkg}/${match![1]!}";`).join(" ") + lines
      })
      return { contents, loader: "ts", resolveDir }
    })
  }
}

/** Builds both entry points into `outdir` (emptied first) and records what they were built from. */
export const buildAll = async (outdir: string = DEFAULT_OUTDIR): Promise<BuildResult<{ metafile: true }>> => {
  Fs.rmSync(outdir, { recursive: true, force: true })
  const builtAt = Date.now()
  const result = await build({
    absWorkingDir: repoRoot,
    entryPoints: Object.entries(ENTRIES).map(([out, source]) => ({ out, in: source })),
    outdir,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    // The oldest Node acs supports (package.json `engines`).
    target: "node20",
    // Node's own resolution: no `module` condition, no `module` field.
    conditions: [],
    mainFields: ["main"],
    external: [...RUNTIME_PACKAGES],
    // CommonJS packages inlined into ESM still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __acsCreateRequire } from \"node:module\"; const require = __acsCreateRequire(import.meta.url);" },
    // Positions only: the map of the inlined node_modules with their sources would be tens of megabytes,
    // which `--enable-source-maps` would parse at the first stack trace.
    sourcemap: "linked",
    sourcesContent: false,
    // Less to parse at each start; names are kept (no identifier minification), and the sourcemap maps back.
    minifyWhitespace: true,
    minifySyntax: true,
    metafile: true,
    logLevel: "warning",
    plugins: [noConfigFileParsers, noMessagePack, deepEffectImports]
  })
  const functionFiles = Fs.readdirSync(Path.join(repoRoot, FUNCTION_FILES)).filter((name) => name.endsWith(".sql"))
  Fs.mkdirSync(Path.join(outdir, "functions"))
  for (const name of functionFiles) Fs.copyFileSync(Path.join(repoRoot, FUNCTION_FILES, name), Path.join(outdir, "functions", name))
  // `acs` runs as a program too (package.json `bin`, /usr/local/bin/acs in the image).
  Fs.chmodSync(Path.join(outdir, "cli.mjs"), 0o755)
  // Files only: the stubs' inputs (`acs-stub:yaml`) exist nowhere on disk.
  const files = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith(`${STUB_NAMESPACE}:`))
  const manifest: Manifest = { builtAt, inputs: [...ALWAYS_INPUTS, ...files, ...functionFiles.map((name) => `${FUNCTION_FILES}/${name}`)] }
  Fs.writeFileSync(Path.join(outdir, MANIFEST), JSON.stringify(manifest))
  return result
}

const readManifest = (outdir: string): Manifest | undefined => {
  try {
    const parsed: unknown = JSON.parse(Fs.readFileSync(Path.join(outdir, MANIFEST), "utf8"))
    if (
      typeof parsed === "object" && parsed !== null && "builtAt" in parsed && typeof parsed.builtAt === "number" &&
      "inputs" in parsed && Array.isArray(parsed.inputs) && parsed.inputs.every((input) => typeof input === "string")
    ) {
      return { builtAt: parsed.builtAt, inputs: parsed.inputs }
    }
    return undefined
  } catch {
    return undefined
  }
}

/** True when `outdir` lacks an entry point, or any file the last build read changed (or went) since. */
export const isStale = (outdir: string = DEFAULT_OUTDIR): boolean => {
  const manifest = readManifest(outdir)
  if (manifest === undefined) return true
  if (Object.keys(ENTRIES).some((entry) => !Fs.existsSync(Path.join(outdir, `${entry}.mjs`)))) return true
  return manifest.inputs.some((input) => {
    const stat = Fs.statSync(Path.resolve(repoRoot, input), { throwIfNoEntry: false })
    return stat === undefined || stat.mtimeMs >= manifest.builtAt
  })
}

/** The console's sources: it bundles its own code and the API declaration. */
const CONSOLE_SOURCES = ["packages/console/src", "packages/console/scripts", "packages/domain/src"]

const newestIn = (dir: string): number =>
  Fs.readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = Path.join(dir, entry.name)
    return Math.max(newest, entry.isDirectory() ? newestIn(path) : Fs.statSync(path).mtimeMs)
  }, 0)

/** True when the console was never built, or a source of it changed since. */
export const isConsoleStale = (): boolean => {
  const built = Fs.statSync(Path.join(consoleDist, "index.html"), { throwIfNoEntry: false })
  if (built === undefined) return true
  return CONSOLE_SOURCES.some((dir) => Fs.existsSync(Path.join(repoRoot, dir)) && newestIn(Path.join(repoRoot, dir)) >= built.mtimeMs)
}

const timed = async (what: string, run: () => Promise<unknown>) => {
  const started = performance.now()
  await run()
  process.stderr.write(`acs: built ${what} in ${Math.round(performance.now() - started)} ms\n`)
}

const main = async () => {
  const ifStale = process.argv.includes("--if-stale")
  if (!ifStale || isConsoleStale()) await timed("the console (packages/console/dist)", buildConsole)
  if (!ifStale || isStale()) await timed("dist/server.mjs and dist/cli.mjs", () => buildAll())
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === Path.resolve(import.meta.filename)) await main()
