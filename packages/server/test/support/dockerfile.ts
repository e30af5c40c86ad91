/**
 * The repository's Dockerfile read as its stages and instructions, for the image test (containerImage.test.ts)
 * on machines without a Docker engine: line continuations joined, comments dropped, `${ARG}` replaced by the
 * ARG's default (global ARGs are re-declared in the stages that use them, as Docker requires).
 */
import * as Fs from "node:fs"

export interface Instruction {
  readonly keyword: string
  /** The rest of the line, `${ARG}`s replaced. */
  readonly args: string
}

export interface Stage {
  readonly name: string | undefined
  readonly image: string
  readonly instructions: ReadonlyArray<Instruction>
}

const substitute = (text: string, args: ReadonlyMap<string, string>) =>
  text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => args.get(braced ?? bare ?? "") ?? whole)

/** The stages of the Dockerfile at `path`, in order (the last one is the image). */
export const readDockerfile = (path: string): ReadonlyArray<Stage> => {
  const lines = Fs.readFileSync(path, "utf8").split("\n").filter((line) => !line.trimStart().startsWith("#"))
  const logical = lines.join("\n").replace(/\\\n/g, " ").split("\n").map((line) => line.trim()).filter((line) => line !== "")
  const globalArgs = new Map<string, string>()
  const stages: Array<{ name: string | undefined; image: string; instructions: Array<Instruction>; args: Map<string, string> }> = []
  for (const line of logical) {
    const keyword = line.split(/\s/, 1)[0]!
    const upper = keyword.toUpperCase()
    const current = stages.at(-1)
    const raw = line.slice(keyword.length).trim()
    if (upper === "ARG") {
      const [name = "", value] = raw.split("=")
      const known = value ?? globalArgs.get(name) ?? ""
      if (current === undefined) globalArgs.set(name, known)
      else current.args.set(name, substitute(known, current.args))
      continue
    }
    if (upper === "FROM") {
      const [image = "", as, name] = substitute(raw, globalArgs).split(/\s+/)
      stages.push({ name: as?.toUpperCase() === "AS" ? name : undefined, image, instructions: [], args: new Map() })
      continue
    }
    if (current === undefined) throw new Error(`${path}: ${keyword} before FROM`)
    current.instructions.push({ keyword: upper, args: substitute(raw, current.args) })
  }
  return stages.map(({ name, image, instructions }) => ({ name, image, instructions }))
}

/** `KEY=value KEY2=value2` (ENV's form), quotes taken off. */
export const parseAssignments = (args: string): Array<readonly [string, string]> =>
  [...args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map((match) => [match[1]!, match[2]!.replace(/^"|"$/g, "")] as const)

/** An exec-form command (`["node", "-e", "…"]`) as its words. */
export const execForm = (args: string): Array<string> => {
  const parsed: unknown = JSON.parse(args)
  if (!Array.isArray(parsed) || !parsed.every((word) => typeof word === "string")) throw new Error(`not an exec-form command: ${args}`)
  return parsed
}

/** COPY's sources and destination, and its `--from` stage when it has one. */
export const parseCopy = (args: string): { readonly from: string | undefined; readonly sources: Array<string>; readonly dest: string } => {
  const words = args.split(/\s+/)
  const from = words.find((word) => word.startsWith("--from="))?.slice("--from=".length)
  const paths = words.filter((word) => !word.startsWith("--"))
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! }
}
