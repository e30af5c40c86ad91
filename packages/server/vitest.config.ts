import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    // Hang detectors, not performance bounds: the suite must pass on a loaded 2-core CI machine, where a
    // file that starts servers can take many times as long as on an idle one. Waits inside tests poll
    // their condition for minutes and fail first, with a message (test/support/wait.ts).
    testTimeout: 10 * 60_000,
    hookTimeout: 10 * 60_000
  }
})
