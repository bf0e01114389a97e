/**
 * `npm run demo`: a walkthrough of the library in four acts — a native agent, Code Mode on QuickJS,
 * the same program on isolated-vm (when its native addon loads here), and hostile programs.
 * Every engine is disposed at the end of its act, so the process exits on its own.
 */
import { IsolatedVmUnavailableError } from 'toolbox-codemode/sandbox'
import * as codeMode from './code-mode.ts'
import type { CodeModeSummary } from './code-mode.ts'
import { heading, indent, isMain } from './format.ts'
import type { Print } from './format.ts'
import * as hostile from './hostile-programs.ts'
import * as nativeAgent from './native-agent.ts'

/** What the demo showed, act by act. `isolatedVm` is a reason string when the engine is unavailable. */
export interface DemoSummary {
  readonly native: nativeAgent.NativeAgentSummary
  readonly codeMode: CodeModeSummary
  readonly isolatedVm: CodeModeSummary | { readonly unavailable: string }
  readonly hostile: hostile.HostileSummary
  readonly elapsedMs: number
}

function act(print: Print, title: string, blurb: string): void {
  heading(print, title, '=')
  print(blurb)
}

export async function main({ print = console.log as Print } = {}): Promise<DemoSummary> {
  const started = performance.now()

  act(print, 'Act 1 — a native agent', 'Four file tools, a write-approval policy, a guard and the timeout policy; one model turn of nine calls.')
  const native = await nativeAgent.main({ print })

  act(print, 'Act 2 — Code Mode on QuickJS', 'The same tools; one preset sees them as a single run_code tool, another agent stays native.')
  const quickjs = await codeMode.main({ engine: 'quickjs', print })

  act(print, 'Act 3 — the same program on isolated-vm', 'One engine interface: only the engine changes.')
  let isolatedVm: DemoSummary['isolatedVm']
  try {
    // The account repeats Act 2 line for line, so only the differences are printed.
    isolatedVm = await codeMode.main({ engine: 'isolated-vm', print: () => {} })
    print(`result:    ${JSON.stringify(isolatedVm.result)}`)
    print(`sub-calls: ${isolatedVm.subCallIds.join(', ')}`)
    print(`same result as QuickJS: ${JSON.stringify(isolatedVm.result) === JSON.stringify(quickjs.result) ? 'yes' : 'NO'}`)
  } catch (error) {
    if (!(error instanceof IsolatedVmUnavailableError)) throw error
    isolatedVm = { unavailable: error.message }
    print(`skipped: isolated-vm is not available in this process:\n${indent(error.message)}`)
  }

  act(print, 'Act 4 — hostile programs', 'Each is stopped and named; the model reads why. The host carries on.')
  const attacks = await hostile.main({ print })

  const elapsedMs = Math.round(performance.now() - started)
  act(print, 'Summary', '')
  const failed = native.results.filter((r) => r.isError).map((r) => `${r.callId} ${r.code}`)
  print(`native turn:      ${native.results.length} calls, failures the model can act on: ${failed.join(', ')}`)
  print(`approvals:        ${native.approvals.map((a) => `${a.callId} ${a.answer}`).join(', ')}`)
  print(`code mode:        coder sees [${quickjs.codeAgentTools.join(', ')}], native sees [${quickjs.nativeAgentTools.join(', ')}]`)
  print(`program result:   ${JSON.stringify(quickjs.result)} via ${quickjs.subCallIds.length} sub-calls (${quickjs.peakConcurrentReads} reads at once)`)
  print(`live progress:    ${quickjs.progress.length} steps seen while it ran (starts, ends, console lines)`)
  print(`isolated-vm:      ${'unavailable' in isolatedVm ? 'skipped (not available here)' : `same result: ${JSON.stringify(isolatedVm.result) === JSON.stringify(quickjs.result)}`}`)
  const stopped = attacks.outcomes.filter((o) => o.code === 'CODE_RUN_FAILED' && o.text.includes(o.expect)).length
  print(`hostile programs: ${stopped}/${attacks.outcomes.length} stopped and named; next run after pollution saw ${JSON.stringify(attacks.pollution.nextRun)}`)
  print(`final run:        ${attacks.finalRun.isError ? 'FAILED' : `ok ${JSON.stringify(attacks.finalRun.result)}`}`)
  print(`elapsed:          ${elapsedMs} ms`)
  return { native, codeMode: quickjs, isolatedVm, hostile: attacks, elapsedMs }
}

if (isMain(import.meta.url)) await main()
