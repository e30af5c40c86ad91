/**
 * A bounded graceful shutdown: on SIGTERM or SIGINT the runtime interrupts the app and its layers close (the
 * HTTP server drains, the apply worker finishes the job in hand); if that has not ended the process within
 * SHUTDOWN_TIMEOUT_MS (default 30 s, what orchestrators commonly allow before SIGKILL), it exits with code 1
 * and says so, rather than hang on a connection or a call that never ends.
 */
import { Config, Effect } from "effect"

export const armShutdownDeadline = Effect.gen(function*() {
  const timeoutMs = yield* Config.integer("SHUTDOWN_TIMEOUT_MS").pipe(Config.withDefault(30_000))
  const arm = (signal: NodeJS.Signals) => () => {
    setTimeout(() => {
      process.stderr.write(`${JSON.stringify({ message: "shutdown overran its deadline: exiting", signal, timeoutMs, level: "ERROR" })}\n`)
      process.exit(1)
    }, timeoutMs).unref()
  }
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, arm(signal))
})
