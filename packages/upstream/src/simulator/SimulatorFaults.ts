/**
 * Fault injection. A fault matches calls by method and path (regexes), optionally by org, starts
 * firing at the `nth` matching call and fires `times` times (or "always"). Kinds:
 * - status:       answer `status` (429 with Retry-After, 503, 500 with the request id...) unprocessed
 * - timeout:      hold the answer `delayMs`; with `process` (default) the call is applied first, so
 *                 the write happens although the client gives up; without it, 504 after the delay
 * - bulkRows:     in a bulk call, the listed row indices fail (the other rows go through)
 * - tokenRefused: the token endpoint answers 401 invalid_client to good credentials
 * - readOnly:     the account `orgId` gets a read-only role (immediately when no method/path/nth is
 *                 given, else at the matching call), so its writes answer 403
 */
import { Either, ParseResult, Schema } from "effect"

const Times = Schema.Union(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)), Schema.Literal("always"))

const matchFields = {
  /** Regex over the HTTP method, case-insensitive (e.g. "POST|PUT"). */
  method: Schema.optional(Schema.String),
  /** Regex over the path (no query string), e.g. "/targetingkeywords/bulk$". */
  path: Schema.optional(Schema.String),
  /** Only calls whose X-AP-Context names this org. */
  orgId: Schema.optional(Schema.Int),
  /** The first matching call that fires (1 = the next one). */
  nth: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  /** How many calls it fires on; default 1. */
  times: Schema.optional(Times)
}

export const StatusFault = Schema.Struct({
  kind: Schema.Literal("status"),
  status: Schema.Int.pipe(Schema.between(400, 599)),
  retryAfterSeconds: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  messageCode: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String),
  ...matchFields
})

export const TimeoutFault = Schema.Struct({
  kind: Schema.Literal("timeout"),
  delayMs: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  process: Schema.optional(Schema.Boolean),
  ...matchFields
})

export const BulkRowsFault = Schema.Struct({
  kind: Schema.Literal("bulkRows"),
  rows: Schema.Array(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  message: Schema.optional(Schema.String),
  ...matchFields
})

export const TokenRefusedFault = Schema.Struct({ kind: Schema.Literal("tokenRefused"), ...matchFields })

export const ReadOnlyFault = Schema.Struct({
  kind: Schema.Literal("readOnly"),
  orgId: Schema.Int,
  roleNames: Schema.optional(Schema.Array(Schema.String)),
  method: matchFields.method,
  path: matchFields.path,
  nth: matchFields.nth
})

export const FaultSpec = Schema.Union(StatusFault, TimeoutFault, BulkRowsFault, TokenRefusedFault, ReadOnlyFault)
export type FaultSpec = typeof FaultSpec.Type
export type StatusFault = typeof StatusFault.Type
export type TimeoutFault = typeof TimeoutFault.Type
export type ReadOnlyFault = typeof ReadOnlyFault.Type

export const DEFAULT_TIMEOUT_MS = 60_000

/** Where each kind applies when no `path` is given. */
const DEFAULT_PATH: Record<FaultSpec["kind"], string> = {
  status: "^/(api|v1)/",
  timeout: "^/(api|v1)/",
  bulkRows: "/bulk(-create|-update)?$",
  tokenRefused: "^/auth/oauth2/token$",
  readOnly: "^/(api|v1)/"
}

export class FaultSpecError extends Error {}

/** A fault spec from JSON (control endpoint or options), or a FaultSpecError saying what is wrong. */
export const decodeFaultSpec = (value: unknown): FaultSpec => {
  const result = Schema.decodeUnknownEither(FaultSpec, { errors: "first" })(value)
  if (Either.isLeft(result)) throw new FaultSpecError(ParseResult.TreeFormatter.formatErrorSync(result.left))
  return result.right
}

interface InstalledFault {
  readonly id: number
  readonly spec: FaultSpec
  readonly method: RegExp | null
  readonly path: RegExp
  matched: number
  fired: number
}

export interface FaultStatus {
  readonly id: number
  readonly spec: FaultSpec
  readonly matched: number
  readonly fired: number
  readonly exhausted: boolean
}

/** What fired on one call. */
export interface FiredFaults {
  readonly kinds: ReadonlyArray<FaultSpec["kind"]>
  readonly status: StatusFault | null
  readonly timeout: TimeoutFault | null
  readonly tokenRefused: boolean
  readonly failingRows: ReadonlySet<number>
  readonly failingRowMessage: string
  readonly readOnly: ReadonlyArray<ReadOnlyFault>
}

const regex = (source: string, flags: string): RegExp => {
  try {
    return new RegExp(source, flags)
  } catch {
    throw new FaultSpecError(`not a regular expression: ${source}`)
  }
}

const exhausted = (fault: InstalledFault): boolean => {
  const times = "times" in fault.spec ? fault.spec.times ?? 1 : 1
  return times !== "always" && fault.fired >= times
}

/** Faults that fire immediately on install (a read-only switch with no trigger). */
export const firesOnInstall = (spec: FaultSpec): spec is ReadOnlyFault =>
  spec.kind === "readOnly" && spec.method === undefined && spec.path === undefined && spec.nth === undefined

export class FaultRegistry {
  private faults: Array<InstalledFault> = []
  private nextId = 1

  install(spec: FaultSpec): number {
    const id = this.nextId++
    this.faults.push({
      id,
      spec,
      method: spec.method === undefined ? null : regex(`^(?:${spec.method})$`, "i"),
      path: regex(spec.path ?? DEFAULT_PATH[spec.kind], ""),
      matched: 0,
      fired: 0
    })
    return id
  }

  /** Counts the call against every matching fault and returns those that fire. */
  evaluate(method: string, path: string, orgId: number | null): FiredFaults {
    const kinds: Array<FaultSpec["kind"]> = []
    let status: StatusFault | null = null
    let timeout: TimeoutFault | null = null
    let tokenRefused = false
    const failingRows = new Set<number>()
    let failingRowMessage = "simulated failure"
    const readOnly: Array<ReadOnlyFault> = []
    for (const fault of this.faults) {
      if (exhausted(fault)) continue
      if (fault.method !== null && !fault.method.test(method)) continue
      if (!fault.path.test(path)) continue
      if (fault.spec.orgId !== undefined && fault.spec.orgId !== orgId) continue
      fault.matched++
      if (fault.matched < (fault.spec.nth ?? 1)) continue
      fault.fired++
      const spec = fault.spec
      kinds.push(spec.kind)
      switch (spec.kind) {
        case "status":
          status ??= spec
          break
        case "timeout":
          timeout ??= spec
          break
        case "tokenRefused":
          tokenRefused = true
          break
        case "bulkRows":
          for (const row of spec.rows) failingRows.add(row)
          if (spec.message !== undefined) failingRowMessage = spec.message
          break
        case "readOnly":
          readOnly.push(spec)
          break
      }
    }
    return { kinds, status, timeout, tokenRefused, failingRows, failingRowMessage, readOnly }
  }

  list(): Array<FaultStatus> {
    return this.faults.map((fault) => ({
      id: fault.id,
      spec: fault.spec,
      matched: fault.matched,
      fired: fault.fired,
      exhausted: exhausted(fault)
    }))
  }

  remove(id: number): boolean {
    const before = this.faults.length
    this.faults = this.faults.filter((fault) => fault.id !== id)
    return this.faults.length < before
  }

  clear(): number {
    const count = this.faults.length
    this.faults = []
    return count
  }
}
