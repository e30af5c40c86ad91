/**
 * The proof of one access check: which operation, for whom, in which org, on which account. Only
 * `Access.check` (auth/) makes one; service methods that need authority take it. It is declared here, with
 * the account record it carries, so services at every layer above accounts can name it without importing auth.
 */
import type { OperationName, Operations } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import type { AccountRecord } from "./AccountRecord.ts"

declare const GrantedBrand: unique symbol

type AccountOperation = {
  [K in OperationName]: (typeof Operations)[K] extends { readonly account: true } ? K : never
}[OperationName]

export interface Granted<Op extends OperationName> {
  readonly [GrantedBrand]: Op
  readonly operation: Op
  readonly principal: Principal
  readonly orgId: string
  readonly account: Op extends AccountOperation ? AccountRecord : undefined
}
