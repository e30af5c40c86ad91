/**
 * Orders the suite's files longest first on a fresh clone. Vitest does that itself from the durations it cached
 * on the previous run, but a fresh clone (CI) has no cache and falls back to the larger file first, which started
 * files of 40 to 70 seconds in the run's last minutes and left one core idle behind them. The durations measured
 * in a full run (bench/suite-durations.json, seconds; bench/history.md says how to refresh them) stand in for the
 * cache; files not listed there (short ones) keep vitest's order, after the listed ones.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

const durationsFile = Path.join(import.meta.dirname, "..", "bench", "suite-durations.json")

const readDurations = (): ReadonlyMap<string, number> => {
  const parsed: unknown = JSON.parse(Fs.readFileSync(durationsFile, "utf8"))
  const durations = new Map<string, number>()
  if (typeof parsed === "object" && parsed !== null) {
    for (const [file, seconds] of Object.entries(parsed)) {
      if (typeof seconds === "number") durations.set(file, seconds)
    }
  }
  return durations
}

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const cached = await super.sort(files)
    const root = this.ctx.config.root
    const durations = readDurations()
    const measured = (spec: TestSpecification) => durations.get(Path.relative(root, spec.moduleId)) ?? 0
    // A stable sort keeps vitest's own order (its cache when there is one) among files of equal weight.
    return cached.toSorted((a, b) => measured(b) - measured(a))
  }
}
