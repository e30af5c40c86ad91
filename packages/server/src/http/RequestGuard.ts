/**
 * What a request body must be before anything decodes it (SPEC 4: JSON bodies): `application/json` (or no
 * Content-Type; `application/ndjson` is the RPC protocol's JSON, one message a line), at most 1 MiB, at most 64 levels deep. Each refusal is 400 `invalid_request`. The body is
 * read here once, under a larger cap so the connection survives an oversized chunked body; the platform
 * caches the text and the handler's decoder reuses it.
 */
import { InvalidRequest } from "@acs/domain/Errors"
import { HttpMethod, HttpMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { envelopeResponse } from "./ErrorEnvelope.ts"

export const MAX_BODY_BYTES = 1024 * 1024
/** Bodies up to this size are read to the end so the 400 can be written; beyond it the stream is cut. */
const READ_CAP_BYTES = 8 * MAX_BODY_BYTES
export const MAX_BODY_DEPTH = 64

const refuse = (message: string) => Effect.succeed(envelopeResponse(new InvalidRequest({ message: `invalid request: ${message}` })))

const hasBody = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? "0") > 0

const isJson = (contentType: string | undefined): boolean => {
  if (contentType === undefined || contentType.trim() === "") return true
  const type = contentType.split(";")[0]!.trim().toLowerCase()
  return type === "application/json" || type === "application/ndjson" ||
    (type.startsWith("application/") && type.endsWith("+json"))
}

/** The deepest nesting of arrays and objects in a JSON text, strings skipped. */
export const nestingDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) deepest = Math.max(deepest, ++depth)
    else if (c === 93 || c === 125) depth--
  }
  return deepest
}

export const requestGuard = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (Number(request.headers["content-length"] ?? "0") > MAX_BODY_BYTES) return yield* refuse("the body is larger than 1 MiB")
    if (!HttpMethod.hasBody(request.method) || !hasBody(request.headers)) return yield* app
    if (!isJson(request.headers["content-type"])) return yield* refuse("bodies are JSON: send Content-Type: application/json")
    const text = yield* request.text.pipe(HttpServerRequest.withMaxBodySize(Option.some(READ_CAP_BYTES)), Effect.option)
    if (Option.isSome(text)) {
      if (Buffer.byteLength(text.value) > MAX_BODY_BYTES) return yield* refuse("the body is larger than 1 MiB")
      if (nestingDepth(text.value) > MAX_BODY_DEPTH) return yield* refuse(`the body nests deeper than ${MAX_BODY_DEPTH} levels`)
    }
    return yield* app
  })
)
