/**
 * The ledger page (`GET /accounts/{projectId}/actions`, the cheap authenticated read) answered by the front
 * door itself once it has made the grant, without the API's router, its path and query decoders and its
 * security middleware around the same handler (issue 12): the same operation (`Operate.run`, its span), the
 * same query schema, the same answer. Only a plain query (`name=value` pairs of letters, digits, `_.-`, no
 * name twice) that the schema accepts takes this way, and only an answer: anything else, a refusal or a
 * failure included, is left to the API, which answers as it always has.
 */
import { LedgerParams } from "@acs/domain/Actions"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Exit, Option, Schema } from "effect"
import type { RequestAuthorization } from "../auth/RequestAuthorization.ts"
import { makeOperate } from "../operations/Operate.ts"

const PLAIN_QUERY = /^[\w.-]+=[\w.-]*(?:&[\w.-]+=[\w.-]*)*$/

const decodeParams = Schema.decodeUnknownEither(LedgerParams)

/** The query's params when it is plain, decoded as the API decodes them; None for anything else. */
const plainParams = (url: string): Option.Option<typeof LedgerParams.Type> => {
  const at = url.indexOf("?")
  const query = at < 0 ? "" : url.slice(at + 1)
  if (query !== "" && !PLAIN_QUERY.test(query)) return Option.none()
  const params: Record<string, string> = {}
  if (query !== "") {
    for (const pair of query.split("&")) {
      const equals = pair.indexOf("=")
      const name = pair.slice(0, equals)
      if (Object.hasOwn(params, name)) return Option.none()
      params[name] = pair.slice(equals + 1)
    }
  }
  // The API wraps a param in an array only where its schema is not a single string: none of LedgerParams' is,
  // and an unknown param is ignored either way.
  return Either.getRight(decodeParams(params))
}

export const makeLedgerPage = Effect.gen(function*() {
  const operate = yield* makeOperate

  /** The page's answer, or None when the API is to answer the request. */
  return (request: HttpServerRequest.HttpServerRequest, authorization: RequestAuthorization) =>
    Effect.gen(function*() {
      const urlParams = plainParams(request.url)
      if (authorization.operation !== "listActions" || authorization.projectId === undefined || Option.isNone(urlParams)) {
        return Option.none<HttpServerResponse.HttpServerResponse>()
      }
      const grant = authorization.grant as Parameters<typeof operate.run<"listActions">>[1]
      const page = yield* Effect.exit(operate.run("listActions", grant, { path: { projectId: authorization.projectId }, urlParams: urlParams.value }))
      return Exit.isSuccess(page) ? Option.some(HttpServerResponse.unsafeJson(page.value)) : Option.none()
    })
})
