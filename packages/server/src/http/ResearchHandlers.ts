/** Reports and research queries over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { makeOperate } from "../operations/Operate.ts"

export const ResearchHandlers = HttpApiBuilder.group(Api, "research", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    return handlers
      .handle("runReport", operate.handler("runReport"))
      .handle("searchApps", operate.handler("searchApps"))
      .handle("searchGeo", operate.handler("searchGeo"))
      // Names its account in the body: the front door checked the caller, this checks the reach.
      .handle("keywordIdeas", operate.handler("keywordIdeas"))
  }))
