/** Options every admin command shares. */
import { Options } from "@effect/cli"

export const json = Options.boolean("json").pipe(
  Options.withDescription("print one JSON document on stdout instead of a table")
)

export const org = Options.text("org").pipe(
  Options.withDescription("the org to act on (default: the default org, the oldest one)"),
  Options.optional
)
