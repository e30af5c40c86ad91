/**
 * A test OTLP/HTTP trace receiver: a real HTTP server taking `POST /v1/traces` in OTLP's JSON encoding
 * (the exporter's `http/json` protocol), keeping every span it was sent, flattened.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly serviceName: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes: Readonly<Record<string, unknown>> }>
}

export interface OtlpReceiver {
  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  /** Request paths and content types received, for a failure's message. */
  readonly requests: () => ReadonlyArray<string>
  readonly close: () => Promise<void>
}

interface KeyValue {
  readonly key: string
  readonly value: Readonly<Record<string, unknown>>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null
const list = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

/** OTLP's `AnyValue` as a plain value (`{stringValue: "x"}` is "x"). */
const plain = (value: unknown): unknown => {
  if (!isRecord(value)) return undefined
  const [first] = Object.values(value)
  return first
}

const attributesOf = (u: unknown): Record<string, unknown> =>
  Object.fromEntries(list(u).filter(isRecord).map((kv) => [String((kv as unknown as KeyValue).key), plain(kv["value"])]))

const text = (u: unknown): string => (typeof u === "string" ? u : "")

const flatten = (body: unknown): Array<ReceivedSpan> => {
  const spans: Array<ReceivedSpan> = []
  for (const resourceSpans of list(isRecord(body) ? body["resourceSpans"] : undefined).filter(isRecord)) {
    const resource = isRecord(resourceSpans["resource"]) ? attributesOf(resourceSpans["resource"]["attributes"]) : {}
    const serviceName = typeof resource["service.name"] === "string" ? resource["service.name"] : undefined
    for (const scopeSpans of list(resourceSpans["scopeSpans"]).filter(isRecord)) {
      for (const span of list(scopeSpans["spans"]).filter(isRecord)) {
        const parent = text(span["parentSpanId"])
        spans.push({
          traceId: text(span["traceId"]),
          spanId: text(span["spanId"]),
          parentSpanId: parent === "" ? undefined : parent,
          name: text(span["name"]),
          serviceName,
          attributes: attributesOf(span["attributes"]),
          links: list(span["links"]).filter(isRecord).map((link) => ({
            traceId: text(link["traceId"]),
            spanId: text(link["spanId"]),
            attributes: attributesOf(link["attributes"])
          }))
        })
      }
    }
  }
  return spans
}

export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const spans: Array<ReceivedSpan> = []
  const requests: Array<string> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      requests.push(`${request.method} ${request.url} ${request.headers["content-type"]}`)
      if (request.method !== "POST" || request.url !== "/v1/traces") {
        response.writeHead(404).end()
        return
      }
      try {
        spans.push(...flatten(JSON.parse(Buffer.concat(chunks).toString("utf8"))))
      } catch {
        response.writeHead(400, { "content-type": "application/json" }).end("{}")
        return
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => spans,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve()))
  }
}
