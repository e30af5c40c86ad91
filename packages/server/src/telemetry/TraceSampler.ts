/**
 * Which traces are kept: the sampler `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` name (the
 * specification's values; `parentbased_always_on` by default), except that a SQL statement or transaction
 * outside any span is dropped: that is a background poll (a queue claim, a listener's ping), and one trace
 * per poll would bury the requests and applies worth reading.
 */
import { type Attributes, type Context, type Link, type SpanKind, trace } from "@opentelemetry/api"
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler
} from "@opentelemetry/sdk-trace-base"

const BACKGROUND_ROOTS: ReadonlySet<string> = new Set(["sql.execute", "sql.transaction"])

const ratio = (arg: string | undefined): number => {
  const value = arg === undefined || arg.trim() === "" ? Number.NaN : Number(arg)
  return Number.isFinite(value) && value >= 0 && value <= 1 ? value : 1
}

/** The sampler the standard variables name; an unknown name falls back to the default, as the SDK does. */
export const samplerFromEnv = (env: Readonly<Record<string, string | undefined>>): Sampler => {
  const arg = env["OTEL_TRACES_SAMPLER_ARG"]
  switch ((env["OTEL_TRACES_SAMPLER"] ?? "").trim()) {
    case "always_on":
      return new AlwaysOnSampler()
    case "always_off":
      return new AlwaysOffSampler()
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio(arg))
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio(arg)) })
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/** `sampler`, with background statements outside any span dropped. */
export class WithoutBackgroundRoots implements Sampler {
  constructor(private readonly sampler: Sampler) {}

  shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Array<Link>): SamplingResult {
    if (trace.getSpanContext(context) === undefined && BACKGROUND_ROOTS.has(spanName)) return { decision: SamplingDecision.NOT_RECORD }
    return this.sampler.shouldSample(context, traceId, spanName, spanKind, attributes, links)
  }

  toString(): string {
    return `WithoutBackgroundRoots{${this.sampler.toString()}}`
  }
}
