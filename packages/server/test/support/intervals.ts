/** How many intervals (from, to) were open at once at most: the syncs that ran together, in the test and the bench. */
export const mostAtOnce = (intervals: ReadonlyArray<readonly [number, number]>): number => {
  const edges = intervals.flatMap(([from, to]) => [[from, 1], [to, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let most = 0
  for (const [, step] of edges) {
    open += step
    most = Math.max(most, open)
  }
  return most
}
