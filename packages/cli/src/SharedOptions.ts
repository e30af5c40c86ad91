/** Options and defaults the commands share. */
import { Options } from "@effect/cli"

/** Where a client command finds acs when neither ACS_URL nor --url says. */
export const DEFAULT_URL = "http://127.0.0.1:3000"

export const json = Options.boolean("json").pipe(
  Options.withDescription("print one JSON document on stdout instead of a table")
)

export const org = Options.text("org").pipe(
  Options.withDescription("the org to act on (default: the default org, the oldest one)"),
  Options.optional
)
