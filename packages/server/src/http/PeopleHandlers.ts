/** The workspace's people over REST: list, add, set a role, disable or enable, revoke their keys (admins). */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const PeopleHandlers = HttpApiBuilder.group(Api, "people", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("listPeople", operate.handler("listPeople"))
      .handle("createPerson", operate.handler("createPerson"))
      .handle("updatePerson", operate.handler("updatePerson"))
      .handle("revokePersonKeys", operate.handler("revokePersonKeys"))
  }))
