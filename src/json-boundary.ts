/**
 * The JSON boundary: the one module that copies outside values into plain, frozen JSON and parses
 * or writes outside text. Nothing else calls `JSON.parse` on outside data.
 *
 * CONTRACT (implemented by the boundary work of issue 2):
 * - `snapshotJson(value, label)` copies `value` into fresh plain JSON and deep-freezes it. It throws
 *   `JsonBoundaryError` (code `INVALID_JSON`) with the JSON path of the first offending place for:
 *   undefined, functions, symbols, bigint, NaN, +-Infinity, -0, sparse arrays (holes), cycles,
 *   accessor properties (never running a getter), symbol or non-enumerable own keys, and any
 *   prototype other than Object.prototype, null or Array.prototype. Proxies are rejected too
 *   (`util.types.isProxy`), so no trap ever runs. Shared non-cyclic references are fine (copied).
 *   Iterative: a value nested 100,000 deep gives a clear error or result, never a stack overflow.
 *   `__proto__` as an own data key is an ordinary key in the copy.
 * - `parseJsonText(text, label)` parses outside text with lossless-json: integers outside the safe
 *   range and decimals a double cannot hold exactly throw `JsonBoundaryError` naming the path;
 *   duplicate keys throw; `__proto__` is an ordinary key. Returns frozen plain JSON.
 * - `stringifyJson(value)` writes durable text with lossless-json.
 */

/** A lossless JSON value. Values that crossed the boundary are deep-frozen. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue }
