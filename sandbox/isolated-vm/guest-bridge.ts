import type { Context, Isolate, Reference, Script, Transferable } from './isolated-vm-types.ts'
import { failureEnvelope, initLimits, PROGRAM_FILENAME, toolsJson, wrapProgram } from '../guest-runtime.ts'
import type { SandboxLimits, ToolBinding } from '../engine.ts'
import type { IsolatedVm } from './load-isolated-vm.ts'
import { NATIVE_LOOP_GUARD_SOURCE } from './native-loop-guards.ts'

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
 * - `__codemode_call` sends each call with `applyIgnored` (it never waits: calls overlap, and
 *   `Promise.all` is concurrent; `applySyncPromise` would serialise them) and returns a promise of
 *   its own, which the guest-side `settle` resolves when the host sends the answer, batched with
 *   the others that came in the same turn of the host's event loop (see AnswerBatch).
 *   `__codemode_log` uses `applySync`, so a logging loop is throttled by the host, which counts
 *   bytes and stops the run on a breach.
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
const callIgnored = callRef.applyIgnored;
const logApply = logRef.applySync;
const breachApply = breachRef.applyIgnored;
const freeze = Object.freeze;
const callOptions = freeze({ __proto__: null, arguments: freeze({ __proto__: null, copy: true }) });
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
// Per call id in flight: the resolve of the promise its answer settles. No prototype, so no
// setter the program put on Array.prototype sees a store.
const waiting = [];
Object.setPrototypeOf(waiting, null);
// The host's answers, \`[id, envelope, id, envelope, ...]\`, as many as came in together.
function settle(answers) {
  const count = answers.length;
  for (let i = 0; i + 1 < count; i += 2) {
    const id = answers[i];
    const resolve = waiting[id];
    if (typeof resolve !== 'function') continue;
    waiting[id] = undefined;
    resolve(text(answers[i + 1]));
  }
}
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
  const id = made;
  const answer = new PromiseCtor((resolve) => { waiting[id] = resolve; });
  reflectApply(callIgnored, callRef, [undefined, [id, text(name), text(argsJson)], callOptions]);
  return reflectApply(promiseThen, answer, [onAnswer]);
};
globalThis.__codemode_log = function __codemode_log(level, message, over) {
  reflectApply(logApply, logRef, [undefined, [text(level), text(message), over === true], logOptions]);
};
return freeze({ __proto__: null, configure: freeze(function configure(calls, inFlightCalls) { maxCalls = calls; maxInFlight = inFlightCalls; }), settle: freeze(settle) });
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
  /** A sub-call's answer envelope; it crosses into the guest batched with others (AnswerBatch). */
  call(name: string, argsJson: string): Promise<string>
  /** `over`: the line did not fit in what is left of the log limit (its text stayed in the guest). */
  log(level: string, text: string, over: boolean): void
  /** The settled program, as the tagged text described at {@link ARM_SOURCE}. */
  done(text: string): void
  /** The guest found one of its sub-call counts over its limit (see {@link BRIDGE_SOURCE}). */
  breach(limit: 'maxSubCalls' | 'maxSubCallsInFlight'): void
}

/** Code units of answers past which a batch crosses at once rather than at the end of the turn. */
const MAX_BATCH_CHARS = 1 << 20

type SettleReference = Reference<(answers: (number | string)[]) => void>
const COPY_ARGUMENTS = Object.freeze({ arguments: Object.freeze({ copy: true }) })

/**
 * Sub-call answers on their way into the guest, where `settle` resolves each call's promise. The
 * first crosses at once (a program awaiting one call at a time has nothing else coming); answers
 * that come in while it is on its way, like the tools of one `Promise.all` finishing in the same
 * turn of the event loop, cross together at the end of that turn, one task in the isolate for all
 * of them. Answers as isolated-vm promise results took a task each: 100 of them, 2 to 5 ms.
 */
class AnswerBatch {
  readonly #settle: SettleReference
  #batch: (number | string)[] | undefined
  #batchChars = 0
  #closed = false

  constructor(settle: SettleReference) {
    this.#settle = settle
  }

  add(id: number, envelope: string): void {
    if (this.#closed) return
    if (this.#batch !== undefined) {
      // A batch of large answers goes out early: one copy into the isolate stays small.
      if (this.#batchChars > 0 && this.#batchChars + envelope.length > MAX_BATCH_CHARS) {
        this.#send(this.#batch)
        this.#batch = []
        this.#batchChars = 0
      }
      this.#batch.push(id, envelope)
      this.#batchChars += envelope.length
      return
    }
    this.#send([id, envelope])
    this.#batch = []
    setImmediate(() => {
      const batch = this.#batch
      this.#batch = undefined
      this.#batchChars = 0
      if (batch !== undefined && batch.length > 0) this.#send(batch)
    })
  }

  /** No answer crosses any more, not even one already batched: the program it would wake is over. */
  close(): void {
    this.#closed = true
    this.#batch = undefined
    release(this.#settle)
  }

  #send(answers: (number | string)[]): void {
    try {
      this.#settle.applyIgnored(undefined, [answers], COPY_ARGUMENTS)
    } catch {
      // The isolate is gone, and its run with it.
    }
  }
}

/** A context's installed bridge, as the host holds it. */
export interface Bridge {
  /** Called once before the program, with {@link armArguments}. */
  readonly arm: ArmReference
  /**
   * The context's program is over: no sub-call answer crosses into it any more, not even one
   * already batched, and the host's handles into it are released, so a context left behind in an
   * isolate that runs on is never woken and can be collected.
   */
  close(): void
}

/** Release a handle whose isolate may already be gone. */
function release(reference: { release(): void }): void {
  try {
    reference.release()
  } catch {
    // Released with its isolate.
  }
}

/**
 * The guest scripts every context of an isolate runs (the bridge, the prelude, `arm`'s maker, the
 * native-loop guards), compiled once for the isolate: V8 then compiles their functions once for
 * it, not once per context, as evaluating their sources in every context did (measured: the guards
 * 0.54 ms of the isolate's CPU per context against 1.7 ms; the bridge 0.13 against 0.28 ms).
 */
export interface BridgeScripts {
  readonly bridge: Script
  readonly prelude: Script
  readonly arm: Script
  readonly guards: Script
}

export async function compileBridgeScripts(
  isolate: Isolate,
  prelude: { readonly source: string; readonly filename: string },
): Promise<BridgeScripts> {
  const [bridge, runtime, arm, guards] = await Promise.all([
    closureScript(isolate, BRIDGE_SOURCE, 'codemode-bridge.js'),
    isolate.compileScript(prelude.source, { filename: prelude.filename }),
    closureScript(isolate, ARM_SOURCE, 'codemode-bridge.js'),
    closureScript(isolate, NATIVE_LOOP_GUARD_SOURCE, 'codemode-guards.js'),
  ])
  return { bridge, prelude: runtime, arm, guards }
}

/**
 * A script whose completion value is a function of `$0`, `$1`, `$2` with `body` (the parameters
 * `evalClosure` would give it): a closure over values made per context (References, the
 * prelude's runtime), which `callClosure` passes. The body's first line stays line 1.
 */
function closureScript(isolate: Isolate, body: string, filename: string): Promise<Script> {
  return isolate.compileScript(`(function ($0, $1, $2) {${body}\n})`, { filename })
}

/**
 * Run a {@link closureScript} in `context` and call its function with `args` (References and
 * `derefInto()` handles arrive as themselves); its return value as a Reference. The function
 * returns before any program runs and the host lets go of it: no guest value reaches it.
 */
async function callClosure<T>(script: Script, context: Context, args: Transferable[]): Promise<Reference<T>> {
  const closure = (await script.run(context, { reference: true })) as Reference<(...args: Transferable[]) => T>
  try {
    return (await closure.apply(undefined, args, { result: { reference: true } })) as Reference<T>
  } finally {
    closure.release()
  }
}

/**
 * Install the raw globals, run the prelude, then the native-loop guards (unless `guards` is left
 * out: a context no program runs in needs none), all from `scripts` (see
 * {@link compileBridgeScripts}), and return the host-side {@link Bridge}.
 */
export async function installBridge(
  ivm: IsolatedVm,
  context: Context,
  host: BridgeHost,
  scripts: BridgeScripts,
  guards?: { readonly maxArrayLength: number },
): Promise<Bridge> {
  // Bound below, once the guest's settle exists: no call can come before the program runs.
  let answers: AnswerBatch | undefined
  const callRef = new ivm.Reference((id: unknown, name: string, argsJson: string) => {
    if (typeof id !== 'number') return
    // The host never throws or rejects; if it did, the call must still be answered, or the
    // program would wait on it until its wall-time limit.
    const failed = (): void => answers?.add(id, failureEnvelope(`the tool call ${name} failed in the host`, 'TOOL_FAILED'))
    try {
      host.call(name, argsJson).then((envelope) => answers?.add(id, envelope), failed)
    } catch {
      failed()
    }
  })
  const logRef = new ivm.Reference((level: string, text: string, over: boolean) => host.log(level, text, over))
  const doneRef = new ivm.Reference((text: string) => host.done(text))
  const breachRef = new ivm.Reference((limit: unknown) => host.breach(limit === 'maxSubCalls' ? 'maxSubCalls' : 'maxSubCallsInFlight'))
  const controls = await callClosure<{ configure: (maxSubCalls: number, maxSubCallsInFlight: number) => void; settle: (answers: (number | string)[]) => void }>(
    scripts.bridge,
    context,
    [callRef, logRef, breachRef],
  )
  const configure = await controls.get('configure', { reference: true })
  answers = new AnswerBatch(await controls.get('settle', { reference: true }))
  controls.release()
  const runtime = (await scripts.prelude.run(context, { reference: true })) as Reference<object>
  const arm = (await callClosure(scripts.arm, context, [runtime.derefInto(), doneRef, configure.derefInto()])) as ArmReference
  runtime.release()
  configure.release()
  // After the prelude, which keeps the native methods it captured for its own arrays.
  if (guards !== undefined) {
    const installed = await callClosure(scripts.guards, context, [guards.maxArrayLength])
    installed.release()
  }
  let closed = false
  return {
    arm,
    close() {
      if (closed) return
      closed = true
      answers?.close()
      for (const reference of [arm, callRef, logRef, doneRef, breachRef]) release(reference)
    },
  }
}
