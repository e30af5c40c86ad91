/**
 * Reading a request body under the front door's rules: JSON only, at most 1 MiB whatever the framing, at most
 * 64 levels deep. A chunked body is kept until 1 MiB + 1 byte and no further: the rest is never buffered
 * (a little is drained and thrown away, so the client sees the 400; past that the connection is closed). The
 * text read is handed on as the request's body, so nothing reads the stream twice.
 */
import { InvalidRequest } from "@acs/domain/Errors"
import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Option, Stream } from "effect"
import { IncomingMessage } from "node:http"

export const MAX_BODY_BYTES = 1024 * 1024
export const MAX_BODY_DEPTH = 64

const invalid = (message: string) => new InvalidRequest({ message: `invalid request: ${message}` })

const tooLarge = (limit: number) =>
  invalid(`the body is larger than ${limit === MAX_BODY_BYTES ? "1 MiB" : `${Math.floor(limit / 1024)} KiB`}`)

/** True when the request says a body follows. */
export const hasBody = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? "0") > 0

/** `application/json`, in any case, with any parameters (charset). */
export const isJsonContentType = (contentType: string | undefined): boolean =>
  contentType !== undefined && contentType.split(";")[0]!.trim().toLowerCase() === "application/json"

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

/**
 * What of a refused body is drained (read and thrown away) so the client, still sending, receives the 400:
 * closing a socket with unread data resets it, and a reset can destroy the answer before the client reads
 * it. A body longer still is cut by closing the connection.
 */
const DRAIN_BYTES = 16 * MAX_BODY_BYTES

/** Reads and discards the rest of a refused body, up to `DRAIN_BYTES`; then closes the connection. */
const drain = (source: IncomingMessage) => {
  let drained = 0
  source.on("data", (chunk: Buffer) => {
    drained += chunk.length
    if (drained > DRAIN_BYTES) source.socket.destroy()
  })
  source.resume()
}

/** Reads node's stream until its end, or until it passes `limit` bytes (then `None`; the rest is drained). */
const readNodeStream = (source: IncomingMessage, limit: number) =>
  Effect.async<Option.Option<string>, InvalidRequest>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const cleanup = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
      source.off("close", onClose)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > limit) {
        cleanup()
        drain(source)
        resume(Effect.succeed(Option.none()))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Option.some(Buffer.concat(chunks).toString("utf8"))))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(invalid("the body could not be read")))
    }
    const onClose = () => {
      if (!source.complete) onError()
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    source.once("close", onClose)
    return Effect.sync(cleanup)
  })

/** The body text, at most `limit` bytes; `None` when it is longer (only `limit` + 1 bytes of it were read). */
const readCapped = (request: HttpServerRequest.HttpServerRequest, limit: number) => {
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  return source instanceof IncomingMessage
    ? readNodeStream(source, limit)
    : request.text.pipe(
      Effect.mapError(() => invalid("the body could not be read")),
      Effect.map((text) => (Buffer.byteLength(text) > limit ? Option.none() : Option.some(text)))
    )
}

/** The methods whose bodies a route reads; any other method's body is read and checked, then dropped. */
const BODY_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"])

/**
 * The same request with `text` as its body, read from memory: the request itself underneath (its url,
 * headers, address and response), with the body's readers answering the text. The platform's `json` and
 * `urlParamsBody` read `text`. (A web Request rebuilt around the text cost ~0.1 ms per proposal: bench/history.md.)
 */
const withText = (request: HttpServerRequest.HttpServerRequest, text: string): HttpServerRequest.HttpServerRequest => {
  // No route of another method reads a body.
  if (!BODY_METHODS.has(request.method)) return request
  const bytes = () => new TextEncoder().encode(text)
  const read: PropertyDescriptorMap = {
    text: { value: Effect.succeed(text) },
    arrayBuffer: { value: Effect.sync(() => bytes().buffer) },
    stream: { value: Stream.suspend(() => Stream.succeed(bytes())) }
  }
  return Object.create(request, read) as HttpServerRequest.HttpServerRequest
}

/** Why a body was refused, and whether the connection must close (part of the body is still unread). */
export interface BodyRefusal {
  readonly error: InvalidRequest
  readonly closeConnection: boolean
}

/**
 * The body's text, read and checked, or the refusal: a length over the limit (1 MiB) is refused before a
 * byte is read; a chunked body is cut at the limit + 1 byte.
 */
export const readJsonText = (request: HttpServerRequest.HttpServerRequest, limit = MAX_BODY_BYTES) =>
  Effect.gen(function*() {
    if (Number(request.headers["content-length"] ?? "0") > limit) {
      return yield* Effect.fail<BodyRefusal>({ error: tooLarge(limit), closeConnection: true })
    }
    const text = yield* readCapped(request, limit).pipe(Effect.mapError((error): BodyRefusal => ({ error, closeConnection: true })))
    // The rest of a long chunked body is being drained: the connection can stay, and the answer arrives.
    if (Option.isNone(text)) return yield* Effect.fail<BodyRefusal>({ error: tooLarge(limit), closeConnection: false })
    if (nestingDepth(text.value) > MAX_BODY_DEPTH) {
      return yield* Effect.fail<BodyRefusal>({
        error: invalid(`the body nests deeper than ${MAX_BODY_DEPTH} levels`),
        closeConnection: false
      })
    }
    return text.value
  })

/** The request with its body read and checked (`readJsonText`), as the routes read it; or the refusal. */
export const readJsonBody = (request: HttpServerRequest.HttpServerRequest, limit = MAX_BODY_BYTES) =>
  Effect.map(readJsonText(request, limit), (text) => withText(request, text))
