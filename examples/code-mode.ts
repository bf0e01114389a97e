/**
 * Code Mode beside native tools, in one process.
 *
 * One deployment holds the file tools. Agents of the `coders` preset see them in Code Mode: a
 * single `run_code` tool whose description embeds a TypeScript SDK of exactly the tools they may
 * use. Another agent keeps the native schemas. The coder's model writes one program that reads
 * three files at once with `Promise.all`, processes them inside the sandbox, and returns only the
 * answer — one round trip instead of four, and no file contents in the model's context.
 *
 * Every `tools.x()` in the program is an ordinary call through the same pipeline (policy, guards,
 * timeouts, scheduling), with the id `<run_code callId>:code:<n>`, and lands in the session log.
 *
 * Run: node --no-node-snapshot --import tsx examples/code-mode.ts [quickjs|isolated-vm]
 */
import { createContext, installTimeoutPolicy, runToolCalls } from 'toolbox-codemode'
import type { JsonValue } from 'toolbox-codemode'
import { createRunCode } from 'toolbox-codemode/sandbox'
import type { LogEntry, RunCodeValue, SandboxEngine } from 'toolbox-codemode/sandbox'
import { createEngine, engineName } from './engines.ts'
import type { EngineName } from './engines.ts'
import { clip, contentText, describeEvent, errorCode, heading, indent, isMain } from './format.ts'
import type { Print } from './format.ts'
import { createMemoryFs, fileTools } from './tools.ts'

/** What the example did, for tests and for the demo. */
export interface CodeModeSummary {
  readonly engine: string
  /** Tool names the Code Mode agent's model sees: only `run_code`. */
  readonly codeAgentTools: readonly string[]
  /** `run_code`'s description: a guide plus the SDK declarations. */
  readonly runCodeDescription: string
  /** Tool names the native agent's model sees. */
  readonly nativeAgentTools: readonly string[]
  /** What the program returned, and what it logged. */
  readonly result: JsonValue
  readonly logs: readonly LogEntry[]
  /** The sub-call ids, in dispatch order (`call_1:code:1`, ...). */
  readonly subCallIds: readonly string[]
  /** The coder's session, one `type [id]` string per event. */
  readonly sessionEvents: readonly string[]
  /** Most file reads in flight at once: above 1 means the program's reads overlapped. */
  readonly peakConcurrentReads: number
  /** The coder's model calling `read_file` directly, which Code Mode refuses. */
  readonly directCall: { readonly code: string | undefined; readonly text: string }
  /** The native agent calling `read_file` directly, which works. */
  readonly nativeCall: { readonly isError: boolean; readonly text: string }
  /** What a live observer saw while the program ran (`tools/code-progress`), one line per step. */
  readonly progress: readonly string[]
}

/** The program the coder's model writes. TypeScript annotations are fine: they are stripped first. */
export const PROGRAM = `// Sales of three quarters: read them together, total per region, return only the answer.
const paths: string[] = await tools.list_files({ prefix: 'data/' })
const files = await Promise.all(paths.map((path) => tools.read_file({ path })))
const totals: Record<string, number> = {}
for (const file of files) {
  for (const row of file.text.split('\\n').slice(1)) {
    const [region, amount] = row.split(',')
    totals[region] = (totals[region] ?? 0) + Number(amount)
  }
}
const [best] = Object.entries(totals).sort((a, b) => b[1] - a[1])
console.log(\`read \${files.length} files, \${Object.keys(totals).length} regions\`)
return { quarters: files.length, totals, best: { region: best[0], amount: best[1] } }`

/** Runs the example on `engine` (default QuickJS) and disposes it at the end. */
export async function main({ engine: name = 'quickjs' as EngineName, print = console.log as Print } = {}): Promise<CodeModeSummary> {
  // The engine owns worker threads or isolates: `await using` disposes it when the example is done.
  await using engine = await createEngine(name)
  return await runWith(engine, print)
}

async function runWith(engine: SandboxEngine, print: Print): Promise<CodeModeSummary> {
  const fs = createMemoryFs()
  // The deployment stays native by default; it only knows HOW to run code (the transport).
  using root = createContext({
    tools: { codeMode: createRunCode({ engine, limits: { cpuTimeMs: 1_000, wallTimeMs: 10_000 } }) },
  })
  for (const tool of fileTools(fs)) root.tools.register(tool)
  installTimeoutPolicy(root)

  // A preset for coding agents: Code Mode, and no writes. Its SDK holds only what it can see.
  const coders = root.scope('coders')
  coders.tools.presentAs('code')
  coders.tools.restrict({ deny: ['write_file'] })
  const coder = coders.agent('coder-1')
  const native = root.agent('native-1')

  heading(print, `What each model sees (engine: ${engine.name})`)
  const codeSchemas = root.tools.schemas(coder)
  const nativeSchemas = root.tools.schemas(native)
  print(`native-1: ${nativeSchemas.map((s) => s.name).join(', ')}`)
  print(`coder-1:  ${codeSchemas.map((s) => s.name).join(', ')} — its description:`)
  const runCodeDescription = codeSchemas[0]?.description ?? ''
  print(indent(runCodeDescription, '  │ '))

  // The coder's model answers with a program, and (by mistake) one direct call of a native tool.
  heading(print, 'The coder runs a program')
  print(indent(PROGRAM, '  > '))
  // A UI follows the run live: sub-calls as they start and settle, console lines as written. The
  // listener is the coder's own, so it sees the coder's runs only; the session log is unchanged.
  const progress: string[] = []
  const stopWatching = coder.ctx.on('tools/code-progress', (run, step) => {
    const line =
      step.type === 'log'
        ? `console.${step.level}: ${step.text}`
        : step.type === 'call-start'
          ? `▸ ${step.subCallId} ${step.name}(${JSON.stringify(step.arguments)})`
          : `${step.isError ? '✗' : '✓'} ${step.subCallId} ${step.name}${step.error === undefined ? '' : `: ${step.error.code}`}`
    progress.push(line)
    print(`  live ${run.callId} ${line}`)
  })
  const [run, direct] = await runToolCalls(
    coder.ctx.tools,
    [
      { callId: 'call_1', name: 'run_code', argumentsText: JSON.stringify({ description: 'Total sales per region', code: PROGRAM }) },
      { callId: 'call_2', name: 'read_file', argumentsText: '{"path":"README.md"}' },
    ],
    { agent: coder, signal: AbortSignal.timeout(20_000) },
  )
  stopWatching()
  if (run === undefined || direct === undefined) throw new Error('runToolCalls returned fewer results than calls')
  if (run.isError) throw new Error(`the program failed: ${run.error.message}`)
  const { result, logs } = run.value as unknown as RunCodeValue
  print('')
  print(`result: ${JSON.stringify(result)}`)
  print(`logs:   ${JSON.stringify(logs)}`)
  print(`reads in flight at once, at most: ${fs.peakConcurrentReads}`)
  print('what the model reads:')
  print(indent(contentText(run)))
  print(`\ncall_2 read_file (direct): ✗ ${errorCode(direct)}`)
  print(indent(contentText(direct)))

  const events = coder.session.events
  heading(print, `Session log of ${coder.id}`)
  for (const event of events) print(`  ${describeEvent(event)}`)

  // The native agent, in the same process and deployment, calls read_file as usual.
  heading(print, 'Meanwhile the native agent calls read_file directly')
  const [nativeRead] = await runToolCalls(native.ctx.tools, [{ callId: 'n_1', name: 'read_file', argumentsText: '{"path":"README.md","limit":1}' }], {
    agent: native,
    signal: AbortSignal.timeout(5_000),
  })
  if (nativeRead === undefined) throw new Error('no result')
  print(indent(clip(contentText(nativeRead))))

  return {
    engine: engine.name,
    codeAgentTools: codeSchemas.map((s) => s.name),
    runCodeDescription,
    nativeAgentTools: nativeSchemas.map((s) => s.name),
    result,
    logs,
    subCallIds: events.flatMap((event) => (event.type === 'tool/code-dispatch' ? [event.subCallId] : [])),
    sessionEvents: events.map((event) => ('subCallId' in event ? `${event.type} ${event.subCallId}` : `${event.type} ${event.callId}`)),
    peakConcurrentReads: fs.peakConcurrentReads,
    progress,
    directCall: { code: errorCode(direct), text: contentText(direct) },
    nativeCall: { isError: nativeRead.isError, text: contentText(nativeRead) },
  }
}

if (isMain(import.meta.url)) await main({ engine: engineName(process.argv[2]) })
