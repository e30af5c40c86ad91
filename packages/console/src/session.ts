/** Who is signed in and what they reach: the pages' shared context. */
import type { Account } from "@acs/domain/Accounts"
import type { Actor } from "@acs/domain/Actions"
import type { Principal } from "@acs/domain/Principal"

export interface Session {
  readonly me: Principal
  readonly accounts: ReadonlyArray<Account>
}

export const accountOf = (session: Session, projectId: string): Account | undefined =>
  session.accounts.find((a) => a.projectId === projectId)

export const actorLabel = (actor: Actor): string => {
  switch (actor.kind) {
    case "key":
      return `key “${actor.name}”`
    case "person":
      return actor.name
    case "external":
      return `${actor.name} (outside acs)`
    case "system":
      return `acs (${actor.name})`
  }
}
