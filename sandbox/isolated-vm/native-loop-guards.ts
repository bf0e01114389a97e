/**
 * V8 runs many built-ins as native loops that never look for the interrupt that stops an isolate:
 * on an array-like of huge length (`Array.prototype.reverse.call({ length: 2 ** 53 - 1 })`,
 * `Array(2 ** 32 - 1).indexOf(1)`, `Intl.getCanonicalLocales({ length: 2 ** 53 - 1 })`) the
 * isolate's thread spins on after the run was stopped and the isolate disposed, a core lost until
 * the loop ends (found by red-team passes; each guarded method below was seen to do it). QuickJS
 * needs none of this: its worker thread is terminated.
 *
 * Such a loop makes one lookup per index, and a lookup that misses walks the whole prototype chain,
 * so its cost is the length times the chain's depth: a chain of 10,000 objects each holding an
 * element made every index cost ~0.25 ms. Before the program runs, every built-in that loops so
 * over an array-like it is given (array methods, `concat`, `Array.from`, typed arrays made or set
 * from one, the argument lists of `apply`, `Reflect.apply` and `Reflect.construct`, a Proxy's
 * `ownKeys` result, `String.raw`'s strings, `JSON.stringify`'s property list, and Intl's locale
 * lists) first measures it: a length over `maxLength` (the caller's choice: more than a dense array
 * could have in the isolate's heap), or lookups over 4 x `maxLength` (as deep a chain as an
 * instance of an Array subclass has), is a RangeError. That bounds every such loop to what a dense
 * array of `maxLength` costs.
 *
 * The measure is taken without running program code, by walking the prototype chain over own
 * property descriptors, so the native method reads only what was measured: a `length` getter, a
 * `length` holding an object (its `valueOf`), or a Proxy anywhere in the chain would each let the
 * program answer differently the second time, and they are refused with a TypeError (a Proxy cannot
 * be told apart any other way, so the `Proxy` constructor is wrapped to remember the proxies it
 * makes). Program code that runs during the native loop (a callback, a `valueOf`, a species
 * constructor) cannot undo the measure: the length is read before it runs, and while a guarded call
 * runs, the prototypes on the chains it measured cannot change (`setPrototypeOf` and the
 * `__proto__` setter, the only ways to change an existing object's prototype, refuse). What a
 * measure cannot bound is done in JavaScript, which V8 stops anywhere: `concat` (it reads each
 * argument's length only when it gets to it, after program code may have run), `flat` and
 * `flatMap` (nested arrays), a search for a long string (compared whole at every element), the
 * default sort order (string comparisons), and every callback (a built-in such as `escape` given as
 * one would run natively). `split` counts the parts it would make first, and `JSON.parse` bounds
 * its text: past what one array holds, V8 aborts the process. C++ built-ins whose work grows with
 * their input (`escape`, `Date.parse`, `BigInt`, Intl's methods, ...) are reached through a
 * JavaScript function, whose entry V8 checks: a loop calling only one of them stops within a call.
 * A locale tag may be 255 characters at most. What is not known yet is bounded by the engine
 * instead: see `maxRunawayIsolates`.
 *
 * Evaluated with `evalClosure` after the prelude (which keeps the natives it captured); `$0` is
 * `maxLength`.
 */
export const NATIVE_LOOP_GUARD_SOURCE = `'use strict';
const maxLength = $0;
const maxLookups = maxLength * 4;
const g = globalThis;
const reflectApply = Reflect.apply;
const reflectConstruct = Reflect.construct;
const reflectGet = Reflect.get;
const getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
const getPrototypeOf = Reflect.getPrototypeOf;
const ownKeys = Reflect.ownKeys;
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
const floor = Math.floor;
const iteratorSymbol = Symbol.iterator;
const concatSpreadable = Symbol.isConcatSpreadable;
const typedArrayLength = getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'length').get;
const NativeArray = Array;

function refuse(method, why) {
  throw new TypeErrorCtor(method + ' is not available ' + why + ' in this sandbox');
}
function isObject(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function');
}
// Program code can run while a native loop is under way (a callback, a valueOf, a species
// constructor) and make the chain it measured deeper: for as long as a guarded call runs, every
// object on a chain it measured keeps its prototype. They are kept on a stack, as calls nest, each
// guarded call letting go of its own when it returns or throws: holding costs a store, and only
// the rare prototype change searches the stack. A null-prototype object, so no setter the program
// put on Array.prototype can see a store.
const heldStack = { __proto__: null };
let heldCount = 0;
function hold(o) {
  heldStack[heldCount] = o;
  heldCount = heldCount + 1;
}
function releaseTo(mark) {
  while (heldCount > mark) {
    heldCount = heldCount - 1;
    heldStack[heldCount] = undefined;
  }
}
function isHeld(o) {
  for (let i = 0; i < heldCount; i++) if (heldStack[i] === o) return true;
  return false;
}
// The lookups a native loop over \`items\` may make: its length times its prototype chain's depth.
function lookups(items, method) {
  // A missing receiver: the native method throws its own TypeError.
  if (items === null || items === undefined) return 0;
  const object = ObjectCtor(items);
  // An array's length is always its own data property: no descriptor to read (the common case).
  let length = !isProxy(object) && isArray(object) ? object.length : -1;
  if (length >= 0) refuseLong(method, length);
  let depth = 0;
  for (let o = object; o !== null; o = getPrototypeOf(o)) {
    // Anywhere in the chain: a Proxy without traps forwards lookups natively, to a chain of its own.
    if (isProxy(o)) refuse(method, 'on a Proxy');
    depth = depth + 1;
    if (length >= 0) continue;
    const found = getOwnPropertyDescriptor(o, 'length');
    if (found === undefined) continue;
    if (!reflectApply(hasOwn, found, ['value'])) {
      // A typed array's elements are all its own: one lookup each. The native getter, called as the
      // native method will call it (a TypeError on anything but a typed array).
      if (found.get === typedArrayLength) return refuseLong(method, reflectApply(typedArrayLength, object, []));
      refuse(method, 'on an object whose length is a getter');
    }
    const value = found.value;
    if (isObject(value)) refuse(method, 'on an object whose length is an object');
    // Numbers and strings convert without program code; anything else converts to 0 or throws.
    length = typeof value === 'number' || typeof value === 'string' ? +value : 0;
    if (length !== length || length < 0) length = 0;
    refuseLong(method, length);
  }
  if (length > 0) {
    for (let o = object; o !== null; o = getPrototypeOf(o)) hold(o);
  }
  return length <= 0 ? 0 : length * depth;
}
function refuseLong(method, length) {
  if (length > maxLength) {
    throw new RangeErrorCtor(method + ' on a length of ' + length + ' is refused: this sandbox allows lengths up to ' + maxLength);
  }
  return length;
}
function refuseLookups(method, count) {
  throw new RangeErrorCtor(method + ' would make up to ' + count + ' element lookups (length times prototype chain depth) and is refused: this sandbox allows up to ' + maxLookups);
}
function check(items, method) {
  const count = lookups(items, method);
  if (count > maxLookups) refuseLookups(method, count);
}
const measure = (native, items, args, method) => check(items, method);
// The value a native method will read at \`key\`, read without running program code: the first
// own data property on the chain. A getter there, or a Proxy on the way, could answer differently
// when the native method reads it.
function dataValue(o, key, label, method) {
  for (; o !== null; o = getPrototypeOf(o)) {
    if (isProxy(o)) refuse(method, 'on a Proxy');
    const found = getOwnPropertyDescriptor(o, key);
    if (found === undefined) continue;
    if (!reflectApply(hasOwn, found, ['value'])) refuse(method, 'on an object whose ' + label + ' is a getter');
    return found.value;
  }
  return undefined;
}

function replace(owner, key, method, length) {
  defineProperty(method, 'length', { __proto__: null, value: length });
  defineProperty(owner, key, { __proto__: null, value: method, writable: true, enumerable: false, configurable: true });
}
// Run \`run(native, self, args, name)\`, letting go of what its measures held however it ends.
function holding(run, native, self, args, name) {
  const mark = heldCount;
  try {
    return run(native, self, args, name);
  } finally {
    releaseTo(mark);
  }
}
// Replace a method by one that calls \`run\` with the native method, holding.
function replaceHolding(owner, key, name, run, length) {
  const native = owner[key];
  if (typeof native !== 'function') return;
  replace(owner, key, {
    [key](...args) {
      return holding(run, native, this, args, name);
    },
  }[key], length === undefined ? native.length : length);
}
// A call of the native after \`checkArgs(self, args, name)\`, which may replace arguments in place.
function checkedCall(checkArgs) {
  return (native, self, args, name) => {
    checkArgs(self, args, name);
    return reflectApply(native, self, args);
  };
}
function guard(owner, key, name, checkArgs) {
  replaceHolding(owner, key, name, checkedCall(checkArgs));
}
// The same for a constructor that may also be called without \`new\`: a Proxy keeps its
// \`prototype\`, \`instanceof\`, statics and subclassing as they are.
function guardConstructor(owner, key, name, checkArgs) {
  const native = owner[key];
  if (typeof native !== 'function') return;
  const call = checkedCall(checkArgs);
  const construct = (target, newTarget, args) => {
    checkArgs(undefined, args, name);
    return reflectConstruct(target, args, newTarget);
  };
  const guarded = new NativeProxy(native, {
    __proto__: null,
    apply: (target, self, args) => holding(call, target, self, args, name),
    construct: (target, args, newTarget) => holding(construct, target, newTarget, args, name),
  });
  defineProperty(native.prototype, 'constructor', { __proto__: null, value: guarded, writable: true, enumerable: false, configurable: true });
  defineProperty(owner, key, { __proto__: null, value: guarded, writable: true, enumerable: false, configurable: true });
}
// The only ways to change an existing object's prototype.
function refuseHeld(o, proto, method) {
  if (isHeld(o) && getPrototypeOf(o) !== proto) {
    throw new TypeErrorCtor(method + ' is refused on an object whose prototype chain a running array method is walking');
  }
}
const nativeSetPrototypeOf = Object.setPrototypeOf;
replace(ObjectCtor, 'setPrototypeOf', {
  setPrototypeOf(o, proto) {
    if (isObject(o)) refuseHeld(o, proto, 'Object.setPrototypeOf');
    return reflectApply(nativeSetPrototypeOf, ObjectCtor, [o, proto]);
  },
}.setPrototypeOf, 2);
const nativeReflectSetPrototypeOf = Reflect.setPrototypeOf;
replace(Reflect, 'setPrototypeOf', {
  setPrototypeOf(o, proto) {
    // As for a non-extensible object: false, not an exception.
    if (isObject(o) && isHeld(o) && getPrototypeOf(o) !== proto) return false;
    return reflectApply(nativeReflectSetPrototypeOf, Reflect, [o, proto]);
  },
}.setPrototypeOf, 2);
const protoAccessor = getOwnPropertyDescriptor(ObjectCtor.prototype, '__proto__');
if (protoAccessor !== undefined && typeof protoAccessor.set === 'function') {
  const nativeProtoSetter = protoAccessor.set;
  // An accessor named __proto__ in a literal is an ordinary own property: its setter is named
  // "set __proto__", as the native one.
  const guardedSetter = getOwnPropertyDescriptor({
    set __proto__(proto) {
      if (isObject(this) && (isObject(proto) || proto === null)) refuseHeld(this, proto, 'Setting __proto__');
      reflectApply(nativeProtoSetter, this, [proto]);
    },
  }, '__proto__').set;
  defineProperty(ObjectCtor.prototype, '__proto__', { __proto__: null, get: protoAccessor.get, set: guardedSetter, enumerable: false, configurable: true });
}
const checkReceiver = (self, args, name) => check(self, name);
// An argument the call was given, or undefined: a missing index of the arguments array would be
// looked up on Array.prototype, where the program may have put a getter.
const argAt = (args, at) => (at < args.length ? args[at] : undefined);
// An argument list made from an array-like; a primitive there is the native method's own TypeError.
function checkList(at) {
  return (self, args, name) => {
    const list = argAt(args, at);
    if (isObject(list)) check(list, name);
  };
}
// Intl's locale lists: a string is one tag, anything else an array-like. ICU's work on one tag grows
// with the square of its variants (a tag of 200,000 took two minutes), so no tag may be longer than
// MAX_TAG characters, far more than any real tag. A list is measured, then handed on as a copy of
// its tags made here, so V8 reads no element, and converts no object to its tag, a second time.
const MAX_TAG = 255;
const nativeLocaleTag = typeof Intl === 'object' && Intl !== null && typeof Intl.Locale === 'function' ? Intl.Locale.prototype.toString : undefined;
// An Intl.Locale's own tag (V8 reads it from the object, not through toString), or undefined.
function ownTag(value) {
  if (nativeLocaleTag === undefined) return undefined;
  try {
    return reflectApply(nativeLocaleTag, value, []);
  } catch {
    return undefined;
  }
}
// A tag as V8 takes it from \`value\`: a string, an Intl.Locale's tag, any other object's string.
// Other values are left for V8 to refuse.
function localeTag(value, name) {
  let tag = value;
  if (isObject(value)) {
    tag = ownTag(value);
    if (tag === undefined) tag = \`\${value}\`;
  }
  if (typeof tag === 'string' && tag.length > MAX_TAG) {
    throw new RangeErrorCtor(name + ': a locale tag of ' + tag.length + ' characters is refused: this sandbox allows tags of up to ' + MAX_TAG);
  }
  return tag;
}
function checkLocales(at) {
  return (self, args, name) => {
    const locales = argAt(args, at);
    if (typeof locales === 'string') {
      localeTag(locales, name);
      return;
    }
    // An Intl.Locale stands for its one tag; a primitive is V8's to refuse or read as an empty list.
    if (!isObject(locales) || ownTag(locales) !== undefined) return;
    check(locales, name);
    const length = lengthOf(locales);
    const tags = [];
    for (let i = 0; i < length; i++) {
      if (i in locales) createDataProperty(tags, i, localeTag(locales[i], name));
    }
    args[at] = tags;
  };
}

// Array methods.
// A built-in given as a callback (Object.freeze, escape) runs natively too, and V8 looks for the
// stop only on entering JavaScript: callbacks are called through a JavaScript function, which
// costs a few nanoseconds a call. Arguments are replaced in place, keeping how many were given.
function throughJs(callback) {
  if (typeof callback !== 'function') return callback;
  return function (...values) {
    return reflectApply(callback, this, values);
  };
}
function callbackAt(at) {
  // The element is the call's own: assigning it consults no setter on Array.prototype.
  return (self, args, name) => {
    if (args.length > at) args[at] = throughJs(args[at]);
  };
}
const callbackFirst = callbackAt(0);
for (const key of ['copyWithin', 'fill', 'join', 'reverse', 'shift', 'slice', 'splice', 'unshift']) {
  guard(Array.prototype, key, 'Array.prototype.' + key, checkReceiver);
}
for (const key of ['every', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex', 'forEach', 'map', 'reduce', 'reduceRight', 'some']) {
  guard(Array.prototype, key, 'Array.prototype.' + key, (self, args, name) => {
    check(self, name);
    callbackFirst(self, args, name);
  });
}
// The default order compares the elements' strings, each comparison as long as they are: it is
// given as a JavaScript comparator, the same order (sort itself keeps undefined and holes apart).
function defaultOrder(x, y) {
  const a = \`\${x}\`;
  const b = \`\${y}\`;
  return a < b ? -1 : b < a ? 1 : 0;
}
replaceHolding(NativeArray.prototype, 'sort', 'Array.prototype.sort', (native, self, args, name) => {
  check(self, name);
  const comparefn = argAt(args, 0);
  return reflectApply(native, self, [comparefn === undefined ? defaultOrder : throughJs(comparefn)]);
});
// Comparing with a long string reads it whole at every element: those searches run in JavaScript.
const LONG_SEARCH = 256;
// Where a search starts, as the specification has it (lastIndexOf without a fromIndex: the end).
function searchFrom(length, given, fromIndex, last) {
  if (!given && last) return length - 1;
  const n = toIntegerOrInfinity(fromIndex);
  if (last) return n >= 0 ? (n < length - 1 ? n : length - 1) : length + n;
  return n >= 0 ? n : (length + n > 0 ? length + n : 0);
}
// The native search for a short string or anything else; a loop in JavaScript for a long string.
function guardSearch(key, inJs) {
  replaceHolding(NativeArray.prototype, key, 'Array.prototype.' + key, (native, self, args, name) => {
    check(self, name);
    const search = argAt(args, 0);
    if (typeof search !== 'string' || search.length <= LONG_SEARCH) return reflectApply(native, self, args);
    if (self === null || self === undefined) throw new TypeErrorCtor(name + ' called on null or undefined');
    const o = ObjectCtor(self);
    return inJs(o, lengthOf(o), search, args.length > 1, argAt(args, 1));
  }, 1);
}
guardSearch('indexOf', (o, length, search, given, fromIndex) => {
  for (let k = length === 0 ? 0 : searchFrom(length, true, fromIndex, false); k < length; k++) {
    if (k in o && o[k] === search) return k;
  }
  return -1;
});
guardSearch('lastIndexOf', (o, length, search, given, fromIndex) => {
  if (length === 0) return -1;
  for (let k = searchFrom(length, given, fromIndex, true); k >= 0; k--) {
    if (k in o && o[k] === search) return k;
  }
  return -1;
});
guardSearch('includes', (o, length, search, given, fromIndex) => {
  for (let k = length === 0 ? 0 : searchFrom(length, true, fromIndex, false); k < length; k++) {
    if (o[k] === search) return true;
  }
  return false;
});
const checkLocalesArgument = checkLocales(0);
guard(Array.prototype, 'toLocaleString', 'Array.prototype.toLocaleString', (self, args, name) => {
  check(self, name);
  checkLocalesArgument(self, args, name);
});
// Array.from and the typed array constructors read Symbol.iterator before length: a getter there
// could lengthen the object after the check.
function checkSource(self, args, name) {
  const source = argAt(args, 0);
  if (source !== null && source !== undefined) dataValue(ObjectCtor(source), iteratorSymbol, 'Symbol.iterator', name);
  check(source, name);
}
const callbackSecond = callbackAt(1);
guard(Array, 'from', 'Array.from', (self, args, name) => {
  checkSource(self, args, name);
  callbackSecond(self, args, name);
});
// concat loops over the receiver and every argument it spreads, reading each one's length only when
// it gets to it, and program code can run on the way (a species constructor, an element getter on
// an argument or its chain) and lengthen one not reached yet, real arrays included: measured
// first, it could not be bounded. It is written here in JavaScript, which V8 stops anywhere.
function concatInJs(receiver, items) {
  const target = speciesOf(receiver);
  let at = 0;
  for (let i = -1; i < items.length; i++) {
    const item = i < 0 ? receiver : items[i];
    let spreadable = false;
    if (isObject(item)) {
      const flag = item[concatSpreadable];
      spreadable = flag !== undefined ? !!flag : isArray(item);
    }
    if (!spreadable) {
      if (at >= 9007199254740991) throw new TypeErrorCtor('the concatenated array would be too long');
      createDataProperty(target, at, item);
      at = at + 1;
      continue;
    }
    const length = lengthOf(item);
    if (at + length > 9007199254740991) throw new TypeErrorCtor('the concatenated array would be too long');
    for (let k = 0; k < length; k++) {
      if (k in item) createDataProperty(target, at, item[k]);
      at = at + 1;
    }
  }
  target.length = at;
  return target;
}
replace(NativeArray.prototype, 'concat', {
  concat(...items) {
    if (this === null || this === undefined) throw new TypeErrorCtor('Array.prototype.concat called on null or undefined');
    return concatInJs(ObjectCtor(this), items);
  },
}.concat, 1);

// Argument lists.
guard(Function.prototype, 'apply', 'Function.prototype.apply', checkList(1));
guard(Reflect, 'apply', 'Reflect.apply', checkList(2));
guard(Reflect, 'construct', 'Reflect.construct', checkList(1));

// Typed arrays: made from, or set from, an array-like.
const TypedArray = getPrototypeOf(Uint8Array);
guard(TypedArray, 'from', 'TypedArray.from', (self, args, name) => {
  checkSource(self, args, name);
  callbackSecond(self, args, name);
});
for (const key of ['every', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex', 'forEach', 'map', 'reduce', 'reduceRight', 'some', 'sort']) {
  guard(TypedArray.prototype, key, 'TypedArray.prototype.' + key, callbackFirst);
}
guard(TypedArray.prototype, 'set', 'TypedArray.prototype.set', checkList(0));
for (const key of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
  'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
  guardConstructor(g, key, key, (self, args, name) => {
    if (isObject(argAt(args, 0))) checkSource(self, args, name);
  });
}

// Strings.
guard(String, 'raw', 'String.raw', (self, args, name) => {
  const template = argAt(args, 0);
  if (template === null || template === undefined) return;
  const raw = dataValue(ObjectCtor(template), 'raw', 'raw', name);
  if (raw !== null && raw !== undefined) check(raw, name);
});
// split makes its parts natively, and more of them than an array can hold is not an exception but a
// V8 fatal error ("invalid size") that aborts the whole host process. So this split converts its
// arguments as the specification orders, counts the parts a string separator would make, and only
// then hands primitives to the native one. A separator with a Symbol.split method (a RegExp) is
// that method's business: V8 grows its result with the checks that make an exception instead.
const nativeSplit = String.prototype.split;
const nativeIndexOf = String.prototype.indexOf;
const splitSymbol = Symbol.split;
replace(String.prototype, 'split', {
  split(separator, limit) {
    if (this === null || this === undefined) throw new TypeErrorCtor('String.prototype.split called on null or undefined');
    if (separator !== null && separator !== undefined) {
      const splitter = separator[splitSymbol];
      if (splitter !== undefined && splitter !== null) {
        if (typeof splitter !== 'function') throw new TypeErrorCtor('Symbol.split of the separator is not a function');
        return reflectApply(splitter, separator, [this, limit]);
      }
    }
    const text = \`\${this}\`;
    const most = limit === undefined ? 4294967295 : (+limit) >>> 0;
    const by = \`\${separator}\`;
    if (separator !== undefined && most > maxLength) {
      let parts = 1;
      if (by === '') {
        parts = text.length;
      } else if (text.length / by.length >= maxLength) {
        for (let at = reflectApply(nativeIndexOf, text, [by, 0]); at >= 0 && parts <= maxLength; at = reflectApply(nativeIndexOf, text, [by, at + by.length])) {
          parts = parts + 1;
        }
      }
      if (parts > maxLength) {
        throw new RangeErrorCtor('String.prototype.split into more than ' + maxLength + ' parts is refused: this sandbox allows up to ' + maxLength + ' (pass a limit to take the first ones)');
      }
    }
    return reflectApply(nativeSplit, text, [separator === undefined ? undefined : by, most]);
  },
}.split, 2);

// JSON.parse reads its text natively, uninterruptibly (~50 ns a character), and an array of more
// elements than V8 can hold (2^27 - 2, in a text of twice that) aborts the whole process: the text
// is bounded to twice the longest array-like allowed.
const nativeParse = JSON.parse;
const maxJsonText = maxLength * 2;
replace(JSON, 'parse', {
  parse(text, reviver) {
    const source = \`\${text}\`;
    if (source.length > maxJsonText) {
      throw new RangeErrorCtor('JSON.parse of a text of ' + source.length + ' characters is refused: this sandbox parses texts up to ' + maxJsonText);
    }
    return reflectApply(nativeParse, JSON, [source, reviver]);
  },
}.parse, 2);
// A replacer that is an array is a property list.
guard(JSON, 'stringify', 'JSON.stringify', (self, args, name) => {
  const replacer = argAt(args, 1);
  if (typeof replacer !== 'function' && isArray(replacer)) check(replacer, name);
});

// Locale lists.
if (typeof Intl === 'object' && Intl !== null) {
  guard(Intl, 'getCanonicalLocales', 'Intl.getCanonicalLocales', checkLocalesArgument);
  for (const key of ['Collator', 'DateTimeFormat', 'DisplayNames', 'ListFormat', 'NumberFormat', 'PluralRules',
    'RelativeTimeFormat', 'Segmenter', 'v8BreakIterator']) {
    if (typeof Intl[key] !== 'function') continue;
    guard(Intl[key], 'supportedLocalesOf', 'Intl.' + key + '.supportedLocalesOf', checkLocalesArgument);
    guardConstructor(Intl, key, 'Intl.' + key, checkLocalesArgument);
  }
}
// ICU works on copies of the whole string outside the heap (UTF-16, in and out): normalize of 2^28
// characters held 1.5 GB of host memory for the length of the call. These string methods take
// strings of up to twice maxLength characters; each is converted once, here, as the native one
// would convert it, and handed on as a primitive.
const maxIcuText = maxLength * 2;
function icuText(value, method) {
  const text = \`\${value}\`;
  if (text.length > maxIcuText) {
    throw new RangeErrorCtor(method + ' on a string of ' + text.length + ' characters is refused: this sandbox allows up to ' + maxIcuText);
  }
  return text;
}
function guardIcuText(key, localesAt, convertsFirstArgument) {
  const checkLocalesAt = checkLocales(localesAt);
  replaceHolding(String.prototype, key, 'String.prototype.' + key, (native, self, args, name) => {
    if (self === null || self === undefined) throw new TypeErrorCtor(name + ' called on null or undefined');
    const text = icuText(self, name);
    // In the specification's order: localeCompare converts the string it compares before its
    // locales. The first argument is read after the check, which replaces a locale list in place.
    const compared = convertsFirstArgument ? icuText(argAt(args, 0), name) : undefined;
    if (localesAt >= 0) checkLocalesAt(text, args, name);
    return reflectApply(native, text, [convertsFirstArgument ? compared : argAt(args, 0), argAt(args, 1), argAt(args, 2)]);
  });
}
guardIcuText('localeCompare', 1, true);
guardIcuText('toLocaleLowerCase', 0, false);
guardIcuText('toLocaleUpperCase', 0, false);
guardIcuText('normalize', -1, false);
guard(Number.prototype, 'toLocaleString', 'Number.prototype.toLocaleString', checkLocalesArgument);
guard(BigInt.prototype, 'toLocaleString', 'BigInt.prototype.toLocaleString', checkLocalesArgument);
for (const key of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']) guard(Date.prototype, key, 'Date.prototype.' + key, checkLocalesArgument);
guard(TypedArray.prototype, 'toLocaleString', 'TypedArray.prototype.toLocaleString', checkLocalesArgument);

// Built-ins in C++ whose work grows with their input. V8 looks for the stop on entering JavaScript
// and when a loop has used up its bytecode budget, not on entering C++: a loop whose body only
// calls one (\`for (;;) escape(s)\` with s of 8 MB) made hundreds of calls, seconds to minutes,
// after the run was stopped. Each is reached through a JavaScript function instead, whose entry V8
// checks: the stop then waits for one call at most. (A RegExp's own methods are left alone:
// changing RegExp.prototype takes every regular expression off V8's fast paths, 10 to 70 times
// slower. Called directly in such a loop they are bounded by the engine, see maxRunawayIsolates.)
function throughEntry(owner, key) {
  const native = owner[key];
  if (typeof native !== 'function') return;
  replace(owner, key, {
    [key](...args) {
      return reflectApply(native, this, args);
    },
  }[key], native.length);
}
// Collator's compare and the formats' format are getters that hand out a native function bound to
// the object (\`const c = new Intl.Collator().compare; for (;;) c(s, t)\` ran 25 s past the stop):
// the getter hands out a JavaScript function calling it instead, the same one each time, with the
// bound one's name and length. Every getter of the Intl prototypes goes through this; what is not a
// function (a Locale's fields) is handed on as it is.
const WeakMapCtor = WeakMap;
const weakMapGet = WeakMap.prototype.get;
const weakMapSet = WeakMap.prototype.set;
function throughEntryOfGetter(owner, key, descriptor) {
  const nativeGet = descriptor.get;
  const wrappers = new WeakMapCtor();
  const getter = getOwnPropertyDescriptor({
    get [key]() {
      const bound = reflectApply(nativeGet, this, []);
      if (typeof bound !== 'function') return bound;
      let wrapper = reflectApply(weakMapGet, wrappers, [bound]);
      if (wrapper === undefined) {
        wrapper = (...args) => reflectApply(bound, undefined, args);
        defineProperty(wrapper, 'length', { __proto__: null, value: bound.length, configurable: true });
        defineProperty(wrapper, 'name', { __proto__: null, value: bound.name, configurable: true });
        reflectApply(weakMapSet, wrappers, [bound, wrapper]);
      }
      return wrapper;
    },
  }, key).get;
  defineProperty(owner, key, { __proto__: null, get: getter, set: undefined, enumerable: descriptor.enumerable, configurable: descriptor.configurable });
}
// A function with statics replaced by \`wrapper\`, which answers to all the native one did: the same
// prototype object (instanceof and subclasses hold), statics, name and length, and the prototype's
// constructor. (Not a Proxy: \`new Date()\` through one took 20 times as long.)
function replaceCallable(owner, key, wrapper) {
  const native = owner[key];
  for (const name of ownKeys(native)) defineProperty(wrapper, name, getOwnPropertyDescriptor(native, name));
  defineProperty(native.prototype, 'constructor', { __proto__: null, value: wrapper, writable: true, enumerable: false, configurable: true });
  defineProperty(owner, key, { __proto__: null, value: wrapper, writable: true, enumerable: false, configurable: true });
}
for (const key of ['escape', 'unescape', 'encodeURI', 'encodeURIComponent', 'decodeURI', 'decodeURIComponent']) throughEntry(g, key);
for (const key of ['toUpperCase', 'toLowerCase', 'match', 'matchAll', 'replace', 'replaceAll']) throughEntry(String.prototype, key);
throughEntry(Date, 'parse');
throughEntry(BigInt.prototype, 'toString');
const NativeDate = Date;
const GuardedDate = function Date(...args) {
  if (new.target === undefined) return reflectApply(NativeDate, undefined, args);
  // Both make an object of Date.prototype; V8 optimizes the spread (measured: 37 ns against 440).
  return new.target === GuardedDate ? new NativeDate(...args) : reflectConstruct(NativeDate, args, new.target);
};
replaceCallable(g, 'Date', GuardedDate);
// A method, as BigInt is no constructor.
const NativeBigInt = BigInt;
replaceCallable(g, 'BigInt', {
  BigInt(value) {
    return NativeBigInt(value);
  },
}.BigInt);
if (typeof Intl === 'object' && Intl !== null) {
  // Every Intl method works in ICU, on copies of the strings it is given.
  const intlPrototypes = [];
  for (const key of ['Collator', 'DateTimeFormat', 'DisplayNames', 'ListFormat', 'Locale', 'NumberFormat', 'PluralRules',
    'RelativeTimeFormat', 'Segmenter', 'v8BreakIterator']) {
    if (typeof Intl[key] === 'function') intlPrototypes.push(Intl[key].prototype);
  }
  if (typeof Intl.Segmenter === 'function') {
    const segments = reflectApply(Intl.Segmenter.prototype.segment, new Intl.Segmenter(), ['']);
    intlPrototypes.push(getPrototypeOf(segments), getPrototypeOf(segments[iteratorSymbol]()));
  }
  for (const proto of intlPrototypes) {
    for (const key of ownKeys(proto)) {
      if (typeof key !== 'string' || key === 'constructor' || (key === 'of' && proto === Intl.DisplayNames?.prototype)) continue;
      const descriptor = getOwnPropertyDescriptor(proto, key);
      if (typeof descriptor.value === 'function') throughEntry(proto, key);
      else if (typeof descriptor.get === 'function') throughEntryOfGetter(proto, key, descriptor);
    }
  }
  // A display name's code is a tag, or shorter (and this wrapper is JavaScript already).
  if (typeof Intl.DisplayNames === 'function') {
    replaceHolding(Intl.DisplayNames.prototype, 'of', 'Intl.DisplayNames.prototype.of', (native, self, args, name) => {
      const code = argAt(args, 0);
      return reflectApply(native, self, [typeof code === 'string' || isObject(code) ? localeTag(\`\${code}\`, name) : code]);
    });
  }
  guardConstructor(Intl, 'Locale', 'Intl.Locale', (self, args, name) => {
    if (args.length > 0) args[0] = localeTag(args[0], name);
  });
}

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
// One descriptor, refilled: defining an element allocates nothing.
const elementDescriptor = { __proto__: null, value: undefined, writable: true, enumerable: true, configurable: true };
function createDataProperty(target, index, value) {
  elementDescriptor.value = value;
  const defined = defineProperty(target, index, elementDescriptor);
  elementDescriptor.value = undefined;
  if (!defined) throw new TypeErrorCtor('Cannot add property ' + index + ', object is not extensible');
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
    createDataProperty(target, at, element);
    at = at + 1;
  }
  return at;
}
// The array the result goes into, made as the specification's ArraySpeciesCreate(o, 0) makes it.
const speciesSymbol = Symbol.species;
function speciesOf(o) {
  if (!isArray(o)) return [];
  let C = o.constructor;
  if (isObject(C)) {
    C = C[speciesSymbol];
    if (C === null) C = undefined;
  }
  if (C === undefined) return [];
  if (typeof C !== 'function') throw new TypeErrorCtor('object.constructor[Symbol.species] is not a constructor');
  return new C(0);
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

// Proxies. Each one made is remembered, and so is its handler's stand-in: V8 reads every trap
// through it, which lets the \`ownKeys\` trap's result, a list made natively from an array-like, be
// measured before V8 reads it. The stand-in is also the \`this\` of every trap.
const handlerTraps = {
  __proto__: null,
  get(handler, key, receiver) {
    const trap = reflectGet(handler, key, receiver);
    if (key !== 'ownKeys' || typeof trap !== 'function') return trap;
    // V8 reads the result natively: it gets a copy made here, in JavaScript, of a length checked first.
    return function ownKeys(target) {
      const keys = reflectApply(trap, this, [target]);
      if (!isObject(keys)) return keys;
      holding(measure, undefined, keys, undefined, 'a Proxy ownKeys trap result');
      const length = lengthOf(keys);
      const copy = [];
      for (let i = 0; i < length; i++) createDataProperty(copy, i, keys[i]);
      return copy;
    };
  },
};
function standIn(handler) {
  // Not an object: the native constructor throws its own TypeError.
  if (!isObject(handler)) return handler;
  const guarded = new NativeProxy(handler, handlerTraps);
  reflectApply(remember, proxies, [guarded]);
  return guarded;
}
// Bound, as the native constructor has no \`prototype\` property (a bound function has none, and
// \`new\` still reaches the target). A function expression: its name binds inside it only, so
// \`Proxy\` above is still the native one.
const RememberingProxy = reflectApply(Function.prototype.bind, function Proxy(target, handler) {
  if (new.target === undefined) throw new TypeErrorCtor("Constructor Proxy requires 'new'");
  const proxy = new NativeProxy(target, standIn(handler));
  reflectApply(remember, proxies, [proxy]);
  return proxy;
}, [undefined]);
defineProperty(RememberingProxy, 'name', { __proto__: null, value: 'Proxy' });
defineProperty(RememberingProxy, 'revocable', {
  __proto__: null,
  value: function revocable(target, handler) {
    const made = reflectApply(nativeRevocable, NativeProxy, [target, standIn(handler)]);
    reflectApply(remember, proxies, [made.proxy]);
    return made;
  },
  writable: true,
  enumerable: false,
  configurable: true,
});
defineProperty(g, 'Proxy', { __proto__: null, value: RememberingProxy, writable: true, enumerable: false, configurable: true });
`
