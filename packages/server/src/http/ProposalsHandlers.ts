/**
 * The 21 proposal endpoints over REST, one generic handler per kind of the catalog: access, then
 * `Proposals.propose`; 201 + `Location`, or 200 + `Idempotency-Replay: true` on a replay.
 */
import { Api } from "@acs/domain/Api"
import type { ProposalKind } from "@acs/domain/ProposalKinds"
import { HttpApiBuilder, HttpApp, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { catalog } from "../actions/Catalog.ts"
import { requestHash } from "../actions/Idempotency.ts"
import type { Kind } from "../actions/Kind.ts"
import { Proposals } from "../actions/Proposals.ts"
import { Access } from "../auth/Access.ts"

interface ProposalRequest {
  readonly path: { readonly projectId: string }
  readonly payload: unknown
  readonly headers: { readonly "idempotency-key"?: string | undefined }
  readonly request: HttpServerRequest.HttpServerRequest
}

export const ProposalsHandlers = HttpApiBuilder.group(Api, "proposals", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const proposals = yield* Proposals

    const handlerFor = (kind: Kind, declaration: ProposalKind) => ({ path, payload, headers, request }: ProposalRequest) =>
      Effect.gen(function*() {
        const grant = yield* access.check(declaration.operation, path.projectId)
        const key = headers["idempotency-key"]
        const { response, replayed } = yield* proposals.propose({
          principal: grant.principal,
          account: grant.account,
          kind,
          body: payload,
          idempotency: key === undefined ? undefined : { key, hash: requestHash(request.method, request.url, payload) }
        })
        yield* HttpApp.appendPreResponseHandler((_request, answer) =>
          Effect.succeed(
            HttpServerResponse.setHeaders(replayed ? HttpServerResponse.setStatus(answer, 200) : answer, {
              location: `/api/v1/accounts/${grant.account.projectId}/actions/${response.actionId}`,
              ...(replayed ? { "idempotency-replay": "true" } : {})
            })
          )
        )
        return response
      })

    let result = handlers
    for (const kind of catalog) {
      if (kind.declaration === undefined) continue
      // The group's endpoints are generated from the same catalog, so each iteration handles one of them;
      // the compiler cannot follow a loop over a tuple, hence the widening back to the group's handler type.
      result = result.handle(kind.declaration.operation, handlerFor(kind, kind.declaration)) as unknown as typeof handlers
    }
    return result as unknown as ReturnType<typeof handlers.handle<ProposalKind["operation"], never>>
  }))
