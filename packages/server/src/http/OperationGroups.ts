/**
 * The REST handler groups of the operations, generated from the API declaration: each endpoint is its
 * operation (`operate.handler(op)`), unless the group's REST extras say otherwise. The extras are what only
 * HTTP has: the session cookie (AuthHandlers), a `Location` or `Idempotency-Replay` (ProposalsExtras,
 * ActionsExtras, WarehouseExtras), a page written as already encoded (ActionsExtras), the SSE stream
 * (EventsExtras). An endpoint added to a group needs no code here. An operation that names its account in
 * the body (keyword ideas) has its caller checked by the front door and its reach by `operate.handler`.
 */
import { Api } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { type HttpApi, HttpApiBuilder, type HttpApiGroup } from "@effect/platform"
import { Effect, Layer } from "effect"
import { makeOperate } from "../operations/Operate.ts"
import { ActionsExtras } from "./ActionsExtras.ts"
import { AuthExtras } from "./AuthHandlers.ts"
import { EventsExtras } from "./EventsExtras.ts"
import { ProposalsExtras } from "./ProposalsExtras.ts"
import type { RestExtras } from "./RestExtras.ts"
import { WarehouseExtras } from "./WarehouseExtras.ts"

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

const operationGroup = <const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>, E = never, R = never>(
  name: Name,
  extras?: Effect.Effect<RestExtras, E, R>
) =>
  HttpApiBuilder.group(Api, name, (handlers) =>
    Effect.gen(function*() {
      const operate = yield* makeOperate
      const own: RestExtras = extras === undefined ? {} : yield* extras
      const group = Api.groups[name]
      if (group === undefined) return yield* Effect.dieMessage(`no group ${name} in the API`)
      // An extra for an endpoint of another group would never run: the server does not start with one.
      const stray = Object.keys(own).filter((operation) => !Object.hasOwn(group.endpoints, operation))
      if (stray.length > 0) return yield* Effect.dieMessage(`REST extras of ${name} for no endpoint of it: ${stray.join(", ")}`)
      let handled = handlers as unknown as EachHandled
      for (const endpoint of Object.values(group.endpoints)) {
        const operation: string = endpoint.name
        if (!isOperation(operation)) return yield* Effect.dieMessage(`${name}.${operation} is no operation of the table`)
        handled = handled.handle(operation, own[operation] ?? operate.handler(operation))
      }
      // Each endpoint was handled by its own operation's handler or its own extra, both typed by that
      // endpoint (operations/OperationTypes.ts, `RestExtras`): the group's type, restored.
      return handled as unknown as Handled<typeof handlers>
    }))

export const OperationGroupsLive = Layer.mergeAll(
  operationGroup("auth", AuthExtras),
  operationGroup("keys"),
  operationGroup("people"),
  operationGroup("settings"),
  operationGroup("accounts"),
  operationGroup("connection"),
  operationGroup("warehouse", WarehouseExtras),
  operationGroup("proposals", ProposalsExtras),
  operationGroup("actions", ActionsExtras),
  operationGroup("changesets"),
  operationGroup("insights"),
  operationGroup("research"),
  operationGroup("events", EventsExtras),
  operationGroup("webhooks")
)
