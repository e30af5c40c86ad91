/**
 * `acs sync`: starts a sync of the account and follows it to its end, with a live progress bar on stderr
 * when stderr is a terminal and plain progress lines otherwise (logs and CI keep one line per change).
 */
import type { Sync } from "@acs/domain/Warehouse"
import { Command, Options } from "@effect/cli"
import { Effect, Ref } from "effect"
import { SyncFailed } from "../CliError.ts"
import { clientOptions, projectId, withClient } from "../Client.ts"
import { emit, renderRecord } from "../Output.ts"

type SyncView = typeof Sync.Type

const POLL = "500 millis"
const BAR_WIDTH = 30

const progressText = (sync: SyncView): string => {
  const { done, step, total } = sync.progress
  const count = total !== undefined && total > 0 ? ` ${done ?? 0}/${total}` : ""
  return `${step ?? "starting"}${count}, ${sync.rowsWritten} rows`
}

const bar = (sync: SyncView): string => {
  const { done = 0, total = 0 } = sync.progress
  const filled = sync.status === "succeeded"
    ? BAR_WIDTH
    : total > 0
    ? Math.min(BAR_WIDTH, Math.round((done / total) * BAR_WIDTH))
    : 0
  return `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}]`
}

const write = (text: string) => Effect.sync(() => process.stderr.write(text))

/** Shows each state of the sync: redraws one line on a terminal, else prints a line when it changes. */
const makeProgress = Effect.gen(function*() {
  const tty = process.stderr.isTTY === true
  const last = yield* Ref.make("")
  return {
    show: (sync: SyncView) =>
      Effect.gen(function*() {
        const text = `sync ${sync.syncId}: ${progressText(sync)}`
        if (tty) return yield* write(`\r\x1b[2K${bar(sync)} ${text}`)
        if ((yield* Ref.getAndSet(last, text)) !== text) yield* write(`${text}\n`)
      }),
    end: tty ? write("\r\x1b[2K") : Effect.void
  }
})

const renderSync = (sync: SyncView) =>
  renderRecord([
    ["sync id", sync.syncId],
    ["status", sync.status],
    ["trigger", sync.trigger],
    ["started at", sync.startedAt],
    ["finished at", sync.finishedAt],
    ["window", sync.windowStart === null ? null : `${sync.windowStart} to ${sync.windowEnd ?? "?"}`],
    ["rows written", sync.rowsWritten],
    ["error", sync.error]
  ])

export const syncCommand = Command.make("sync", {
  projectId,
  noWait: Options.boolean("no-wait").pipe(Options.withDescription("print the started sync and return at once")),
  ...clientOptions
}, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const path = { projectId: input.projectId }
      const started = yield* client.startSync({ path })
      if (input.noWait) return yield* emit(input.json, started, () => renderSync(started))

      const progress = yield* makeProgress
      yield* progress.show(started)
      const finished = yield* Effect.iterate(started, {
        while: (sync) => sync.status === "running",
        body: (sync) =>
          Effect.sleep(POLL).pipe(
            Effect.zipRight(client.getSync({ path: { ...path, syncId: sync.syncId } })),
            Effect.tap(progress.show)
          )
      }).pipe(Effect.ensuring(progress.end))
      yield* emit(input.json, finished, () => renderSync(finished))
      if (finished.status === "failed") {
        return yield* new SyncFailed({ message: `sync ${finished.syncId} failed: ${finished.error ?? "no reason given"}` })
      }
    }))
).pipe(Command.withDescription(
  "start a sync of the account (scope admin) and follow it until it ends: exit 0 when it succeeded, 1 when it failed"
))
