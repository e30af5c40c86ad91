/**
 * The docs stay true to themselves and to the code: the README stays short, every link between the
 * repository's Markdown files lands on a file and a heading that exist, the decisions index has one row per
 * decision with the status its file gives it, and every setting the code reads is in docs/configuration.md.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { headings, links, markdownFiles, readRepoFile, repoRoot } from "../support/markdown.ts"

const README_MAX_LINES = 350

const DECISIONS = "docs/decisions"

/** README.md and every Markdown file under docs/ and bench/. */
const documents = (): Array<string> => ["README.md", ...markdownFiles("docs"), ...markdownFiles("bench")]

const anchorsOf = (path: string): Set<string> => new Set(headings(readRepoFile(path)).map((heading) => heading.anchor))

/** A link's target as a repository path and anchor, or undefined for a link that leaves the repository. */
const resolve = (from: string, target: string): { readonly path: string; readonly anchor: string | undefined } | undefined => {
  if (/^[a-z]+:/i.test(target)) return undefined
  const [file, anchor] = target.split("#", 2) as [string, string | undefined]
  const path = file === "" ? from : Path.posix.normalize(Path.posix.join(Path.posix.dirname(from), file))
  return { path, anchor }
}

describe("the README", () => {
  it(`stays within ${README_MAX_LINES} lines`, () => {
    const lines = readRepoFile("README.md").split("\n").length - 1
    expect(lines, "README.md: move reference material to docs/ and link it").toBeLessThanOrEqual(README_MAX_LINES)
  })
})

describe("links between the docs", () => {
  it("land on a file of the repository and on a heading it has", () => {
    const dead: Array<string> = []
    for (const from of documents()) {
      for (const link of links(readRepoFile(from))) {
        const to = resolve(from, link.target)
        if (to === undefined) continue
        const where = `${from}:${link.line} → ${link.target}`
        if (to.path.startsWith("..") || !Fs.existsSync(Path.join(repoRoot, to.path))) {
          dead.push(`${where}: no such file`)
        } else if (to.anchor !== undefined && to.anchor !== "") {
          if (!to.path.endsWith(".md")) dead.push(`${where}: an anchor into a file that is not Markdown`)
          else if (!anchorsOf(to.path).has(to.anchor)) dead.push(`${where}: no such heading`)
        }
      }
    }
    expect(dead).toEqual([])
  })
})

/** What a decision's status names: its kind and the decisions (`file#anchor`) it points at. */
interface Status {
  readonly kind: "accepted" | "amended" | "superseded"
  readonly by: ReadonlyArray<string>
}

const statusTargets = (from: string, text: string): Array<string> =>
  links(text).flatMap((link) => {
    const to = resolve(from, link.target)
    return to === undefined ? [] : [`${to.path}#${to.anchor ?? ""}`]
  }).sort()

/** Each decision of an area file (`### Title`) with the status line under it, if any. */
const decisionsOf = (path: string): Array<{ readonly key: string; readonly line: number; readonly status: Status }> => {
  const lines = readRepoFile(path).split("\n")
  return headings(readRepoFile(path)).filter((heading) => heading.level === 3).map((heading) => {
    const next = lines.slice(heading.line).find((line) => line.trim() !== "") ?? ""
    const marked = /^\*(Amended|Superseded) by (.+)\.\*$/.exec(next)
    const status: Status = marked === null
      ? { kind: "accepted", by: [] }
      : { kind: marked[1] === "Amended" ? "amended" : "superseded", by: statusTargets(path, marked[2]!) }
    return { key: `${path}#${heading.anchor}`, line: heading.line, status }
  })
}

/** The index's rows: the decision each links to, its date and its status. */
const indexRows = (): Array<{ readonly key: string; readonly date: string; readonly status: Status; readonly line: number }> => {
  const index = `${DECISIONS}/README.md`
  return readRepoFile(index).split("\n").flatMap((text, i) => {
    const row = /^\| (\d{4}-\d{2}-\d{2}) \| (accepted|amended by .+|superseded by .+) \| (.+) \|$/.exec(text)
    if (row === null) return []
    const decision = statusTargets(index, row[3]!)
    const kind = row[2]!.split(" ")[0] as Status["kind"]
    return [{ key: decision[0] ?? "", date: row[1]!, status: { kind, by: statusTargets(index, row[2]!) }, line: i + 1 }]
  })
}

describe("the decisions index", () => {
  const areas = markdownFiles(DECISIONS).filter((path) => path !== `${DECISIONS}/README.md`)
  const decisions = areas.flatMap(decisionsOf)
  const rows = indexRows()

  it("has decisions in several area files", () => {
    expect(areas.length).toBeGreaterThanOrEqual(8)
    expect(decisions.length).toBeGreaterThan(100)
  })

  it("has one row per decision, and no row for anything else", () => {
    const indexed = rows.map((row) => row.key).sort()
    const written = decisions.map((decision) => decision.key).sort()
    expect(indexed).toEqual(written)
  })

  it("dates each decision with a real day", () => {
    for (const row of rows) {
      const day = new Date(`${row.date}T00:00:00Z`)
      expect(day.toISOString().slice(0, 10), `${DECISIONS}/README.md:${row.line}`).toBe(row.date)
    }
  })

  it("gives each decision the status its file gives it, pointing at decisions that exist", () => {
    const byKey = new Map(decisions.map((decision) => [decision.key, decision]))
    for (const row of rows) {
      const decision = byKey.get(row.key)
      expect(decision?.status, `${DECISIONS}/README.md:${row.line} (${row.key})`).toEqual(row.status)
      for (const target of row.status.by) expect(byKey.has(target), `${row.key} → ${target}`).toBe(true)
      expect(row.status.kind === "accepted" || row.status.by.length > 0, row.key).toBe(true)
    }
  })
})

/** Every `packages/<name>/src` directory's source files. */
const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : sourceFiles(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })

describe("docs/configuration.md", () => {
  it("lists every environment variable the code reads through Config", () => {
    const table = readRepoFile("docs/configuration.md")
    const packages = Path.join(repoRoot, "packages")
    const read = new Set(
      Fs.readdirSync(packages).flatMap((name) => {
        const src = Path.join(packages, name, "src")
        return Fs.existsSync(src) ? sourceFiles(src) : []
      }).flatMap((file) =>
        [...Fs.readFileSync(file, "utf8").matchAll(/Config\.\w+\(\s*"([A-Z][A-Z0-9_]+)"/g)].map((match) => match[1]!)
      )
    )
    expect(read.size).toBeGreaterThan(30)
    expect([...read].filter((name) => !table.includes(`\`${name}\``)).sort()).toEqual([])
  })
})
