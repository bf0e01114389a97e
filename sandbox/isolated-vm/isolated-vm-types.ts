/**
 * The part of isolated-vm's API this engine uses, declared here instead of imported from the
 * package's own declarations: isolated-vm is an optional dependency, and a build, or a consumer's
 * type check with `skipLibCheck: false`, must not need it installed (TS2307 otherwise). Type-only:
 * nothing here exists at run time. test/sandbox/isolated-vm-types.test.ts checks that the installed
 * package is assignable to these declarations, so they cannot drift from it unnoticed.
 */

/** What may cross into an isolate as an argument or come back as a result. */
export type Transferable =
  | null
  | undefined
  | string
  | number
  | boolean
  | Isolate
  | Context
  | Script
  | Reference
  | Dereference
  | ((...args: never[]) => unknown)

/** How values cross a boundary: `copy` (structured clone) or `reference` (a {@link Reference}). */
export interface TransferOptions {
  readonly copy?: boolean
  readonly reference?: boolean
  readonly promise?: boolean
  readonly externalCopy?: boolean
}

/** Options of {@link Reference.apply} and {@link Reference.applyIgnored}. */
export interface ReferenceApplyOptions {
  readonly timeout?: number
  readonly arguments?: TransferOptions
  readonly result?: TransferOptions
}

/** Where a script's positions point, as stack traces show them. */
export interface ScriptOrigin {
  readonly filename?: string
  readonly columnOffset?: number
  readonly lineOffset?: number
}

/** Options of {@link Context.eval}. */
export type ContextEvalOptions = ScriptOrigin & TransferOptions & { readonly timeout?: number }

/** Options of {@link Script.run}. */
export type ScriptRunOptions = TransferOptions & { readonly timeout?: number; readonly release?: boolean }

/** The heap figures of one isolate (as `v8.getHeapStatistics()`). */
export interface HeapStatistics {
  readonly total_heap_size: number
  readonly total_heap_size_executable: number
  readonly total_physical_size: number
  readonly total_available_size: number
  readonly used_heap_size: number
  readonly heap_size_limit: number
  readonly malloced_memory: number
  readonly peak_malloced_memory: number
  readonly does_zap_garbage: number
  readonly externally_allocated_size: number
}

/** Options of `new Isolate(...)`. */
export interface IsolateOptions {
  readonly memoryLimit?: number
  readonly onCatastrophicError?: (message: string) => void
}

/** A V8 isolate: its own heap and thread. */
export interface Isolate {
  readonly cpuTime: bigint
  readonly isDisposed: boolean
  compileScript(code: string, scriptInfo?: ScriptOrigin): Promise<Script>
  createContext(): Promise<Context>
  dispose(): void
  getHeapStatistics(): Promise<HeapStatistics>
}

/** A context (global object and built-ins) inside an isolate. */
export interface Context {
  eval(code: string, options?: ContextEvalOptions): Promise<unknown>
  evalClosure(code: string, args?: readonly Transferable[], options?: ContextEvalOptions): Promise<unknown>
  release(): void
}

/** A compiled script, runnable in any context of its isolate. */
export interface Script {
  run(context: Context, options?: ScriptRunOptions): Promise<unknown>
  release(): void
}

/** A handle to a value in another isolate. */
export interface Reference<T = unknown> {
  /** Phantom: the referenced value's type. */
  readonly __referenced?: T
  derefInto(): Dereference
  release(): void
  /** A property of the referenced object, as a reference of its own. */
  get<K extends keyof T>(property: K, options: { readonly reference: true }): Promise<Reference<T[K]>>
  /** Arguments are {@link Transferable}, or any copyable value under `arguments: { copy: true }`. */
  apply(receiver: unknown, args?: readonly unknown[], options?: ReferenceApplyOptions): Promise<unknown>
  applyIgnored(receiver: unknown, args?: readonly unknown[], options?: ReferenceApplyOptions): void
}

/** A reference that arrives in the target isolate as the value itself (opaque to the host). */
export type Dereference = object

/** The module namespace: the two constructors this engine calls. */
export interface IsolatedVm {
  readonly Isolate: new (options?: IsolateOptions) => Isolate
  readonly Reference: new <T>(value: T) => Reference<T>
}
