/**
 * Every citation in the code points at a file of the repository: a section of docs/contract.md by its number,
 * a decision's file under docs/decisions/ (and, when quoted, one of its headings), another doc or the bench.
 * None points at a document that is not in the repository (the specification and design notes acs was built
 * from) or at an issue number, which a reader of the code cannot follow.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { headings, readRepoFile, repoRoot } from "../support/markdown.ts"

/** Where code lives: each package's src and test, and the root's scripts. */
const codeDirs = (): Array<string> => [
  ...Fs.readdirSync(Path.join(repoRoot, "packages")).flatMap((name) =>
    ["src", "test"].map((dir) => Path.join("packages", name, dir)).filter((dir) => Fs.existsSync(Path.join(repoRoot, dir)))
  ),
  "scripts"
]

const codeFiles = (dir: string): Array<string> =>
  Fs.readdirSync(Path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name === "dist" ? [] : codeFiles(path)
    return /\.(tsx?|m?js|sql)$/.test(entry.name) ? [path] : []
  })

/** This file names what it forbids; every other file is read. */
const SELF = Path.relative(repoRoot, import.meta.filename)

const files = codeDirs().flatMap(codeFiles).filter((file) => file !== SELF)

/** Each line of every code file, with where it is. */
const lines = files.flatMap((file) =>
  Fs.readFileSync(Path.join(repoRoot, file), "utf8").split("\n").map((text, index) => ({ where: `${file}:${index + 1}`, text }))
)

/** Documents outside the repository, and issue numbers: nothing a reader of the code can open. */
const FORBIDDEN: ReadonlyArray<readonly [string, RegExp]> = [
  ["a design document outside the repository", /\b(?:API|DESIGN|SPEC|UPSTREAM[-\w]*)\.md\b|\bDESIGN\b/],
  ["the specification by section: cite docs/contract.md <section>", /\bSPEC\s+§?\d/],
  ["an issue number: cite the doc that says why, or say it", /\bissues?\s+#?\d+/i]
]

/** The section numbers docs/contract.md has (`## 5.`, `### 5.1`). */
const contractSections = new Set(
  headings(readRepoFile("docs/contract.md")).flatMap((heading) => {
    const number = /^(\d+(?:\.\d+)*)\.?\s/.exec(heading.text)
    return number === null ? [] : [number[1]!]
  })
)

describe("citations in the code", () => {
  it("reads the code of every package and the scripts", () => {
    expect(files.some((file) => file.startsWith("packages/server/src/"))).toBe(true)
    expect(files.some((file) => file.startsWith("scripts/"))).toBe(true)
    expect(lines.length).toBeGreaterThan(10_000)
  })

  it.each(FORBIDDEN)("never cite %s", (_what, pattern) => {
    expect(lines.filter((line) => pattern.test(line.text)).map((line) => `${line.where}: ${line.text.trim()}`)).toEqual([])
  })

  it("cite files of the repository that exist", () => {
    const missing = lines.flatMap((line) =>
      // A path as written (all of it: `(?=(…))\1` takes it whole), not a part of a URL or of another path, nor a
      // pattern (`docs/console-*.png`); a sentence's full stop after it is not part of it.
      [...line.text.matchAll(/(?<![\w/.-])(?=((?:docs|bench)\/[\w./-]+|README\.md))\1(?![*<{$])/g)]
        .map((match) => match[1]!.replace(/[.-]+$/, ""))
        .filter((path) => !Fs.existsSync(Path.join(repoRoot, path)))
        .map((path) => `${line.where}: ${path}`)
    )
    expect(missing).toEqual([])
  })

  it("cite sections of docs/contract.md it has", () => {
    const unknown = lines.flatMap((line) =>
      [...line.text.matchAll(/docs\/contract\.md(?:'s)?\s+(\d+(?:\.\d+)*)/g)]
        .map((match) => match[1]!.replace(/\.$/, ""))
        .filter((section) => !contractSections.has(section))
        .map((section) => `${line.where}: section ${section}`)
    )
    expect(contractSections.has("5.1")).toBe(true)
    expect(unknown).toEqual([])
  })

  it("quote headings a decision file has", () => {
    const unknown = lines.flatMap((line) =>
      [...line.text.matchAll(/(docs\/decisions\/[\w-]+\.md),?\s+"([^"]+)"/g)].flatMap((match) => {
        const path = match[1]!
        if (!Fs.existsSync(Path.join(repoRoot, path))) return [] // the test above names it
        const titles = headings(readRepoFile(path)).map((heading) => heading.text.replace(/`/g, ""))
        return titles.includes(match[2]!) ? [] : [`${line.where}: ${path} has no heading "${match[2]}"`]
      })
    )
    expect(unknown).toEqual([])
  })
})
