/** A real Server-Sent Events client over fetch: frames parsed as they arrive, for the stream tests. */

export interface SseFrame {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

export interface SseClient {
  readonly status: number
  readonly contentType: string | null
  readonly headers: Headers
  /** The body of an answer that is not a stream (a refusal, its JSON envelope); undefined for a stream. */
  readonly refusal: string | undefined
  /** Every event frame so far, in order. */
  readonly frames: Array<SseFrame>
  /** How many heartbeat comments arrived. */
  readonly heartbeats: () => number
  /** Resolves when the stream ended (the server ended it, it broke, or close()). */
  readonly ended: Promise<void>
  readonly isEnded: () => boolean
  /** Why reading failed, when the stream broke instead of ending (a reset, a cut chunk); undefined otherwise. */
  readonly failure: () => string | undefined
  readonly close: () => void
}

export const openSse = async (url: string, headers: Record<string, string>): Promise<SseClient> => {
  const abort = new AbortController()
  const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal })
  const refusal = response.ok ? undefined : await response.text()
  const frames: Array<SseFrame> = []
  let heartbeats = 0
  let ended = false
  let failure: string | undefined
  const parse = (block: string) => {
    let id: string | undefined
    let event: string | undefined
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) {
        if (line.startsWith(": heartbeat")) heartbeats++
        continue
      }
      const colon = line.indexOf(":")
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
      if (field === "id") id = value
      else if (field === "event") event = value
      else if (field === "data") data.push(value)
    }
    if (data.length > 0) frames.push({ id, event, data: data.join("\n") })
  }
  const done = (async () => {
    if (response.body === null || refusal !== undefined) return
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let end = buffer.indexOf("\n\n")
        while (end >= 0) {
          parse(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf("\n\n")
        }
      }
    } catch (error) {
      // Aborted by close() is an end asked for; anything else broke the stream.
      if (!abort.signal.aborted) failure = error instanceof Error ? `${error.message} ${String(error.cause ?? "")}`.trim() : String(error)
    } finally {
      ended = true
    }
  })()
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    headers: response.headers,
    refusal,
    frames,
    heartbeats: () => heartbeats,
    ended: done,
    isEnded: () => ended,
    failure: () => failure,
    close: () => abort.abort()
  }
}
