/**
 * A span's W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), to keep a trace's context with work that
 * another process or a later moment picks up (an action's apply), and the span link back to it.
 */
import { Effect, Option, Tracer } from "effect"

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The current span's traceparent, or null outside any span. */
export const currentTraceparent: Effect.Effect<string | null> = Effect.map(
  Effect.option(Effect.currentSpan),
  Option.match({
    onNone: () => null,
    onSome: (span) => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
  })
)

/** The current span's trace id, or undefined outside any span (for log lines). */
export const currentTraceId: Effect.Effect<string | undefined> = Effect.map(
  Effect.option(Effect.currentSpan),
  Option.match({ onNone: () => undefined, onSome: (span) => span.traceId })
)

/** A link to the span a stored traceparent names; none for a missing or malformed one. */
export const linkTo = (traceparent: string | null | undefined, attributes: Record<string, unknown> = {}): Array<Tracer.SpanLink> => {
  const match = traceparent === null || traceparent === undefined ? null : TRACEPARENT.exec(traceparent)
  if (match === null) return []
  const span = Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: match[3] === "01" })
  return [{ _tag: "SpanLink", span, attributes }]
}
