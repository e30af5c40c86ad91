import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "upstream",
    include: ["test/**/*.test.ts"],
    // Hang detectors sized for a loaded 2-core CI machine, as in packages/server/vitest.config.ts.
    testTimeout: 5 * 60_000,
    hookTimeout: 5 * 60_000
  }
})
