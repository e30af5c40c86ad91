/**
 * What the platform says of an API client's request budget, handed to whoever keeps it: the server records it per
 * credential so its sync scheduler starts nothing more on a credential until the budget resets. The client reports
 * only what matters for that, an exhausted budget: a 429 (its `Retry-After`, else `RateLimit-Reset`) or an answer
 * whose `RateLimit-Remaining` is 0 (its `RateLimit-Reset`). Optional: without an observer nothing is reported.
 */
import { Context, type Effect } from "effect"

export interface RateLimitObservation {
  /** The OAuth client id the credentials sign in as. */
  readonly clientId: string
  /** How long from now the budget stays exhausted. */
  readonly limitedForMs: number
  /** The answer's status (429, or the 2xx that spent the last request). */
  readonly status: number
}

export class RateLimitObserver extends Context.Tag("acs/RateLimitObserver")<RateLimitObserver, {
  readonly observe: (observation: RateLimitObservation) => Effect.Effect<void>
}>() {}
