/** Reports and research queries over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Access } from "../auth/Access.ts"
import { Reports } from "../research/Reports.ts"
import { Research } from "../research/Research.ts"

export const ResearchHandlers = HttpApiBuilder.group(Api, "research", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const reports = yield* Reports
    const research = yield* Research
    return handlers
      .handle("runReport", ({ path, payload }) =>
        access.check("runReport", path.projectId).pipe(Effect.flatMap((grant) => reports.run(grant, payload))))
      .handle("searchApps", ({ payload }) =>
        access.check("searchApps").pipe(Effect.flatMap((grant) => research.apps(grant, payload))))
      .handle("searchGeo", ({ payload }) =>
        access.check("searchGeo").pipe(Effect.flatMap((grant) => research.geo(grant, payload))))
      .handle("keywordIdeas", ({ payload }) =>
        access.check("keywordIdeas", payload.projectId).pipe(Effect.flatMap((grant) => research.keywordIdeas(grant, payload))))
  }))
