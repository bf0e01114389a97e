// Where the QuickJS build keeps its static data, read from its WASM binary. Plain JavaScript: the
// worker (worker.js) uses it, and Node 20 cannot load a TypeScript worker without a loader.
//
// wasm-ld lays the memory out as static data (from 1024: the data segments, then the zeroed BSS),
// then the C stack, then the heap. The stack pointer is the binary's one mutable global, and starts
// at the stack's top; the stack's size is a link option the binary does not record. The build this
// library pins (`@jitl/quickjs-wasmfile-release-sync` 0.32.0) links a 5 MiB stack (measured: its
// stack pointer starts 5 MiB and 2,981 bytes above the end of its last data segment, the BSS
// between). A worker restores a module's static data after each run and leaves the stack out
// (dead between runs): 90 KB to copy instead of 5 MiB, most of which a fresh module never touched,
// and reading an untouched page costs about 12 us on the VMs this runs on.
//
// The check below cannot see the BSS's size (the binary does not record it), only that the stack
// starts at least STACK_BYTES above the data segments. It holds for the pinned build because the
// figure above was measured on it; the exact pin in package.json is what keeps it true. A build
// with a smaller stack and a larger BSS could pass the check with part of its BSS left out of the
// image: re-measure before moving the pin.

/** The C stack of the pinned build, in bytes. */
export const STACK_BYTES = 5 * 1024 * 1024

/**
 * The end of the module's static data: the stack pointer's start less {@link STACK_BYTES}, checked
 * to lie at or past the end of the last data segment. Undefined for a binary laid out otherwise (no
 * single mutable global, a data segment that is not at a constant offset, a smaller stack): then
 * the caller must treat the whole memory below the heap as static data.
 * @param {Uint8Array} bytes the WASM binary
 * @returns {number | undefined}
 */
export function staticDataEnd(bytes) {
  let layout
  try {
    layout = readLayout(bytes)
  } catch {
    return undefined
  }
  if (layout === undefined) return undefined
  const end = layout.stackStart - STACK_BYTES
  return end >= layout.dataEnd ? end : undefined
}

const SECTION_GLOBAL = 6
const SECTION_DATA = 11
const I32 = 0x7f
const I32_CONST = 0x41
const END = 0x0b

/** `{ stackStart, dataEnd }` from the binary's global and data sections, or undefined. */
function readLayout(bytes) {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) return undefined
  let at = 8
  const unsigned = () => {
    let value = 0
    let scale = 1
    let byte
    do {
      if (at >= bytes.length) throw new RangeError('truncated')
      byte = bytes[at++]
      value += (byte & 0x7f) * scale
      scale *= 128
    } while (byte & 0x80)
    return value
  }
  const signed32 = () => {
    let value = 0
    let shift = 0
    let byte
    do {
      if (at >= bytes.length) throw new RangeError('truncated')
      byte = bytes[at++]
      value |= (byte & 0x7f) << shift
      shift += 7
    } while (byte & 0x80)
    return shift < 32 && byte & 0x40 ? value | (-1 << shift) : value
  }
  /** A constant expression `i32.const n; end`: n, or undefined for any other expression. */
  const constant = () => {
    if (bytes[at] !== I32_CONST) return undefined
    at += 1
    const value = signed32()
    return bytes[at++] === END ? value : undefined
  }
  const stackStarts = []
  let dataEnd = -1
  while (at < bytes.length) {
    const id = bytes[at++]
    const size = unsigned()
    const next = at + size
    if (next > bytes.length) return undefined
    if (id === SECTION_GLOBAL) {
      for (let count = unsigned(); count > 0; count--) {
        const type = bytes[at++]
        const mutable = bytes[at++]
        const value = constant()
        if (value === undefined) return undefined
        if (type === I32 && mutable === 1) stackStarts.push(value)
      }
    } else if (id === SECTION_DATA) {
      for (let count = unsigned(); count > 0; count--) {
        // Only active segments of memory 0 at a constant offset: anything else, and the static
        // data's extent is not known from here.
        if (unsigned() !== 0) return undefined
        const offset = constant()
        if (offset === undefined) return undefined
        const length = unsigned()
        at += length
        dataEnd = Math.max(dataEnd, offset + length)
      }
    }
    at = next
  }
  if (stackStarts.length !== 1 || dataEnd < 0) return undefined
  return { stackStart: stackStarts[0], dataEnd }
}
