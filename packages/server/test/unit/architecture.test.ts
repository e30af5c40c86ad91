/**
 * The shape of the code (docs/decisions/architecture.md "Layers"): in packages/server/src a folder imports only
 * from folders below it, never from one above or beside it; no module of any package's src imports itself back
 * through others (type-only imports included); and `actions/pipeline/Transitions.ts` is the only writer of the
 * `actions` table. All are read from the source, so a new import or a stray UPDATE fails here.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const SRC = Path.resolve(import.meta.dirname, "../../src")

/** Lowest first. Folders on one line are independent of each other. */
const LAYERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["db", "telemetry"],
  ["events"],
  ["limits", "queue"],
  ["accounts"],
  ["auth"],
  ["settings"],
  ["warehouse"],
  ["policy"],
  ["actions"],
  ["worker", "plan", "research", "webhooks"],
  ["feeds"],
  ["operations"],
  ["rpc", "mcp"],
  ["http"],
  ["upstream"]
]

/** Edges that run up today and are being removed; none may be added. (rpc -> http and mcp -> http: gone.) */
const PENDING: ReadonlyArray<string> = []

const rank = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index] as const)))

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/** The top folder under src/ of a file, or undefined for the composition root (bin/, AppLayer.ts, WorkerMain.ts). */
const folderOf = (file: string): string | undefined => {
  const parts = Path.relative(SRC, file).split(Path.sep)
  return parts.length > 1 && parts[0] !== "bin" ? parts[0] : undefined
}

const relativeImports = (file: string): Array<string> =>
  [...Fs.readFileSync(file, "utf8").matchAll(/(?:from|import)\s+"(\.{1,2}\/[^"]+)"/g)].map((match) =>
    Path.resolve(Path.dirname(file), match[1]!)
  )

describe("packages/server/src", () => {
  it("imports only down the layers", () => {
    const upward: Array<string> = []
    for (const file of sourceFiles(SRC)) {
      const from = folderOf(file)
      if (from === undefined) continue
      expect(rank.has(from), `src/${from} is not in LAYERS`).toBe(true)
      for (const target of relativeImports(file)) {
        const to = folderOf(target)
        if (to === undefined) {
          upward.push(`${Path.relative(SRC, file)} -> the composition root`)
          continue
        }
        if (to === from || PENDING.includes(`${from} -> ${to}`)) continue
        if (rank.get(to)! >= rank.get(from)!) upward.push(`${Path.relative(SRC, file)} -> ${Path.relative(SRC, target)}`)
      }
    }
    expect(upward).toEqual([])
  })

  it("writes the actions table only in actions/pipeline/Transitions.ts (and migrations; a proposal's insert in Proposals.ts)", () => {
    const writers = sourceFiles(SRC).filter((file) => {
      const path = Path.relative(SRC, file)
      if (path === Path.join("actions", "pipeline", "Transitions.ts") || path.startsWith(Path.join("db", "migrations"))) return false
      const text = Fs.readFileSync(file, "utf8")
      // The proposal's row is inserted by its one locked statement (docs/decisions/pipeline.md); it changes no row afterwards.
      if (path === Path.join("actions", "pipeline", "Proposals.ts")) return /\b(?:UPDATE|DELETE\s+FROM)\s+actions\b/i.test(text)
      return /\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+actions\b/i.test(text)
    })
    expect(writers.map((file) => Path.relative(SRC, file))).toEqual([])
  })
})

const PACKAGES = Path.resolve(import.meta.dirname, "../../..")

/** Every module of every package's src, and the modules each imports (relative or `@acs/<package>/…`, type-only too). */
const importGraph = (): Map<string, ReadonlyArray<string>> => {
  const files = Fs.readdirSync(PACKAGES).flatMap((name) => {
    const src = Path.join(PACKAGES, name, "src")
    return Fs.existsSync(src) ? sourceModules(src) : []
  })
  const known = new Set(files)
  const resolve = (file: string, specifier: string): string | undefined => {
    const alias = /^@acs\/([a-z]+)\/(.+)$/.exec(specifier)
    const base = alias !== null
      ? Path.join(PACKAGES, alias[1]!, "src", alias[2]!)
      : specifier.startsWith(".")
      ? Path.resolve(Path.dirname(file), specifier)
      : undefined
    return base === undefined ? undefined : [base, `${base}.ts`, `${base}.tsx`].find((candidate) => known.has(candidate))
  }
  return new Map(files.map((file) => [
    file,
    [...Fs.readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].flatMap((match) => {
      const target = resolve(file, match[1]!)
      return target === undefined ? [] : [target]
    })
  ]))
}

const sourceModules = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceModules(path) : /\.tsx?$/.test(entry.name) ? [path] : []
  })

/** The strongly connected components of more than one module (Tarjan's algorithm): each is an import circle. */
const circles = (graph: Map<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (module: string): void => {
    index.set(module, index.size)
    low.set(module, index.get(module)!)
    stack.push(module)
    onStack.add(module)
    for (const next of graph.get(module) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(module, Math.min(low.get(module)!, low.get(next)!))
      } else if (onStack.has(next)) low.set(module, Math.min(low.get(module)!, index.get(next)!))
    }
    if (low.get(module) === index.get(module)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(Path.relative(PACKAGES, member))
      } while (member !== module)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const module of graph.keys()) if (!index.has(module)) visit(module)
  return found
}

describe("packages/*/src", () => {
  it("has no import circles (type-only imports included)", () => {
    const graph = importGraph()
    expect(graph.size).toBeGreaterThan(300)
    expect(circles(graph)).toEqual([])
  })

  it("finds a circle when there is one", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    expect(circles(graph)).toEqual([["a", "b", "c"].map((name) => Path.relative(PACKAGES, name))])
  })
})
