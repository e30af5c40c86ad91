import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "cli",
    include: ["test/**/*.test.ts"],
    // Re-exports ../server/test/support/globalSetup.ts: the same throwaway PostgreSQL cluster and template.
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
