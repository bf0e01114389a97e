/** Types of wasm-layout.js (plain JavaScript: the QuickJS worker imports it). */

/** The C stack of the pinned QuickJS build, in bytes. */
export declare const STACK_BYTES: number

/**
 * The end of a QuickJS WASM binary's static data (data segments and BSS), or undefined for a binary
 * not laid out as the pinned build is.
 */
export declare function staticDataEnd(bytes: Uint8Array): number | undefined
