/**
 * Which upstream account an imported account is once its connection reaches the platform differently
 * (v5 campaign-group org ids → v1 ad account ids): the same id where the new listing still has it, else
 * the one reachable account of the same name and currency that no other imported account claims. Ambiguous
 * or missing accounts stay as they are (a later sync marks them disconnected), never guessed.
 */
export interface ImportedAccount {
  readonly projectId: string
  readonly upstreamAccountId: string
  readonly name: string
  readonly currency: string
}

export interface ReachableAccount {
  readonly upstreamAccountId: string
  readonly name: string
  readonly currency: string
}

export interface AccountMove {
  readonly projectId: string
  readonly from: string
  readonly to: string
}

const sameAccount = (a: ImportedAccount, b: ReachableAccount) => a.name === b.name && a.currency === b.currency

export const mapImportedAccounts = (
  imported: ReadonlyArray<ImportedAccount>,
  reachable: ReadonlyArray<ReachableAccount>
): ReadonlyArray<AccountMove> => {
  const reachableIds = new Set(reachable.map((a) => a.upstreamAccountId))
  const importedIds = new Set(imported.map((a) => a.upstreamAccountId))
  const unmatched = imported.filter((a) => !reachableIds.has(a.upstreamAccountId))
  // A reachable account already imported under its own id is taken, whatever its name.
  const free = reachable.filter((a) => !importedIds.has(a.upstreamAccountId))
  return unmatched.flatMap((account) => {
    const candidates = free.filter((r) => sameAccount(account, r))
    const rivals = unmatched.filter((other) => candidates.some((c) => sameAccount(other, c)))
    return candidates.length === 1 && rivals.length === 1
      ? [{ projectId: account.projectId, from: account.upstreamAccountId, to: candidates[0]!.upstreamAccountId }]
      : []
  })
}
