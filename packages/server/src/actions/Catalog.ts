/** Every kind the pipeline knows: the 21 proposal kinds and the two revert-only compensations. */
import type { KindName } from "@acs/domain/ProposalKinds"
import type { Kind } from "./Kind.ts"
import { BudgetChange } from "./kinds/BudgetChange.ts"

export const catalog: ReadonlyArray<Kind> = [
  BudgetChange
]

const byName = new Map(catalog.map((kind) => [kind.kind, kind]))

export const kindNamed = (name: KindName): Kind => {
  const kind = byName.get(name)
  if (kind === undefined) throw new Error(`kind ${name} is missing from the catalog`)
  return kind
}
