/**
 * The layering of packages/server/src (docs/decisions/architecture.md "Layers"): a folder
 * imports only from folders below it, never from one above or beside it; and `actions/Transitions.ts` is the
 * only writer of the `actions` table. Both are read from the source, so a new import or a stray UPDATE fails here.
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
  ["worker", "plan", "research"],
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

/** The top folder under src/ of a file, or undefined for the composition root (AppLayer.ts, main.ts). */
const folderOf = (file: string): string | undefined => {
  const parts = Path.relative(SRC, file).split(Path.sep)
  return parts.length > 1 ? parts[0] : undefined
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

  it("writes the actions table only in actions/Transitions.ts (and migrations; a proposal's insert in Proposals.ts)", () => {
    const writers = sourceFiles(SRC).filter((file) => {
      const path = Path.relative(SRC, file)
      if (path === Path.join("actions", "Transitions.ts") || path.startsWith(Path.join("db", "migrations"))) return false
      const text = Fs.readFileSync(file, "utf8")
      // The proposal's row is inserted by its one locked statement (docs/decisions/pipeline.md); it changes no row afterwards.
      if (path === Path.join("actions", "Proposals.ts")) return /\b(?:UPDATE|DELETE\s+FROM)\s+actions\b/i.test(text)
      return /\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+actions\b/i.test(text)
    })
    expect(writers.map((file) => Path.relative(SRC, file))).toEqual([])
  })
})
