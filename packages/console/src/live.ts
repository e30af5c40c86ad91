/**
 * Live updates from `GET /api/v1/events/stream` (Server-Sent Events, API.md "Events"): every event tells the
 * pages that listen what changed (an action's status, a sync), and they read again through the typed client.
 * The browser's EventSource reconnects by itself with `Last-Event-ID`. Where the stream is not served (an
 * older acs), the console falls back to reading again every 5 s, so pages still update without a
 * reload; while the stream is open, a slow re-read still runs, so a stream a proxy holds back (buffering)
 * leaves a page at most that far behind.
 */
import { eventTypes } from "@acs/domain/Events"

export interface LiveEvent {
  readonly type: string
  readonly projectId: string | null
}

type Listener = (event: LiveEvent) => void

const listeners = new Set<Listener>()


/** Without the stream; the approvals page reads each account's queue, within the 120 reads a minute. */
const FALLBACK_POLL_MS = 5_000
const SAFETY_POLL_MS = 10_000

let started = false
let source: EventSource | undefined
let poller: ReturnType<typeof setInterval> | undefined
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

/** Opens the stream once the person is signed in (the cookie authenticates it). */
export const startLive = () => {
  if (started) return
  started = true
  if (typeof EventSource === "undefined") return poll()
  source = new EventSource("/api/v1/events/stream")
  source.onopen = () => {
    setMode("stream")
    pollEvery(SAFETY_POLL_MS)
  }
  source.onmessage = onMessage
  for (const type of eventTypes) source.addEventListener(type, onMessage)
  source.onerror = () => {
    // CLOSED: the server refused the stream (not served, or not allowed): poll instead. Otherwise the browser retries.
    if (source?.readyState === EventSource.CLOSED) poll()
  }
}

export const stopLive = () => {
  source?.close()
  source = undefined
  if (poller !== undefined) clearInterval(poller)
  poller = undefined
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
