/**
 * Live updates from `GET /api/v1/events/stream` (Server-Sent Events, docs/contract.md 6): every event tells the
 * pages that listen what changed (an action's status, a sync), and they read again through the typed client.
 * The browser's EventSource reconnects by itself with `Last-Event-ID`. Where the stream is refused (an
 * older acs, a restart, a rate limit), the console reads again every 15 s (each read of the approvals page costs two reads per account, its queued actions and its queued changesets, and a faster poll could keep the read bucket empty, so the stream itself would be refused), so pages still update without a
 * reload, and tries the stream again every 15 s; while the stream is open, a slow re-read still runs, so a stream a proxy holds back (buffering)
 * leaves a page at most that far behind.
 */
import { eventTypes } from "@acs/domain/Events"

export interface LiveEvent {
  readonly type: string
  readonly projectId: string | null
}

type Listener = (event: LiveEvent) => void

const listeners = new Set<Listener>()


/** Without the stream; the approvals page reads each account's queue and queued changesets, within the 120 reads a minute. */
const FALLBACK_POLL_MS = 15_000
const SAFETY_POLL_MS = 10_000

/** A refused stream (a restart, a rate limit, an older acs) is tried again this long after. */
const STREAM_RETRY_MS = 15_000

let started = false
let source: EventSource | undefined
let poller: ReturnType<typeof setInterval> | undefined
let retry: ReturnType<typeof setTimeout> | undefined
/** Whether the stream answers; the page header says which way updates arrive. */
export let liveMode: "stream" | "polling" | "connecting" = "connecting"
const modeListeners = new Set<() => void>()

const emit = (event: LiveEvent) => {
  for (const listener of listeners) listener(event)
}

const onMessage = (message: MessageEvent<string>) => {
  try {
    const body = JSON.parse(message.data) as { type?: unknown; projectId?: unknown }
    emit({ type: typeof body.type === "string" ? body.type : message.type, projectId: typeof body.projectId === "string" ? body.projectId : null })
  } catch {
    emit({ type: message.type, projectId: null })
  }
}

const setMode = (mode: typeof liveMode) => {
  liveMode = mode
  for (const listener of modeListeners) listener()
}

const pollEvery = (ms: number) => {
  if (poller !== undefined) clearInterval(poller)
  poller = setInterval(() => emit({ type: "poll", projectId: null }), ms)
}

const poll = () => {
  setMode("polling")
  pollEvery(FALLBACK_POLL_MS)
}

const openStream = () => {
  retry = undefined
  source?.close()
  const stream = new EventSource("/api/v1/events/stream")
  source = stream
  stream.onopen = () => {
    setMode("stream")
    pollEvery(SAFETY_POLL_MS)
  }
  stream.onmessage = onMessage
  for (const type of eventTypes) stream.addEventListener(type, onMessage)
  stream.onerror = () => {
    if (source !== stream) return
    // CONNECTING: the stream dropped and the browser reconnects by itself (onopen says when it is back); the
    // slow re-read goes on meanwhile. CLOSED: the server refused the stream: poll, and try it again later.
    if (stream.readyState !== EventSource.CLOSED) return setMode("connecting")
    poll()
    retry = setTimeout(openStream, STREAM_RETRY_MS)
  }
}

/** Opens the stream once the person is signed in (the cookie authenticates it). */
export const startLive = () => {
  if (started) return
  started = true
  if (typeof EventSource === "undefined") return poll()
  openStream()
}

export const stopLive = () => {
  source?.close()
  source = undefined
  if (poller !== undefined) clearInterval(poller)
  poller = undefined
  if (retry !== undefined) clearTimeout(retry)
  retry = undefined
  started = false
  setMode("connecting")
}

export const subscribe = (listener: Listener): (() => void) => {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

export const onModeChange = (listener: () => void): (() => void) => {
  modeListeners.add(listener)
  return () => modeListeners.delete(listener)
}
