/**
 * What every client command shares: which acs it talks to and with which key (`--url` / `--key`, else
 * ACS_URL / ACS_KEY), the typed RPC client over `/rpc`, and the check of an operation's input against the
 * procedure's own schema.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { InvalidRequest } from "@acs/domain/Errors"
import type { OperationName } from "@acs/domain/Operations"
import { AcsRpcs } from "@acs/domain/Rpcs"
import { Args, Options } from "@effect/cli"
import { Config, Effect, Option, ParseResult, Predicate, Redacted, Schema } from "effect"
import { parseIssues, Unreachable, UsageError } from "./CliError.ts"
import { DEFAULT_URL, json } from "./SharedOptions.ts"


const url = Options.text("url").pipe(
  Options.withDescription(`where acs answers (default: ACS_URL, else ${DEFAULT_URL})`),
  Options.withFallbackConfig(Config.string("ACS_URL")),
  Options.withDefault(DEFAULT_URL)
)

const key = Options.redacted("key").pipe(
  Options.withDescription("the API key, acs_… (default: ACS_KEY)"),
  Options.withFallbackConfig(Config.redacted("ACS_KEY")),
  Options.optional
)

export const projectId = Args.text({ name: "projectId" }).pipe(
  Args.withDescription("the account's projectId (see `acs accounts`), or `current` for a key bound to one account")
)

export const actionId = Args.text({ name: "actionId" }).pipe(Args.withDescription("the action, act_…"))

export const limit = Options.integer("limit").pipe(
  Options.withDescription("how many rows (default 50, at most 1000)"),
  Options.optional
)

/** The options of every client command: `--url`, `--key`, `--json`. */
export const clientOptions = { url, key, json }

export interface Connection {
  readonly url: string
  readonly key: Option.Option<Redacted.Redacted>
}

export type Client = AcsClient["Type"]

/** Runs `use` with a client of the acs at `url`; a transport failure becomes `Unreachable`. */
export const withClient = <A, E>(connection: Connection, use: (client: Client) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    if (!URL.canParse(connection.url)) {
      return yield* new UsageError({ message: `--url: "${connection.url}" is not a URL such as ${DEFAULT_URL}` })
    }
    // An empty ACS_KEY is as good as none: say so rather than send an empty bearer token.
    const key = Option.filter(connection.key, (key) => Redacted.value(key).length > 0)
    if (Option.isNone(key)) return yield* new UsageError({ message: "no API key: set ACS_KEY or pass --key" })
    const layer = AcsClient.layer({ url: connection.url, key: Redacted.value(key.value) })
    return yield* Effect.flatMap(AcsClient, use).pipe(
      Effect.provide(layer),
      Effect.mapError((error) =>
        Predicate.isTagged(error, "RpcClientError")
          ? new Unreachable({ message: `no answer from acs at ${connection.url}: ${transportMessage(error)}` })
          : error
      )
    )
  })

const transportMessage = (error: unknown): string => {
  const cause = Predicate.hasProperty(error, "cause") ? error.cause : undefined
  const text = (u: unknown) => Predicate.hasProperty(u, "message") && typeof u.message === "string" ? u.message : undefined
  return text(cause) ?? text(error) ?? "transport error"
}

/**
 * The input of `operation`, checked against its procedure's schema first: the client dies on an input it
 * cannot encode, so a bad value (`--days 200`, a `--body` field) becomes `invalid_request` here, naming the
 * field as REST does.
 */
export const checked = <I>(operation: OperationName, input: I): Effect.Effect<I, InvalidRequest> => {
  const rpc = AcsRpcs.requests.get(operation)
  if (rpc === undefined) return Effect.dieMessage(`no procedure ${operation}`)
  // The procedures' schemas need no services; the group's generic type cannot say so.
  return Schema.validate(rpc.payloadSchema as Schema.Schema<unknown>)(input, { errors: "all" }).pipe(
    Effect.as(input),
    Effect.mapError((error) => new InvalidRequest({ message: describeIssues(error) }))
  )
}

/**
 * `field: problem` for every field at fault; the leading part name (`payload`, `urlParams`) is dropped, as
 * REST has none, and a literal's alternatives (`Expected "a", actual "x"` once per literal) become one list.
 */
export const describeIssues = (error: ParseResult.ParseError): string => {
  const byField = new Map<string, Array<string>>()
  for (const issue of parseIssues(error)) {
    const [part, ...rest] = issue.path.map(String)
    const field = rest.length > 0 ? rest.join(".") : part === "payload" ? "body" : part ?? "input"
    byField.set(field, [...byField.get(field) ?? [], issue.message])
  }
  return [...byField].map(([field, messages]) => {
    const alternatives = messages.map((m) => /^Expected (.+), actual (.+)$/.exec(m))
    const problem = alternatives.every((match) => match !== null) && messages.length > 1
      ? `expected one of ${alternatives.map((match) => match?.[1]).join(", ")}, actual ${alternatives[0]?.[2]}`
      : messages.join("; ")
    return `${field}: ${problem}`
  }).join("; ")
}

/** The options given, the left-out ones dropped (the API's optional fields take no `undefined`). */
export const given = <R extends Record<string, Option.Option<unknown>>>(
  options: R
): { [K in keyof R]?: R[K] extends Option.Option<infer A> ? A : never } =>
  Object.fromEntries(Object.entries(options).flatMap(([name, value]) => Option.isSome(value) ? [[name, value.value]] : [])) as {
    [K in keyof R]?: R[K] extends Option.Option<infer A> ? A : never
  }

/** The account's currency, for printing amounts (`acs campaigns`, `keywords`, `plan`); none needed with --json. */
export const currencyFor = (client: Client, input: { readonly projectId: string; readonly json: boolean }) =>
  input.json
    ? Effect.succeed("")
    : client.getAccount({ path: { projectId: input.projectId } }).pipe(Effect.map((answer) => answer.account.currency))
