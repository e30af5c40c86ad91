/**
 * `acs <command> [subcommand] --help`: the command's own help document from @effect/cli, as plain text in 100
 * columns. @effect/cli's renderer neither wraps nor drops its colours when piped, and repeats each option's
 * type under its name ("A user-defined piece of text."), which the usage line already shows.
 */
import { CliConfig, CommandDescriptor as Descriptor, HelpDoc, Usage } from "@effect/cli"
import type { Span } from "@effect/cli/HelpDoc/Span"
import { HashMap, Option } from "effect"
import { definition, hanging, wrap } from "./Wrap.ts"

type Doc = HelpDoc.HelpDoc

/** Options every @effect/cli command takes; acs documents `--help` and `--version` itself. */
const BUILT_IN = /^\(?(-h, )?--(completions|log-level|help|wizard|version)\b/

/** @effect/cli's remarks, said shorter (or already said by acs's own description). */
const REMARKS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^This setting is optional\.$/, "(optional)"],
  [/^This (option|argument) may be repeated/, "(repeatable)"],
  [/^This option can be set from environment variables\.$/, ""]
]

const remark = (text: string): string | undefined => REMARKS.find(([pattern]) => pattern.test(text))?.[1]

const spanText = (span: Span): string => {
  switch (span._tag) {
    case "Text":
      return span.value
    case "URI":
      return span.value.toString()
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

/** A document as a flat list of its blocks (the Sequence nodes are only structure). */
const blocks = (doc: Doc): Array<Doc> => {
  switch (doc._tag) {
    case "Sequence":
      return [...blocks(doc.left), ...blocks(doc.right)]
    case "Empty":
      return []
    default:
      return [doc]
  }
}

const paragraphs = (doc: Doc): Array<string> =>
  blocks(doc).flatMap((block) => block._tag === "Paragraph" ? [spanText(block.value)] : [])

/**
 * An option's or argument's description: the first paragraph is @effect/cli's description of the type
 * (dropped when acs wrote its own), the last may say it is optional.
 */
const describe = (doc: Doc): string => {
  const texts = paragraphs(doc)
  const own = texts.filter((text) => remark(text) === undefined)
  const described = own.length > 1 ? own.slice(1) : own
  const remarks = texts.flatMap((text) => {
    const short = remark(text)
    return short === undefined || short === "" ? [] : [short]
  })
  return [...described, ...remarks].join(" ")
}

const TERM_COLUMN = 28

const renderBlock = (block: Doc): Array<string> => {
  switch (block._tag) {
    case "Header":
      return ["", spanText(block.value)]
    case "Paragraph":
      return wrap(spanText(block.value), "  ")
    case "DescriptionList":
      return block.definitions.flatMap(([term, doc]) => {
        const name = spanText(term).replace(/\s+/g, " ").trim()
        return BUILT_IN.test(name) ? [] : definition(name, describe(doc), TERM_COLUMN)
      })
    case "Enumeration":
      return block.elements.flatMap((element) => hanging(paragraphs(element).join(" "), "  - ", "      "))
    default:
      return []
  }
}

/** Drops headers left with nothing under them (OPTIONS of a command whose only options are built in). */
const withoutEmptySections = (lines: ReadonlyArray<string>, headers: ReadonlySet<string>): Array<string> =>
  lines.filter((line, i) => {
    if (!headers.has(line)) return true
    const next = lines.slice(i + 1).find((candidate) => candidate !== "")
    return next !== undefined && !headers.has(next)
  })

/** The help of the command `descriptor`, reached as `acs <path…>`. */
export const commandHelp = <A>(descriptor: Descriptor.Command<A>, path: ReadonlyArray<string>): string => {
  const usage = paragraphs(Usage.getHelp(Descriptor.getUsage(descriptor))).join(" ")
  const doc = blocks(Descriptor.getHelp(descriptor, CliConfig.defaultConfig))
  const headers = new Set(doc.flatMap((block) => block._tag === "Header" ? [spanText(block.value)] : []))
  const command = headers.has("COMMANDS") ? " <command> [options]" : ""
  return [
    "USAGE",
    ...hanging(["acs", ...path.slice(0, -1), usage].join(" ") + command, "  ", "      "),
    ...withoutEmptySections(doc.flatMap(renderBlock), headers)
  ].join("\n").replace(/\n{3,}/g, "\n\n")
}

/**
 * The help `acs <args…> --help` asks for: the subcommand named in `args` (`keys create --help`), else the
 * command itself.
 */
export const helpFor = <A>(descriptor: Descriptor.Command<A>, name: string, args: ReadonlyArray<string>): string => {
  const subcommands = Descriptor.getSubcommands(descriptor)
  const sub = args.find((arg) => !arg.startsWith("-") && HashMap.has(subcommands, arg))
  if (sub === undefined) return commandHelp(descriptor, [name])
  return Option.match(HashMap.get(subcommands, sub), {
    onNone: () => commandHelp(descriptor, [name]),
    onSome: (child) => commandHelp(child, [name, sub])
  })
}
