/**
 * Builds the console into `dist/`: one ES module bundle (preact, the typed client and the API declaration
 * inlined; nothing fetched from a CDN at run time), its stylesheet, and index.html. acs serves the directory
 * at `/` (packages/server/src/http/ConsoleRoute.ts). Run by `pnpm build:console`, before `pnpm start` and
 * `pnpm test`, and by the browser tests' support.
 */
import { build } from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
export const consoleDist = Path.join(root, "dist")

export const buildConsole = async (): Promise<string> => {
  const assets = Path.join(consoleDist, "assets")
  Fs.rmSync(consoleDist, { recursive: true, force: true })
  Fs.mkdirSync(assets, { recursive: true })
  await build({
    entryPoints: [Path.join(root, "src", "main.tsx")],
    outdir: assets,
    entryNames: "app",
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    logLevel: "warning"
  })
  Fs.copyFileSync(Path.join(root, "src", "index.html"), Path.join(consoleDist, "index.html"))
  return consoleDist
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now()
  await buildConsole()
  console.log(`console built into ${Path.relative(process.cwd(), consoleDist)} in ${Date.now() - started} ms`)
}
