/**
 * The repository's Markdown as GitHub shows it: headings with the anchors GitHub gives them, and the links a
 * page makes. The docs tests (test/unit/docs.test.ts, test/unit/citations.test.ts) check citations and links
 * against these, so a renamed heading or a moved file fails a test instead of leaving a dead link.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export const repoRoot = Path.resolve(import.meta.dirname, "../../../..")

export const readRepoFile = (path: string): string => Fs.readFileSync(Path.join(repoRoot, path), "utf8")

export interface Heading {
  readonly level: number
  /** The heading as written, inline code marks and all. */
  readonly text: string
  /** The anchor GitHub gives it: `#` + this. */
  readonly anchor: string
  /** 1-based line of the heading. */
  readonly line: number
}

/** The text a heading renders as: code marks and emphasis dropped, a link's text kept. */
const rendered = (text: string): string =>
  text.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "").replace(/\*\*|__/g, "")

/** GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
export const anchorOf = (text: string): string =>
  rendered(text).toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(/ /g, "-")

/** Lines outside fenced code blocks, with their 1-based numbers. */
const proseLines = (markdown: string): Array<{ readonly text: string; readonly line: number }> => {
  const lines: Array<{ readonly text: string; readonly line: number }> = []
  let fenced = false
  markdown.split("\n").forEach((text, index) => {
    if (/^\s*```/.test(text)) fenced = !fenced
    else if (!fenced) lines.push({ text, line: index + 1 })
  })
  return lines
}

/** Every ATX heading of a Markdown text, each anchor made unique as GitHub does (`-1`, `-2`, … on repeats). */
export const headings = (markdown: string): Array<Heading> => {
  const seen = new Map<string, number>()
  return proseLines(markdown).flatMap(({ line, text }) => {
    const match = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(text)
    if (match === null) return []
    const base = anchorOf(match[2]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    return [{ level: match[1]!.length, text: match[2]!, anchor: count === 0 ? base : `${base}-${count}`, line }]
  })
}

export interface Link {
  readonly text: string
  readonly target: string
  readonly line: number
}

/** Every inline link and image of a Markdown text outside code: `[text](target)`. */
export const links = (markdown: string): Array<Link> =>
  proseLines(markdown).flatMap(({ line, text }) =>
    [...text.replace(/`[^`]*`/g, "").matchAll(/!?\[([^\]]*)\]\(([^)\s]+)\)/g)].map((match) => ({
      text: match[1]!,
      target: match[2]!,
      line
    }))
  )

/** Markdown files of the repository under `dir` (relative to the root), recursively, as relative paths. */
export const markdownFiles = (dir: string): Array<string> =>
  Fs.readdirSync(Path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = Path.posix.join(dir, entry.name)
    if (entry.isDirectory()) return markdownFiles(path)
    return entry.name.endsWith(".md") ? [path] : []
  })
