/**
 * The OpenTelemetry SDK's tracer exporting over OTLP/HTTP, as a layer; loaded only when tracing is on
 * (telemetry/Tracing.ts imports it on demand), so a process without it does not load the SDK at start.
 */
import { NodeSdk, Tracer as OtelTracer } from "@effect/opentelemetry"
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Layer } from "effect"
import { TelemetryResourceLive } from "./TelemetryResource.ts"
import { samplerFromEnv, WithoutBackgroundRoots } from "./TraceSampler.ts"

export type OtlpProtocol = "http/protobuf" | "http/json"

/**
 * Effect's tracer backed by the SDK: spans batched (`OTEL_BSP_*`) to the exporter, which reads the endpoint,
 * headers, timeout and compression variables itself. The batch still held is flushed at shutdown.
 */
export const otlpTracerLayer = (protocol: OtlpProtocol): Layer.Layer<never> => {
  const exporter = protocol === "http/json" ? new JsonExporter() : new ProtobufExporter()
  return OtelTracer.layer.pipe(
    Layer.provide(NodeSdk.layerTracerProvider(new BatchSpanProcessor(exporter), {
      sampler: new WithoutBackgroundRoots(samplerFromEnv(process.env)),
      shutdownTimeout: "5 seconds"
    })),
    Layer.provide(TelemetryResourceLive),
    Layer.discard
  )
}
