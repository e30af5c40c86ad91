import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "cli",
    include: ["test/**/*.test.ts"],
    // Re-exports ../server/test/support/globalSetup.ts: the same throwaway PostgreSQL cluster and template.
    globalSetup: ["test/support/globalSetup.ts"],
    // Hang detectors sized for a loaded 2-core CI machine, as in packages/server/vitest.config.ts.
    testTimeout: 10 * 60_000,
    hookTimeout: 10 * 60_000
  }
})
