import * as Os from "node:os"
import { defineConfig } from "vitest/config"
import { LongestFirstSequencer } from "./scripts/testSequencer.ts"

export default defineConfig({
  test: {
    // Each package carries its own vitest.config.ts, so its imports resolve from its own dependencies.
    projects: ["packages/*/vitest.config.ts"],
    // A server file mostly waits on the processes it starts (the server, PostgreSQL, the simulator), so one
    // more file runs than there are cores: vitest's default of one fewer ran a single file at a time on two
    // cores (about 8.8 minutes), one per core took 6.1 and one more 5.4 (bench/history.md).
    maxWorkers: Os.availableParallelism() + 1,
    // The longest files start first, so none of them is left running alone at the end (scripts/testSequencer.ts).
    sequence: { sequencer: LongestFirstSequencer }
  }
})
