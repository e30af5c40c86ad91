/**
 * Who is reporting, for traces and metrics alike: the OpenTelemetry resource from the standard variables.
 * `OTEL_SERVICE_NAME` wins, then a `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, then `acs`; the other
 * `OTEL_RESOURCE_ATTRIBUTES` pairs (`key=value,…`, values percent-decoded as the specification says) are kept.
 */
import { Resource } from "@effect/opentelemetry"
import { Config, Effect, Layer } from "effect"

export const DEFAULT_SERVICE_NAME = "acs"

/** `OTEL_RESOURCE_ATTRIBUTES` as pairs; a malformed pair is skipped rather than failing the start. */
export const parseResourceAttributes = (text: string): Record<string, string> => {
  const attributes: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const equals = pair.indexOf("=")
    if (equals <= 0) continue
    const key = pair.slice(0, equals).trim()
    try {
      attributes[key] = decodeURIComponent(pair.slice(equals + 1).trim())
    } catch {
      continue
    }
  }
  return attributes
}

export const TelemetryResourceLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const attributes = parseResourceAttributes(yield* Config.string("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault("")))
    const named = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault(""))
    const { "service.name": fromAttributes, "service.version": serviceVersion, ...rest } = attributes
    const serviceName = named.trim() !== "" ? named.trim() : fromAttributes ?? DEFAULT_SERVICE_NAME
    return Resource.layer({ serviceName, ...(serviceVersion === undefined ? {} : { serviceVersion }), attributes: rest })
  })
).pipe(Layer.orDie)
