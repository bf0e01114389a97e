import { createRequire } from 'node:module'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { inCI } from './engines.ts'

/**
 * The engine declares the part of isolated-vm it uses (sandbox/isolated-vm/isolated-vm-types.ts)
 * so that neither the build nor a consumer's type check needs the optional package. This checks
 * the installed package against those declarations, so that they cannot drift from it.
 */

const root = join(import.meta.dirname, '..', '..')

function installed(): boolean {
  try {
    createRequire(import.meta.url).resolve('isolated-vm')
    return true
  } catch {
    return false
  }
}

const CONFORMANCE = `
import type * as Real from 'isolated-vm'
import type { Context, HeapStatistics, Isolate, IsolatedVm, Reference, Script } from './sandbox/isolated-vm/isolated-vm-types.ts'
declare const real: typeof Real
export const ivm: IsolatedVm = real
declare const isolate: Real.Isolate
export const isolate2: Isolate = isolate
declare const context: Real.Context
export const context2: Context = context
declare const script: Real.Script
export const script2: Script = script
declare const reference: Real.Reference<{ f: (n: number) => void }>
export const reference2: Reference<{ f: (n: number) => void }> = reference
declare const heap: Real.HeapStatistics
export const heap2: HeapStatistics = heap
`

describe.skipIf(!installed() && !inCI())('the isolated-vm declarations the engine uses', () => {
  it('are satisfied by the installed isolated-vm package', () => {
    const file = join(root, 'isolated-vm-conformance.ts')
    const options: ts.CompilerOptions = {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      types: [],
      skipLibCheck: true,
    }
    const host = ts.createCompilerHost(options)
    const readFile = host.readFile.bind(host)
    host.readFile = (name) => (name === file ? CONFORMANCE : readFile(name))
    const fileExists = host.fileExists.bind(host)
    host.fileExists = (name) => name === file || fileExists(name)
    const getSourceFile = host.getSourceFile.bind(host)
    host.getSourceFile = (name, version) => (name === file ? ts.createSourceFile(name, CONFORMANCE, version) : getSourceFile(name, version))
    const program = ts.createProgram([file], options, host)
    const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    expect(errors).toEqual([])
  })
})
