/**
 * The one access check (docs/decisions/architecture.md). Every service method that needs authority
 * takes a `Granted<Op>`, and only `Access.check` can make one: a surface that forgets the check does not
 * compile.
 */
import { AccountMismatch, ForbiddenScope, InvalidRequest } from "@acs/domain/Errors"
import { bucketOf, type OperationName, Operations, satisfiesScope } from "@acs/domain/Operations"
import { CurrentPrincipal, type Principal } from "@acs/domain/Principal"
import { Effect, Option } from "effect"
import { Accounts, reaches } from "../accounts/Accounts.ts"
import type { Granted } from "../accounts/Granted.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { RateLimits } from "../limits/RateLimits.ts"
import { currentRequestAuthorization } from "./RequestAuthorization.ts"

export type { Granted }

const unreachable = (projectId: string) =>
  new AccountMismatch({ message: `this credential cannot reach account ${projectId}` })

/** Scope, grant and org-level refusal (docs/contract.md 5): what the caller may do anywhere, whatever the account. */
export const callerRefusal = (principal: Principal, operation: OperationName): Option.Option<ForbiddenScope> => {
  const op: (typeof Operations)[OperationName] = Operations[operation]
  if (!satisfiesScope(principal.scope, op.scope)) {
    return Option.some(new ForbiddenScope({
      message: `this call needs scope "${op.scope}"; the credential has "${principal.scope}"`,
      required_scope: op.scope,
      key_scope: principal.scope
    }))
  }
  if ("grant" in op && op.grant === "approve" && !principal.canApprove) {
    return Option.some(new ForbiddenScope({
      message: "this call needs the canApprove grant on top of scope \"write\"",
      required_grant: "approve"
    }))
  }
  if ("orgLevel" in op && principal.binding.kind === "account") {
    return Option.some(new ForbiddenScope({
      message: "this is an org-level endpoint; keys bound to one account cannot call it",
      required_scope: op.scope,
      key_scope: principal.scope
    }))
  }
  return Option.none()
}

export class Access extends Effect.Service<Access>()("acs/Access", {
  effect: Effect.gen(function*() {
    const accounts = yield* Accounts
    const rateLimits = yield* RateLimits

    /** The rate-limit bucket, scope, grant, org-level refusal, then account reach: docs/contract.md 5 and 8. */
    const authorize = (principal: Principal, operation: OperationName, projectId: string | undefined, preview: boolean) =>
      Effect.gen(function*() {
        const op: (typeof Operations)[OperationName] = Operations[operation]
        const bucket = bucketOf(operation, preview)
        if (bucket !== "none") yield* rateLimits.consumeWithHeaders(`${principal.kind}:${principal.id}`, bucket)
        const refused = callerRefusal(principal, operation)
        if (Option.isSome(refused)) return yield* refused.value
        if (!("account" in op)) return undefined
        const target = projectId === "current"
          ? principal.binding.kind === "account"
            ? principal.binding.projectId
            : yield* new InvalidRequest({
              message: "projectId: `current` works only with a key bound to one account; pass an explicit projectId"
            })
          : projectId ?? ""
        if (!reaches(principal.binding, target)) return yield* unreachable(target)
        const account = yield* accounts.findForAccess(target)
        // Another org's account and an unknown one answer alike: existence never leaks across orgs.
        if (Option.isNone(account) || account.value.orgId !== principal.orgId) return yield* unreachable(target)
        return account.value
      })

    /**
     * The check for a caller already in hand (the front door's, which provides no `CurrentPrincipal` for it).
     * `preview`: the call is a proposal's dry run, counted in the read bucket (docs/contract.md 4.1).
     */
    const checkAs = <Op extends OperationName>(principal: Principal, operation: Op, projectId: string | undefined, preview: boolean) =>
      Effect.map(
        authorize(principal, operation, projectId, preview),
        (account) => ({ operation, principal, orgId: principal.orgId, account }) as unknown as Granted<Op>
      ).pipe(Effect.withSpan(`access.${operation}`, HOT_SPAN))

    /** `options.preview`: the call is a proposal's dry run, counted in the read bucket (docs/contract.md 4.1). */
    const check = <Op extends OperationName>(operation: Op, projectId?: string, options?: { readonly preview?: boolean }) =>
      Effect.flatMap(currentRequestAuthorization, (checked) =>
        // The front door already checked this very operation on this account for the request (its span says so).
        Option.isSome(checked) && checked.value.operation === operation && checked.value.projectId === projectId
          ? Effect.succeed(checked.value.grant as Granted<Op>)
          : Effect.flatMap(CurrentPrincipal, (principal) => checkAs(principal, operation, projectId, options?.preview === true)))

    return { check, checkAs } as const
  })
}) {}
