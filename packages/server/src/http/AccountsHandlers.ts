/** The workspace's accounts, and importing upstream accounts as projects, over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const AccountsHandlers = HttpApiBuilder.group(Api, "accounts", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("listAccounts", operate.handler("listAccounts"))
      .handle("getAccount", operate.handler("getAccount"))
      .handle("importAccounts", operate.handler("importAccounts"))
  }))
