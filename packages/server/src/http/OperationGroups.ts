/**
 * The REST handler groups whose every endpoint is its operation and nothing more (`operate.handler(op)`),
 * generated from the API declaration: an endpoint added to one of them needs no code here. The groups whose
 * endpoints add what only HTTP has keep their own files, the REST extras: the session cookie (AuthHandlers),
 * a `Location` or `Idempotency-Replay` (ProposalsHandlers, ActionsHandlers, WarehouseHandlers), a page written
 * as already encoded (ActionsHandlers), the SSE stream (EventsHandlers). An operation that names its account
 * in the body (keyword ideas) has its caller checked by the front door and its reach by `operate.handler`.
 */
import { Api } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { type HttpApi, HttpApiBuilder, type HttpApiGroup } from "@effect/platform"
import { Effect, Layer } from "effect"
import { makeOperate } from "../operations/Operate.ts"

type Groups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never

/** A group's handlers with every endpoint handled, as `HttpApiBuilder.group` takes them. */
type Handled<H> = H extends HttpApiBuilder.Handlers<infer E, infer Provides, infer _R, infer _Endpoints>
  ? HttpApiBuilder.Handlers<E, Provides, never, never>
  : never

/** What a loop over a group's endpoints can say of its handlers (the compiler cannot follow it to each name). */
interface EachHandled {
  readonly handle: (name: OperationName, handler: unknown) => EachHandled
}

const isOperation = (name: string): name is OperationName => Object.hasOwn(Operations, name)

const operationGroup = <const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>>(name: Name) =>
  HttpApiBuilder.group(Api, name, (handlers) =>
    Effect.gen(function*() {
      const operate = yield* makeOperate
      let handled = handlers as unknown as EachHandled
      const group = Api.groups[name]
      if (group === undefined) return yield* Effect.dieMessage(`no group ${name} in the API`)
      for (const endpoint of Object.values(group.endpoints)) {
        if (!isOperation(endpoint.name)) return yield* Effect.dieMessage(`${name}.${endpoint.name} is no operation of the table`)
        handled = handled.handle(endpoint.name, operate.handler(endpoint.name))
      }
      // Each endpoint of the group was handled by its own operation's handler, whose input and answer are
      // derived from that endpoint (operations/OperationTypes.ts): the group's type, restored.
      return handled as unknown as Handled<typeof handlers>
    }))

export const OperationGroupsLive = Layer.mergeAll(
  operationGroup("keys"),
  operationGroup("people"),
  operationGroup("settings"),
  operationGroup("accounts"),
  operationGroup("connection"),
  operationGroup("insights"),
  operationGroup("research"),
  operationGroup("webhooks")
)
