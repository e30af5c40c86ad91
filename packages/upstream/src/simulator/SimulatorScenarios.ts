/**
 * Scenarios injected through the control API: "from this hour on, this entity's installs per tap (or
 * cost per tap) change by X %", and, with `everyDay`, "it serves every day" (no quiet days, which every source
 * otherwise has at random: a test that judges a day after a change needs that day to have data). A scenario on a
 * campaign or an ad group applies to every keyword and Search Match under it; several on one source multiply.
 * Hours before `from` keep their numbers.
 */

export interface Scenario {
  /** A campaign, ad group or keyword id (ids are unique across kinds). */
  readonly entityId: number
  /** The moment (the account's calendar, see momentOf: day + hour / 24) from which it applies. */
  readonly from: number
  /** e.g. -40: installs per tap fall 40 %. */
  readonly installsPerTapPercent: number
  readonly cptPercent: number
  readonly everyDay: boolean
}

export class Scenarios {
  private readonly byEntity = new Map<number, Array<Scenario>>()

  add(scenario: Scenario): void {
    const list = this.byEntity.get(scenario.entityId) ?? []
    list.push(scenario)
    this.byEntity.set(scenario.entityId, list)
  }

  of(entityId: number): ReadonlyArray<Scenario> | undefined {
    return this.byEntity.get(entityId)
  }

  list(): Array<Scenario> {
    return [...this.byEntity.values()].flat()
  }

  clear(): number {
    const count = this.list().length
    this.byEntity.clear()
    return count
  }
}
