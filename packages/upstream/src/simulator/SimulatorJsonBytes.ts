/**
 * A growable byte buffer that JSON text is written into piece by piece: report pages (megabytes, some
 * 100,000 numbers) are written as UTF-8 bytes directly, not as a long string that must then be flattened
 * and encoded. Numbers are written as JSON.stringify writes them.
 */

export class JsonBytes {
  private bytes: Buffer
  private length = 0

  constructor(capacity = 64 * 1024) {
    this.bytes = Buffer.allocUnsafe(capacity)
  }

  private reserve(more: number): void {
    if (this.length + more <= this.bytes.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + more))
    this.bytes.copy(grown, 0, 0, this.length)
    this.bytes = grown
  }

  /** Any text, as UTF-8 (already JSON: the caller quotes and escapes). */
  text(text: string): this {
    this.reserve(text.length * 3)
    this.length += this.bytes.write(text, this.length, "utf8")
    return this
  }

  /** Pre-encoded bytes (the fixed parts of a row). */
  raw(bytes: Uint8Array): this {
    this.reserve(bytes.length)
    this.bytes.set(bytes, this.length)
    this.length += bytes.length
    return this
  }

  /** Pre-encoded bytes [start, end) of a table. */
  slice(table: Uint8Array, start: number, end: number): this {
    this.reserve(end - start)
    const target = this.bytes
    const at = this.length - start
    for (let i = start; i < end; i++) target[at + i] = table[i]!
    this.length = at + end
    return this
  }

  /** A number as JSON writes it; non-negative integers below 2^32 (nearly all of them) digit by digit. */
  number(value: number): this {
    if (!(value >= 0 && value <= 0xffffffff && Number.isInteger(value))) return this.text(JSON.stringify(value))
    this.reserve(10)
    this.length = this.digits(value, this.length)
    return this
  }

  /** `whole.hh` (hundredths 0–99, always two digits), whole a non-negative integer below 2^32. */
  decimal2(whole: number, hundredths: number): this {
    this.reserve(13)
    const at = this.digits(whole, this.length)
    const tens = Math.floor(hundredths / 10)
    const target = this.bytes
    target[at] = 46
    target[at + 1] = 48 + tens
    target[at + 2] = 48 + hundredths - tens * 10
    this.length = at + 3
    return this
  }

  /** Writes a non-negative integer's digits at `at` (room reserved); returns the end. */
  private digits(value: number, at: number): number {
    let end = at + 1
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) end++
    const target = this.bytes
    let rest = value
    let i = end
    do {
      const next = Math.floor(rest / 10)
      target[--i] = 48 + rest - next * 10
      rest = next
    } while (rest > 0)
    return end
  }

  /** The bytes written so far. */
  done(): Buffer {
    return this.bytes.subarray(0, this.length)
  }
}

/** A constant as bytes, for `raw`. */
export const ascii = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "utf8"))
