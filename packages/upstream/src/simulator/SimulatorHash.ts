/**
 * The simulator's only source of randomness: a fast 32-bit integer hash. Everything generated (the org
 * tree, every metric of every day) is a pure function of the seed and integer inputs, so two simulators
 * with one seed answer identically and nothing per day needs to be stored.
 */

/** A bijective 32-bit mixer (the "lowbias32" finaliser): cheap, well spread, no allocation. */
export const mix32 = (value: number): number => {
  let h = value | 0
  h ^= h >>> 16
  h = Math.imul(h, 0x7feb352d)
  h ^= h >>> 15
  h = Math.imul(h, 0x846ca68b)
  h ^= h >>> 16
  return h >>> 0
}

/** Hash of a seed and up to three integers (each below 2^32) to an unsigned 32-bit integer. */
export const hash32 = (seed: number, a: number, b = 0, c = 0): number => {
  let h = mix32(seed ^ 0x9e3779b9)
  h = mix32(h ^ (a | 0))
  h = mix32((h + Math.imul(b | 0, 0x85ebca6b)) | 0)
  return mix32(h ^ Math.imul(c | 0, 0x27d4eb2f))
}

/** A hash as a number in [0, 1). */
export const unit = (hash: number): number => hash / 4294967296

/** Sequential seeded randomness for building the org tree (the order of calls is part of the seed). */
export class SeededRandom {
  private counter = 0

  constructor(private readonly seed: number, private readonly stream: number) {}

  /** A number in [0, 1). */
  next(): number {
    this.counter += 1
    return unit(hash32(this.seed, this.stream, this.counter))
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(probability: number): boolean {
    return this.next() < probability
  }

  pick<A>(items: ReadonlyArray<A>): A {
    const item = items[Math.floor(this.next() * items.length)]
    if (item === undefined) throw new Error("pick from an empty list")
    return item
  }
}
