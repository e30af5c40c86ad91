/**
 * The spend envelope (docs/contract.md 3.3) as one pure rule: whether a raise of daily budgets fits the account's
 * 24-hour envelope (applied and reserved raises) and its ceiling (the sum of daily budgets, with the raises
 * approved and on their way). The proposal statement evaluates the same two comparisons under the account's lock
 * (ProposalStatement.ts), the preview and `GET …/policy` here; property-tested in test/unit/envelope.test.ts.
 */

/** The envelope's numbers in micros, as `acs_account_envelope` reads them. */
export interface EnvelopeState {
  /** Net change of daily budgets applied in the last 24 hours. */
  readonly used: number
  /** Raises recorded and not ended (a demoted one only once approved again). */
  readonly reserved: number
  /** Of `reserved`, the approved ones on their way. */
  readonly committed: number
  /** The sum of the account's campaign daily budgets. */
  readonly total: number
  readonly maxIncrease: number
  readonly maxTotal: number | null
}

export interface EnvelopeCheck {
  /** Within the 24-hour envelope: it may auto-apply as far as money goes. */
  readonly fits24h: boolean
  /** Within the ceiling: it may be approved. */
  readonly underCeiling: boolean
}

/** What a raise of `raise` micros meets; a change that raises nothing always fits. */
export const checkEnvelope = (state: EnvelopeState, raise: number): EnvelopeCheck =>
  raise <= 0
    ? { fits24h: true, underCeiling: true }
    : {
      fits24h: state.used + state.reserved + raise <= state.maxIncrease,
      underCeiling: state.maxTotal === null || state.total + state.committed + raise <= state.maxTotal
    }

/**
 * The reasons' numbers as text: money already formatted, or `format()` placeholders the statement fills in
 * (the numbers are read under the lock).
 */
export interface EnvelopeNumbers {
  readonly raise: string
  readonly after: string
  readonly max: string
  readonly used: string
  readonly reserved: string
}

export const envelopeReason = (n: EnvelopeNumbers): string =>
  `spend envelope: this raise of ${n.raise} would bring the net increase of daily budgets in 24 hours to ${n.after}, ` +
  `past the envelope of ${n.max} (${n.used} applied, ${n.reserved} reserved by changes not yet applied)`

export const ceilingReason = (n: Pick<EnvelopeNumbers, "raise" | "after" | "max">): string =>
  `budget ceiling: this raise of ${n.raise} would bring the account's daily budgets to ${n.after}, past its ceiling of ` +
  `${n.max}: nobody can approve it until budgets fall or an admin raises the ceiling`

/** The reasons a raise is held by (each absent when it fits), worded with `money`. */
export const envelopeReasons = (
  state: EnvelopeState,
  raise: number,
  money: (micros: number) => string
): { readonly envelope: string | undefined; readonly ceiling: string | undefined } => {
  const check = checkEnvelope(state, raise)
  return {
    envelope: check.fits24h ? undefined : envelopeReason({
      raise: money(raise),
      after: money(state.used + state.reserved + raise),
      max: money(state.maxIncrease),
      used: money(state.used),
      reserved: money(state.reserved)
    }),
    ceiling: check.underCeiling ? undefined : ceilingReason({
      raise: money(raise),
      after: money(state.total + state.committed + raise),
      max: money(state.maxTotal ?? 0)
    })
  }
}

/** Kinds whose payload may raise daily budgets (`acs_budget_delta`): only their proposals read the envelope. */
export const RAISING_KINDS: ReadonlySet<string> = new Set(["budget_change", "apply_recommendation", "create_campaign", "clone_campaign"])
