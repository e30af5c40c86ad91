/**
 * The simulator the `{provider: "simulator"}` connection talks to: with UPSTREAM=simulator (the default)
 * an in-process one on a loopback port (SIMULATOR_SEED, SIMULATOR_SIZE), or the one at SIMULATOR_URL (shared by
 * several instances, as in multi-process tests). With UPSTREAM=apple there is none.
 */
import { startSimulator } from "@acs/upstream/simulator/Simulator"
import { Config, Effect, Layer, Option } from "effect"
import { UpstreamMode } from "./DemoSetup.ts"
import { SimulatorEndpoint } from "./UpstreamLive.ts"
import type { AppleCredentials } from "@acs/upstream/ClientSecret"

const SimulatorConfig = Config.all({
  url: Config.option(Config.string("SIMULATOR_URL")),
  seed: Config.integer("SIMULATOR_SEED").pipe(Config.withDefault(42)),
  size: Config.literal("demo", "bench")("SIMULATOR_SIZE").pipe(Config.withDefault("demo" as const))
})

export const SimulatorLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    if ((yield* UpstreamMode) === "apple") return Layer.empty
    const config = yield* SimulatorConfig
    if (Option.isSome(config.url)) {
      const url = config.url.value.replace(/\/$/, "")
      const credentials = yield* Effect.tryPromise(async () => {
        const response = await fetch(`${url}/_control/credentials`)
        if (!response.ok) throw new Error(`GET ${url}/_control/credentials answered ${response.status}`)
        return await response.json() as AppleCredentials
      })
      return Layer.succeed(SimulatorEndpoint, { url, credentials })
    }
    const simulator = yield* Effect.acquireRelease(
      Effect.tryPromise(() => startSimulator({ seed: config.seed, port: 0, host: "127.0.0.1", size: config.size })),
      (running) => Effect.promise(() => running.close())
    )
    yield* Effect.logInfo("simulator started").pipe(Effect.annotateLogs({ url: simulator.url, seed: config.seed }))
    return Layer.succeed(SimulatorEndpoint, { url: simulator.url, credentials: simulator.credentials })
  }).pipe(Effect.orDie)
)
