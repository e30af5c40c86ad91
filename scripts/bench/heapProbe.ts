/**
 * Loaded into acs's API process by the streams part of the benchmark (NODE_OPTIONS `--expose-gc --import`):
 * on SIGUSR2 it runs a full collection and prints the process's memory as one JSON line on stdout, so the
 * bench reads the memory that stays, not garbage waiting for a collection (scripts/bench/streams.ts).
 */
const collect = (globalThis as { readonly gc?: () => void }).gc

process.on("SIGUSR2", () => {
  collect?.()
  collect?.()
  process.stdout.write(`${JSON.stringify({ heapProbe: { ...process.memoryUsage(), collected: collect !== undefined } })}\n`)
})
