/** Every call the simulator answered (control calls excepted), for tests to assert on. */

export interface CallRecord {
  /** 1, 2, 3... in arrival order; `?since=` on the control endpoint filters by it. */
  readonly seq: number
  /** ISO time the call arrived (simulator clock). */
  readonly time: string
  readonly method: string
  readonly path: string
  readonly query: string
  readonly status: number
  /** From X-AP-Context, when the call had one that parsed. */
  readonly orgId: number | null
  readonly requestId: string
  /** Fault kinds that fired on this call. */
  readonly faults: ReadonlyArray<string>
  /** Why the simulator refused, when it did (e.g. the token endpoint's reason). */
  readonly reason: string | null
}

export interface CallFilter {
  readonly method?: string
  /** Regex over the path. */
  readonly path?: RegExp
  readonly since?: number
}

// Enough for a benchmark's worth of calls without growing without bound.
const MAX_RECORDS = 200_000

export class CallLog {
  private records: Array<CallRecord> = []
  private seq = 0

  record(call: Omit<CallRecord, "seq">): CallRecord {
    // Spelled out, not `{seq, ...call}` (a slow path on this V8, see SimulatorHttp's copyHeaders).
    const record: CallRecord = {
      seq: ++this.seq,
      time: call.time,
      method: call.method,
      path: call.path,
      query: call.query,
      status: call.status,
      orgId: call.orgId,
      requestId: call.requestId,
      faults: call.faults,
      reason: call.reason
    }
    this.records.push(record)
    if (this.records.length > MAX_RECORDS) this.records.splice(0, this.records.length - MAX_RECORDS)
    return record
  }

  list(filter: CallFilter = {}): Array<CallRecord> {
    return this.records.filter((record) =>
      (filter.method === undefined || record.method === filter.method.toUpperCase()) &&
      (filter.path === undefined || filter.path.test(record.path)) &&
      (filter.since === undefined || record.seq > filter.since)
    )
  }

  clear(): number {
    const count = this.records.length
    this.records = []
    return count
  }
}
