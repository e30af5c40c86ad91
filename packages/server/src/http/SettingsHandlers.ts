/** The org settings (kill switch) over REST. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Access } from "../auth/Access.ts"
import { OrgSettings } from "../settings/Settings.ts"

export const SettingsHandlers = HttpApiBuilder.group(Api, "settings", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const settings = yield* OrgSettings
    return handlers
      .handle("getSettings", () => access.check("getSettings").pipe(Effect.flatMap(settings.get)))
      .handle("updateSettings", ({ payload }) =>
        access.check("updateSettings").pipe(Effect.flatMap((grant) => settings.update(grant, payload))))
  }))
