/** The ledger, approvals, decisions, revert, the policy document and the target band over REST. */
import { Api } from "@acs/domain/Api"
import { NotFound } from "@acs/domain/Errors"
import { clampLimit, DEFAULT_DAYS } from "@acs/domain/Warehouse"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { Approvals } from "../actions/Approvals.ts"
import { Ledger, LEDGER_DEFAULT_LIMIT, LEDGER_MAX_LIMIT } from "../actions/Ledger.ts"
import { Revert } from "../actions/Revert.ts"
import { Access } from "../auth/Access.ts"
import { PolicyDocument } from "../policy/PolicyDocument.ts"
import { Targets } from "../policy/Targets.ts"
import { freshnessFor } from "../warehouse/Reads.ts"
import { windowEndingYesterday } from "../warehouse/Window.ts"

export const ActionsHandlers = HttpApiBuilder.group(Api, "actions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const ledger = yield* Ledger
    const approvals = yield* Approvals
    const revert = yield* Revert
    const policy = yield* PolicyDocument
    const targets = yield* Targets
    return handlers
      .handle("listActions", ({ path, urlParams }) =>
        access.check("listActions", path.projectId).pipe(
          Effect.flatMap((grant) =>
            ledger.list(grant.account.projectId, {
              limit: Math.min(LEDGER_MAX_LIMIT, Math.max(1, urlParams.limit ?? LEDGER_DEFAULT_LIMIT)),
              before: urlParams.before,
              status: urlParams.status,
              kind: urlParams.kind,
              origin: urlParams.origin
            })
          )
        ))
      .handle("getAction", ({ path }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("getAction", path.projectId)
          const action = yield* ledger.find(grant.account.projectId, path.actionId)
          if (action === undefined) return yield* new NotFound({ message: `no action ${path.actionId} in this account` })
          return action
        }))
      .handle("listApprovals", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("listApprovals", path.projectId)
          const { rows, total } = yield* ledger.pending(grant.account.projectId, clampLimit(urlParams.limit))
          const now = yield* Clock.currentTimeMillis
          return {
            approvals: rows,
            total,
            truncated: rows.length < total,
            dataFreshness: freshnessFor(grant.account, windowEndingYesterday(now, grant.account.timeZone, DEFAULT_DAYS), now)
          }
        }))
      .handle("approveAction", ({ path }) =>
        access.check("approveAction", path.projectId).pipe(Effect.flatMap((grant) => approvals.approve(grant, path.actionId))))
      .handle("rejectAction", ({ path, payload }) =>
        access.check("rejectAction", path.projectId).pipe(
          Effect.flatMap((grant) => approvals.reject(grant, path.actionId, payload.reason))
        ))
      .handle("revertAction", ({ path }) =>
        Effect.gen(function*() {
          const grant = yield* access.check("revertAction", path.projectId)
          const response = yield* revert.revert(grant, path.actionId)
          yield* HttpApp.appendPreResponseHandler((_request, answer) =>
            Effect.succeed(HttpServerResponse.setHeader(
              answer,
              "location",
              `/api/v1/accounts/${grant.account.projectId}/actions/${response.actionId}`
            ))
          )
          return response
        }))
      .handle("getPolicy", ({ path }) => access.check("getPolicy", path.projectId).pipe(Effect.flatMap(policy.get)))
      .handle("getTargets", ({ path }) => access.check("getTargets", path.projectId).pipe(Effect.flatMap(targets.get)))
      .handle("updateTargets", ({ path, payload }) =>
        access.check("updateTargets", path.projectId).pipe(Effect.flatMap((grant) => targets.put(grant, payload))))
  }))
