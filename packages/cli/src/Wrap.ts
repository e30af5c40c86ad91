/** Plain text for a terminal: every help line fits WIDTH columns. */

export const WIDTH = 100

/** `text` in lines of at most `width` columns, each prefixed by `indent`; a word longer than a line stays whole. */
export const wrap = (text: string, indent = "", width = WIDTH): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w.length > 0)) {
    if (line.length > 0 && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else {
      line = line.length > 0 ? `${line} ${word}` : word
    }
  }
  if (line.length > 0) lines.push(indent + line)
  return lines
}

/**
 * `term` then `description`: side by side while the term fits `column`, else the description on the next lines;
 * a term wider than a line (an option's long list of choices) wraps, its further lines indented.
 */
export const definition = (term: string, description: string, column: number, indent = "  "): Array<string> => {
  const pad = " ".repeat(column)
  const body = wrap(description, pad)
  if (indent.length + term.length + 2 <= column && body.length > 0) {
    const [first = "", ...rest] = body
    return [`${indent}${term}`.padEnd(column) + first.slice(column), ...rest]
  }
  return [...hanging(term, indent, `${indent}    `), ...body]
}

/** `text` wrapped with its first line after `first` and the others indented by `rest` (as long or longer). */
export const hanging = (text: string, first: string, rest: string): Array<string> =>
  wrap(text, rest).map((line, i) => i === 0 ? first + line.slice(rest.length) : line)
