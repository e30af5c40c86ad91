import { defineWorkspace } from "vitest/config"

// Each package carries its own vitest.config.ts, so its imports resolve from its own dependencies.
export default defineWorkspace(["packages/*/vitest.config.ts"])
