import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { STACK_BYTES, staticDataEnd } from '../../sandbox/quickjs/wasm-layout.js'

/** LEB128 of a non-negative integer. */
function unsigned(value: number): number[] {
  const out: number[] = []
  do {
    let byte = value & 0x7f
    value = Math.floor(value / 128)
    if (value > 0) byte |= 0x80
    out.push(byte)
  } while (value > 0)
  return out
}

/** Signed LEB128 of a 32-bit integer. */
function signed(value: number): number[] {
  const out: number[] = []
  for (;;) {
    const byte = value & 0x7f
    value >>= 7
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) return [...out, byte]
    out.push(byte | 0x80)
  }
}

const section = (id: number, body: number[]): number[] => [id, ...unsigned(body.length), ...body]
const i32Const = (value: number): number[] => [0x41, ...signed(value), 0x0b]
const globals = (...entries: [type: number, mutable: number, value: number][]): number[] =>
  section(6, [...unsigned(entries.length), ...entries.flatMap(([type, mutable, value]) => [type, mutable, ...i32Const(value)])])
const data = (...segments: number[][]): number[] => section(11, [...unsigned(segments.length), ...segments.flat()])
const active = (offset: number, length: number): number[] => [0, ...i32Const(offset), ...unsigned(length), ...new Array<number>(length).fill(7)]
const binary = (...sections: number[][]): Uint8Array => new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...sections.flat()])

describe('the static data of a QuickJS WASM binary', () => {
  it('ends STACK_BYTES below where the stack pointer starts, past the last data segment', () => {
    const bytes = binary(globals([0x7f, 1, STACK_BYTES + 4096]), data(active(1024, 100), active(2000, 50)))
    expect(staticDataEnd(bytes)).toBe(4096)
  })

  it('is found in the build this library pins, past its data segments and below its heap', () => {
    const require = createRequire(import.meta.url)
    const entry = require.resolve('@jitl/quickjs-wasmfile-release-sync')
    const bytes = readFileSync(new URL('./emscripten-module.wasm', `file://${entry}`))
    const end = staticDataEnd(bytes)
    expect(end).toBeGreaterThan(1024)
    // The heap starts at the stack's top: 16 MiB of initial memory holds static data, stack and the start of the heap.
    expect((end as number) + STACK_BYTES).toBeLessThan(16 * 1024 * 1024)
  })

  it('is unknown for a binary laid out otherwise', () => {
    // A stack smaller than STACK_BYTES: its start less STACK_BYTES falls inside the data.
    expect(staticDataEnd(binary(globals([0x7f, 1, STACK_BYTES + 1100]), data(active(1024, 100))))).toBeUndefined()
    // No mutable global, or two: which one is the stack pointer?
    expect(staticDataEnd(binary(globals([0x7f, 0, STACK_BYTES + 4096]), data(active(1024, 100))))).toBeUndefined()
    expect(staticDataEnd(binary(globals([0x7f, 1, STACK_BYTES + 4096], [0x7f, 1, 8]), data(active(1024, 100))))).toBeUndefined()
    // A passive segment, placed at run time.
    expect(staticDataEnd(binary(globals([0x7f, 1, STACK_BYTES + 4096]), data(active(1024, 100), [1, ...unsigned(4), 1, 2, 3, 4])))).toBeUndefined()
    // No data section; not WASM; cut short.
    expect(staticDataEnd(binary(globals([0x7f, 1, STACK_BYTES + 4096])))).toBeUndefined()
    expect(staticDataEnd(new TextEncoder().encode('not a wasm binary'))).toBeUndefined()
    const whole = binary(globals([0x7f, 1, STACK_BYTES + 4096]), data(active(1024, 100)))
    expect(staticDataEnd(whole.subarray(0, whole.length - 60))).toBeUndefined()
  })
})
