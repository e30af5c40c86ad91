/**
 * The platform's request budget per API client (credential), as the simulator runs it: a fixed window of
 * `windowSeconds` holding `limit` requests, advertised on every v1 answer as `RateLimit-Limit`,
 * `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the window resets). Advertised only by default; with
 * `enforce`, a request beyond the budget is answered 429 with `Retry-After` (the same seconds) and not processed.
 */

export interface RateLimitBudget {
  readonly limit: number
  readonly windowSeconds: number
  /** Refuse requests beyond the budget (429), rather than only advertise it. */
  readonly enforce: boolean
}

/** What the simulator advertises when told nothing (Apple publishes no numbers). */
export const DEFAULT_BUDGET: RateLimitBudget = { limit: 600, windowSeconds: 60, enforce: false }

export interface WindowState {
  readonly limit: number
  readonly remaining: number
  /** Seconds until the window resets. */
  readonly resetSeconds: number
  /** This request is beyond an enforced budget: answer 429. */
  readonly refused: boolean
}

export class SimulatorRateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(private budget: RateLimitBudget = DEFAULT_BUDGET) {}

  get current(): RateLimitBudget {
    return this.budget
  }

  /** A new budget; the windows start afresh. */
  set(budget: RateLimitBudget): void {
    this.budget = budget
    this.windows.clear()
  }

  /** Counts one request of `credential` (a refused one is not counted) and says where its window stands. */
  take(credential: string, now: number): WindowState {
    const { limit, windowSeconds, enforce } = this.budget
    const known = this.windows.get(credential)
    const window = known === undefined || now - known.start >= windowSeconds * 1000 ? { start: now, count: 0 } : known
    this.windows.set(credential, window)
    const resetSeconds = Math.max(1, Math.ceil((window.start + windowSeconds * 1000 - now) / 1000))
    if (enforce && window.count >= limit) return { limit, remaining: 0, resetSeconds, refused: true }
    window.count++
    return { limit, remaining: Math.max(0, limit - window.count), resetSeconds, refused: false }
  }
}
