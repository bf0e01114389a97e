import type { Context, Reference } from 'isolated-vm'
import { initLimits, PROGRAM_FILENAME, toolsJson, wrapProgram } from '../guest-runtime.ts'
import type { SandboxLimits, ToolBinding } from '../engine.ts'
import type { IsolatedVm } from './load-isolated-vm.ts'

/**
 * The isolated-vm half of the guest contract in sandbox/guest-runtime.ts: the raw globals the
 * prelude expects, the prelude itself, and the code that settles a program, all built over host
 * `Reference`s that never become reachable from the guest.
 *
 * Why the guest sources below look the way they do:
 * - References arrive as closure parameters (`$0`, `$1`) of functions that return before any program
 *   runs; only small strict functions close over them (strict: no `caller` / `arguments` walk), so
 *   no property walk from any guest value reaches a Reference.
 * - `Reference.prototype.apply` / `applySync` / `applyIgnored`, `Reflect.apply` and
 *   `Promise.prototype.then` are read once, before the program: a program that later replaces
 *   `Reflect.apply`, `Function.prototype.call/apply` or a Reference prototype method never gets a
 *   Reference as a receiver or argument.
 * - Every transfer-options object and property descriptor has a null prototype, so a polluted
 *   `Object.prototype` (a `reference: true`, or a getter) is never read.
 * - Arguments are coerced to strings before they cross, so copying can never fail or run a getter.
 * - `__codemode_call` uses `apply` with `result.promise`, so calls overlap and `Promise.all` is
 *   concurrent (`applySyncPromise` would serialise them). `__codemode_log` uses `applySync`, so a
 *   logging loop is throttled by the host, which counts bytes and stops the run on a breach.
 * - The guest counts its sub-calls and those in flight itself, before each crosses: an `apply`
 *   does not wait for the host, so a loop of un-awaited calls would otherwise queue copies and
 *   host tasks without end (measured: gigabytes and a main thread busy for seconds). Past a limit
 *   a call gets a promise that never settles and the host hears of the breach once, through
 *   `applyIgnored`, and disposes the isolate. The host counts again as it serves each call.
 *   The limits are set per run by `configure`, the script's completion value, which only the
 *   host-side `arm` can reach.
 */
const BRIDGE_SOURCE = `'use strict';
const callRef = $0;
const logRef = $1;
const breachRef = $2;
const reflectApply = Reflect.apply;
const promiseThen = Promise.prototype.then;
const PromiseCtor = Promise;
const callApply = callRef.apply;
const logApply = logRef.applySync;
const breachApply = breachRef.applyIgnored;
const freeze = Object.freeze;
const callOptions = freeze({ __proto__: null, arguments: freeze({ __proto__: null, copy: true }), result: freeze({ __proto__: null, promise: true, copy: true }) });
const logOptions = freeze({ __proto__: null, arguments: freeze({ __proto__: null, copy: true }) });
const breachOptions = freeze({ __proto__: null, arguments: freeze({ __proto__: null, copy: true }) });
const text = (value) => (typeof value === 'string' ? value : '');
let made = 0;
let inFlight = 0;
let maxCalls = 0;
let maxInFlight = 0;
let breached = false;
// The prelude's decode: the same function on every call.
let decode;
const never = () => {};
// The promise the program awaits is the one \`then\` derives from the host's answer: V8 then finds
// the program's awaiting frame (async stack traces) when decode makes a failed call's Error. So
// decode's resolve and reject are taken back here, into the derived promise's value or throw.
let decoded;
let decodeFailed = false;
const keep = (value) => { decoded = value; };
const drop = (error) => { decoded = error; decodeFailed = true; };
const onAnswer = (envelope) => {
  inFlight = inFlight - 1;
  decodeFailed = false;
  decode(envelope, keep, drop);
  const value = decoded;
  decoded = undefined;
  if (decodeFailed) throw value;
  return value;
};
const onLost = (reason) => { inFlight = inFlight - 1; throw reason; };
function breach(which) {
  if (!breached) {
    breached = true;
    reflectApply(breachApply, breachRef, [undefined, [which], breachOptions]);
  }
  return new PromiseCtor(never);
}
globalThis.__codemode_call = function __codemode_call(name, argsJson, decodeAnswer) {
  if (breached) return new PromiseCtor(never);
  made = made + 1;
  if (made > maxCalls) return breach('maxSubCalls');
  if (inFlight >= maxInFlight) return breach('maxSubCallsInFlight');
  inFlight = inFlight + 1;
  decode = decodeAnswer;
  const answer = reflectApply(callApply, callRef, [undefined, [text(name), text(argsJson)], callOptions]);
  return reflectApply(promiseThen, answer, [onAnswer, onLost]);
};
globalThis.__codemode_log = function __codemode_log(level, message, over) {
  reflectApply(logApply, logRef, [undefined, [text(level), text(message), over === true], logOptions]);
};
return freeze(function configure(calls, inFlightCalls) { maxCalls = calls; maxInFlight = inFlightCalls; });
`

/**
 * V8 runs several array built-ins as native loops that never check for termination: on an
 * array-like or sparse array of huge length (`Array.prototype.reverse.call({ length: 2 ** 53 - 1 })`,
 * `Array(2 ** 32 - 1).indexOf(1)`) the isolate's thread spins on after the run was stopped and the
 * isolate disposed, a core lost for good (found by a red-team pass; measured: reverse, copyWithin,
 * fill, includes, indexOf, lastIndexOf, join, toLocaleString, sort, forEach, every, map, reduce,
 * slice, splice, shift, flat, flatMap, and `Array.from` of an array-like). QuickJS needs none of
 * this: its worker thread is terminated.
 *
 * So before the program runs, those methods check the length their receiver will have and refuse a
 * length over `maxLength` (the caller's choice: more than a dense array could have in the isolate's
 * heap), which bounds every such loop. The length is found without running program code, by
 * walking the receiver's prototype chain over own property descriptors, so the native method can
 * only read the value checked: a `length` getter, a `length` holding an object (its `valueOf`) or a
 * Proxy on the way would each let the program answer differently the second time, and they are
 * refused (programs do not call array methods on those; a Proxy cannot be told apart any other way,
 * so the `Proxy` constructor is wrapped to remember the proxies it makes). `find`, `findIndex`,
 * `findLast` and `findLastIndex` call the program at every index, where V8 checks for termination.
 */
const ARRAY_GUARD_SOURCE = `'use strict';
const maxLength = $0;
const g = globalThis;
const reflectApply = Reflect.apply;
const getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
const getPrototypeOf = Reflect.getPrototypeOf;
const defineProperty = Reflect.defineProperty;
const hasOwn = Object.prototype.hasOwnProperty;
const ObjectCtor = Object;
const TypeErrorCtor = TypeError;
const RangeErrorCtor = RangeError;
const NativeProxy = Proxy;
const nativeRevocable = Proxy.revocable;
const proxies = new WeakSet();
const remember = WeakSet.prototype.add;
const weakHas = WeakSet.prototype.has;
const isProxy = (o) => reflectApply(weakHas, proxies, [o]);
const isArray = Array.isArray;
const nativeSlice = Array.prototype.slice;
const StringCtor = String;
const floor = Math.floor;
const typedArrayLength = getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'length').get;
function refuse(method, why) {
  throw new TypeErrorCtor(method + ' is not available ' + why + ' in this sandbox');
}
// A native loop over an array-like makes one lookup per index, and a lookup that misses walks the
// whole prototype chain: what it may cost is the length times the chain's depth. The budget is
// maxLength lookups over a chain as deep as an instance of a subclass of Array has (4 objects).
const maxLookups = maxLength * 4;
function lookups(receiver, method) {
  // A missing receiver: the native method throws its own TypeError.
  if (receiver === null || receiver === undefined) return 0;
  let length = -1;
  let depth = 0;
  for (let o = ObjectCtor(receiver); o !== null; o = getPrototypeOf(o)) {
    // Anywhere in the chain: a Proxy without traps forwards lookups natively, to a chain of its own.
    if (isProxy(o)) refuse(method, 'on a Proxy');
    depth = depth + 1;
    if (length >= 0) continue;
    const found = getOwnPropertyDescriptor(o, 'length');
    if (found === undefined) continue;
    if (!reflectApply(hasOwn, found, ['value'])) {
      // A typed array's elements are all its own, as many as its buffer holds.
      if (found.get === typedArrayLength) return 0;
      refuse(method, 'on an object whose length is a getter');
    }
    const value = found.value;
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) refuse(method, 'on an object whose length is an object');
    // Numbers and strings convert without program code; anything else converts to 0 or throws.
    length = typeof value === 'number' || typeof value === 'string' ? +value : 0;
    if (length !== length || length < 0) length = 0;
    if (length > maxLength) {
      throw new RangeErrorCtor(method + ' on a length of ' + length + ' is refused: this sandbox allows array methods on lengths up to ' + maxLength);
    }
  }
  return length <= 0 ? 0 : length * depth;
}
function refuseLookups(method, count) {
  throw new RangeErrorCtor(method + ' would make up to ' + count + ' element lookups (length times prototype chain depth) and is refused: this sandbox allows up to ' + maxLookups);
}
function check(receiver, method) {
  const count = lookups(receiver, method);
  if (count > maxLookups) refuseLookups(method, count);
}
// Array.from reads Symbol.iterator before length: a getter there could lengthen the object after
// the check.
function checkIterable(items, method) {
  if (items === null || items === undefined) return;
  for (let o = ObjectCtor(items); o !== null; o = getPrototypeOf(o)) {
    if (isProxy(o)) refuse(method, 'on a Proxy');
    const found = getOwnPropertyDescriptor(o, Symbol.iterator);
    if (found === undefined) continue;
    if (!reflectApply(hasOwn, found, ['value'])) refuse(method, 'on an object whose Symbol.iterator is a getter');
    return;
  }
}
function replace(owner, key, method, length) {
  defineProperty(method, 'length', { __proto__: null, value: length });
  defineProperty(owner, key, { __proto__: null, value: method, writable: true, enumerable: false, configurable: true });
}
function guard(owner, key, name, checkArgs) {
  const native = owner[key];
  if (typeof native !== 'function') return;
  replace(owner, key, {
    [key](...args) {
      checkArgs(this, args, name);
      return reflectApply(native, this, args);
    },
  }[key], native.length);
}
const checkReceiver = (self, args, name) => check(self, name);
for (const key of ['copyWithin', 'every', 'fill', 'filter', 'forEach', 'includes', 'indexOf', 'join', 'lastIndexOf', 'map',
  'reduce', 'reduceRight', 'reverse', 'shift', 'slice', 'some', 'sort', 'splice', 'toLocaleString', 'unshift']) {
  guard(Array.prototype, key, 'Array.prototype.' + key, checkReceiver);
}
guard(Array, 'from', 'Array.from', (self, args, name) => { checkIterable(args[0], name); check(args[0], name); });

// concat loops over the receiver and every argument it spreads, each as the receiver above: the
// lookups of all of them count together. Whether it spreads one is read the native way (its own or
// inherited Symbol.isConcatSpreadable, else whether it is an array), refusing a getter there: that
// could lengthen a later argument after its check.
const concatSpreadable = Symbol.isConcatSpreadable;
function spreads(item, method) {
  if (item === null || (typeof item !== 'object' && typeof item !== 'function')) return false;
  for (let o = item; o !== null; o = getPrototypeOf(o)) {
    if (isProxy(o)) refuse(method, 'on a Proxy');
    const found = getOwnPropertyDescriptor(o, concatSpreadable);
    if (found === undefined) continue;
    if (!reflectApply(hasOwn, found, ['value'])) refuse(method, 'on an object whose Symbol.isConcatSpreadable is a getter');
    if (found.value !== undefined) return !!found.value;
    break;
  }
  return isArray(item);
}
guard(Array.prototype, 'concat', 'Array.prototype.concat', (self, args, name) => {
  if (self === null || self === undefined) return;
  const receiver = ObjectCtor(self);
  let count = spreads(receiver, name) ? lookups(receiver, name) : 0;
  for (let i = 0; i < args.length; i++) {
    if (spreads(args[i], name)) count = count + lookups(args[i], name);
  }
  if (count > maxLookups) refuseLookups(name, count);
});
// apply, Reflect.apply and Reflect.construct turn an array-like into an argument list natively;
// a primitive there is the native method's own TypeError.
function checkList(at) {
  return (self, args, name) => {
    const list = args[at];
    if (list !== null && (typeof list === 'object' || typeof list === 'function')) check(list, name);
  };
}
guard(Function.prototype, 'apply', 'Function.prototype.apply', checkList(1));
guard(Reflect, 'apply', 'Reflect.apply', checkList(2));
guard(Reflect, 'construct', 'Reflect.construct', checkList(1));

// flat and flatMap loop natively over nested arrays the receiver's length says nothing about
// (\`[Array(2 ** 32 - 1)].flat()\`): they are written here instead, as the specification gives them,
// in JavaScript, which V8 can stop anywhere.
function toIntegerOrInfinity(value) {
  const n = +value;
  if (n !== n) return 0;
  if (n === Infinity || n === -Infinity) return n;
  return n < 0 ? -floor(-n) : floor(n);
}
function lengthOf(o) {
  const n = toIntegerOrInfinity(o.length);
  return n <= 0 ? 0 : n < 9007199254740991 ? n : 9007199254740991;
}
function flatten(target, source, sourceLength, start, depth, mapper, thisArg) {
  let at = start;
  for (let i = 0; i < sourceLength; i++) {
    if (!(i in source)) continue;
    let element = source[i];
    if (mapper !== undefined) element = reflectApply(mapper, thisArg, [element, i, source]);
    if (depth > 0 && isArray(element)) {
      at = flatten(target, element, lengthOf(element), at, depth - 1, undefined, undefined);
      continue;
    }
    if (at >= 9007199254740991) throw new TypeErrorCtor('the flattened array would be too long');
    if (!defineProperty(target, StringCtor(at), { __proto__: null, value: element, writable: true, enumerable: true, configurable: true })) {
      throw new TypeErrorCtor('Cannot add property ' + at + ', object is not extensible');
    }
    at = at + 1;
  }
  return at;
}
// The array the result goes into is made as the native methods make it (the receiver's species):
// by slice(0, 0), which reads the receiver's length only.
function speciesOf(o) {
  return reflectApply(nativeSlice, o, [0, 0]);
}
replace(Array.prototype, 'flat', {
  flat(depth) {
    if (this === null || this === undefined) throw new TypeErrorCtor('Array.prototype.flat called on null or undefined');
    const o = ObjectCtor(this);
    const sourceLength = lengthOf(o);
    let depthNumber = 1;
    if (depth !== undefined) {
      depthNumber = toIntegerOrInfinity(depth);
      if (depthNumber < 0) depthNumber = 0;
    }
    const target = speciesOf(o);
    flatten(target, o, sourceLength, 0, depthNumber, undefined, undefined);
    return target;
  },
}.flat, 0);
replace(Array.prototype, 'flatMap', {
  flatMap(mapper, thisArg) {
    if (this === null || this === undefined) throw new TypeErrorCtor('Array.prototype.flatMap called on null or undefined');
    const o = ObjectCtor(this);
    const sourceLength = lengthOf(o);
    if (typeof mapper !== 'function') throw new TypeErrorCtor('flatMap mapper is not callable');
    const target = speciesOf(o);
    flatten(target, o, sourceLength, 0, 1, mapper, thisArg);
    return target;
  },
}.flatMap, 1);
// Bound, as the native constructor has no \`prototype\` property (a bound function has none, and
// \`new\` still reaches the target). A function expression: its name binds inside it only, so
// \`Proxy\` above is still the native one.
const RememberingProxy = reflectApply(Function.prototype.bind, function Proxy(target, handler) {
  if (new.target === undefined) throw new TypeErrorCtor("Constructor Proxy requires 'new'");
  const proxy = new NativeProxy(target, handler);
  reflectApply(remember, proxies, [proxy]);
  return proxy;
}, [undefined]);
defineProperty(RememberingProxy, 'name', { __proto__: null, value: 'Proxy' });
defineProperty(RememberingProxy, 'revocable', {
  __proto__: null,
  value: function revocable(target, handler) {
    const made = reflectApply(nativeRevocable, NativeProxy, [target, handler]);
    reflectApply(remember, proxies, [made.proxy]);
    return made;
  },
  writable: true,
  enumerable: false,
  configurable: true,
});
defineProperty(g, 'Proxy', { __proto__: null, value: RememberingProxy, writable: true, enumerable: false, configurable: true });
`

/** The one-shot global the program script reads first; it deletes itself on that read. */
const SETTLE_GLOBAL = '__codemode_settle'

/**
 * Returns `arm(...armArguments(tools, limits))`, which the host calls once before the program: it runs
 * the prelude's `init` and defines {@link SETTLE_GLOBAL} as a self-deleting getter. The program
 * script (see {@link programScript}) reads it before the program starts, passes it the program's
 * promise in the same task, and `settle` reports one string through the `done` Reference:
 * `R` + the prelude's `finish` text, `E` + its `describeError` JSON, or `X` when even describing
 * failed (an exhausted stack or heap). Attaching in the same task matters: isolated-vm throws a
 * rejection that has no handler at the end of a task. Only the first report counts.
 */
const ARM_SOURCE = `'use strict';
const runtime = $0;
const doneRef = $1;
const configure = $2;
const g = globalThis;
const reflectApply = Reflect.apply;
const defineProperty = Object.defineProperty;
const deleteProperty = Reflect.deleteProperty;
const promiseThen = Promise.prototype.then;
const doneApply = doneRef.applyIgnored;
const doneOptions = Object.freeze({ __proto__: null, arguments: Object.freeze({ __proto__: null, copy: true }) });
const init = runtime.init;
const finish = runtime.finish;
const describeError = runtime.describeError;
// Compiled now, while the isolate is prepared, rather than when a run first logs or fails.
runtime.loadDeferred();
let maxResultBytes = 0;
let reported = false;
function report(text) {
  if (reported) return;
  reported = true;
  reflectApply(doneApply, doneRef, [undefined, [text], doneOptions]);
}
function describe(reason) {
  try { return 'E' + describeError(reason); } catch (error) { return 'X'; }
}
function onValue(value) {
  let text;
  try { text = 'R' + finish(value, maxResultBytes); } catch (error) { text = describe(error); }
  report(text);
}
function onReason(reason) { report(describe(reason)); }
function settle(promise) {
  try { reflectApply(promiseThen, promise, [onValue, onReason]); } catch (error) { report(describe(error)); }
}
return function arm(toolsJson, limit, maxCalls, maxInFlight, ...limits) {
  init(toolsJson, ...limits);
  maxResultBytes = limit;
  configure(maxCalls, maxInFlight);
  defineProperty(g, '${SETTLE_GLOBAL}', {
    __proto__: null,
    configurable: true,
    enumerable: false,
    get: function () { deleteProperty(g, '${SETTLE_GLOBAL}'); return settle; },
  });
};
`

/**
 * The script that runs `code`: the settle call opens on a line of its own, and the script is
 * compiled with `lineOffset: -1`, so program line N is reported as line N and only line 1's
 * columns shift (by the prelude's own prefix, which `guestFailure` removes). The callee is read
 * before the program's first statement runs, so the program never sees the settle function.
 */
export function programScript(code: string): string {
  return `${SETTLE_GLOBAL}(\n${wrapProgram(code)})`
}

/** Compile options of {@link programScript}. */
export const PROGRAM_SCRIPT_ORIGIN = Object.freeze({ filename: PROGRAM_FILENAME, lineOffset: -1 })

/** `arm`'s arguments for a run: its tool list, its result and call limits, then the prelude's own. */
export function armArguments(tools: readonly ToolBinding[], limits: SandboxLimits): ArmArguments {
  return [toolsJson(tools), limits.maxResultBytes, limits.maxSubCalls, limits.maxSubCallsInFlight, ...initLimits(limits)]
}
type ArmArguments = [toolsJson: string, maxResultBytes: number, maxSubCalls: number, maxSubCallsInFlight: number, ...initLimits: number[]]

/** Host-side handle to one prepared context's `arm`; never handed to the guest. */
export type ArmReference = Reference<(...args: ArmArguments) => void>

/** Host functions the bridge dispatches to; they must never throw or reject. */
export interface BridgeHost {
  call(name: string, argsJson: string): Promise<string>
  /** `over`: the line did not fit in what is left of the log limit (its text stayed in the guest). */
  log(level: string, text: string, over: boolean): void
  /** The settled program, as the tagged text described at {@link ARM_SOURCE}. */
  done(text: string): void
  /** The guest found one of its sub-call counts over its limit (see {@link BRIDGE_SOURCE}). */
  breach(limit: 'maxSubCalls' | 'maxSubCallsInFlight'): void
}

/**
 * Install the raw globals, evaluate the prelude as `prelude.filename`, and return the host-side
 * `arm` handle. The References given to the guest live and die with its isolate.
 */
export async function installBridge(
  ivm: IsolatedVm,
  context: Context,
  host: BridgeHost,
  prelude: { readonly source: string; readonly filename: string },
  guards: { readonly maxArrayLength: number },
): Promise<ArmReference> {
  const callRef = new ivm.Reference((name: string, argsJson: string) => host.call(name, argsJson))
  const logRef = new ivm.Reference((level: string, text: string, over: boolean) => host.log(level, text, over))
  const doneRef = new ivm.Reference((text: string) => host.done(text))
  const breachRef = new ivm.Reference((limit: unknown) => host.breach(limit === 'maxSubCalls' ? 'maxSubCalls' : 'maxSubCallsInFlight'))
  const configure = (await context.evalClosure(BRIDGE_SOURCE, [callRef, logRef, breachRef], {
    filename: 'codemode-bridge.js',
    result: { reference: true },
  })) as Reference<(maxSubCalls: number, maxSubCallsInFlight: number) => void>
  const runtime = (await context.eval(prelude.source, {
    filename: prelude.filename,
    reference: true,
  })) as Reference<object>
  const arm = (await context.evalClosure(ARM_SOURCE, [runtime.derefInto(), doneRef, configure.derefInto()], {
    filename: 'codemode-bridge.js',
    result: { reference: true },
  })) as ArmReference
  runtime.release()
  configure.release()
  // After the prelude, which keeps the native methods it captured for its own arrays.
  await context.evalClosure(ARRAY_GUARD_SOURCE, [guards.maxArrayLength], { filename: 'codemode-guards.js' })
  return arm
}
