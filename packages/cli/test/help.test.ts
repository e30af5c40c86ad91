/**
 * What `acs` says about itself, from the built command (server/test/support/entries.ts): the version, the
 * commands, each command's help within 100 columns, and an unknown command refused with exit code 2.
 */
import { describe, expect, it } from "vitest"
import cliPackage from "../package.json" with { type: "json" }
import { commands } from "../src/Commands.ts"
import { inBatches, runAcs } from "./support/runAcs.ts"

const tooWide = (text: string) => text.split("\n").filter((line) => line.length > 100)

describe("acs help", () => {
  it("prints the package version, and lists every command in 100 columns", async () => {
    const [version, help] = await Promise.all([runAcs(["--version"], {}), runAcs(["--help"], {})])
    expect(version).toMatchObject({ code: 0, stdout: `${cliPackage.version}\n` })
    expect(help.code).toBe(0)
    for (const { name } of commands) expect(help.stdout).toMatch(new RegExp(`^  ${name} `, "m"))
    expect(tooWide(help.stdout)).toEqual([])
  })

  it("gives each command's arguments and options in 100 columns", async () => {
    const paths = [...commands.map((c) => [c.name]), ["keys", "create"], ["people", "add"], ["orgs", "create"], ["changeset", "add"], ["changeset", "list"]]
    const runs = await inBatches(paths, 4, (path) => runAcs([...path, "--help"], {}))
    runs.forEach((run, i) => {
      const path = paths[i]!
      expect({ path, code: run.code, stderr: run.stderr }).toEqual({ path, code: 0, stderr: "" })
      expect(run.stdout).toMatch(new RegExp(`^USAGE\\n  acs ${path.join(" ")}`))
      expect({ path, wide: tooWide(run.stdout) }).toEqual({ path, wide: [] })
    })
    const propose = runs[commands.findIndex((c) => c.name === "propose")]!
    expect(propose.stdout).toMatch(/^ {2}--idempotency-key text +a retry with the same key/m)
  })

  it("refuses an unknown command with exit code 2", async () => {
    const run = await runAcs(["frobnicate"], {})
    expect(run).toMatchObject({ code: 2, stdout: "" })
    expect(run.stderr).toMatch(/^acs: invalid_request: unknown command "frobnicate"/)
  })
})
