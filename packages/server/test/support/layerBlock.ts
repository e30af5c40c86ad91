/**
 * `layer` of @effect/vitest, leaving vitest's shared `it` as it found it. @effect/vitest 0.30 puts a block's
 * runners (`effect`, `scoped`, …, bound to the block's layer) on vitest's own `it` object and never takes them
 * back, so a file that ran later in the same worker, or an `it.effect` after the block, ran in that block's layer
 * (without the test services when it excludes them: "testClock.adjust is not a function"). The block registers
 * its tests while it runs, so the runners are put back as soon as it returns.
 */
import { it as sharedIt, layer as effectLayer, type Vitest } from "@effect/vitest"
import type { Duration, Layer } from "effect"

const RUNNERS = ["effect", "scoped", "live", "scopedLive", "flakyTest", "layer", "prop"] as const
const defaults = Object.fromEntries(RUNNERS.map((name) => [name, sharedIt[name]]))

export const layer = <R, E, const ExcludeTestServices extends boolean = false>(
  layer_: Layer.Layer<R, E>,
  options?: { readonly timeout?: Duration.DurationInput; readonly excludeTestServices?: ExcludeTestServices }
) =>
(name: string, f: (it: Vitest.MethodsNonLive<R, ExcludeTestServices>) => void): void =>
  effectLayer(layer_, options)(name, (it) => {
    try {
      f(it)
    } finally {
      Object.assign(it, defaults)
    }
  })
