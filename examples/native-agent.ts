/**
 * A native agent: the model sees one schema per tool and sends a turn of tool calls.
 *
 * Shows a deployment (root context) with the file tools, an agent, a pre-execute policy that asks
 * a human before any write, an approval service that says yes once, a guard that keeps secrets
 * out of reach, and the timeout policy. One scripted model turn runs through `runToolCalls`:
 * reads overlap, writes run alone, and every failure comes back as text the model can act on.
 * Then the agent's durable session log is printed and replayed into UI cards.
 *
 * Run: node --no-node-snapshot --import tsx examples/native-agent.ts
 */
import { createContext, installTimeoutPolicy, replaySession, runToolCalls } from 'toolbox-codemode'
import type { ApprovalAnswer, ReplayCard, TurnCall } from 'toolbox-codemode'
import { clip, contentText, describeEvent, errorCode, heading, indent, isMain } from './format.ts'
import type { Print } from './format.ts'
import { createMemoryFs, fileTools } from './tools.ts'

/** One result as the model receives it. */
export interface TurnResultSummary {
  readonly callId: string
  readonly name: string
  readonly isError: boolean
  /** The error code (`INVALID_ARGS`, `DENIED`, ...) of a failure. */
  readonly code?: string
  /** The content text the model reads. */
  readonly text: string
}

/** What the example did, for tests and for the demo. */
export interface NativeAgentSummary {
  /** Tool names in the model-facing schemas. */
  readonly toolNames: readonly string[]
  /** Results in call order. */
  readonly results: readonly TurnResultSummary[]
  /** Every approval request, with the answer it got. */
  readonly approvals: readonly { readonly callId: string; readonly reason?: string; readonly answer: ApprovalAnswer }[]
  /** Session event types, in log order. */
  readonly sessionEvents: readonly string[]
  /** The cards a UI rebuilds from the session log alone. */
  readonly cards: readonly ReplayCard[]
  /** Paths in the file system after the turn. */
  readonly files: readonly string[]
}

/**
 * One model turn as a provider returns it: ids, names and the RAW argument text. Parsing the text
 * is the library's job (losslessly; a bad number or bad JSON becomes `INVALID_ARGS`).
 */
const TURN: readonly TurnCall[] = [
  { callId: 'call_1', name: 'list_files', argumentsText: '{}' },
  { callId: 'call_2', name: 'read_file', argumentsText: '{"path":"src/cart.ts"}' },
  { callId: 'call_3', name: 'read_file', argumentsText: '{"path":"src/tax.ts","offset":2,"limit":1}' },
  { callId: 'call_4', name: 'search', argumentsText: '{"pattern":"TODO"}' },
  { callId: 'call_5', name: 'write_file', argumentsText: '{"path":"TODO.md","content":"- apply discounts\\n- per-country rates\\n"}' },
  // A model mistake: `path` must be a string. The model gets the path and the expected type back.
  { callId: 'call_6', name: 'read_file', argumentsText: '{"path":42}' },
  { callId: 'call_7', name: 'read_file', argumentsText: '{"path":".env"}' },
  { callId: 'call_8', name: 'write_file', argumentsText: '{"path":"src/cart.ts","content":""}' },
  { callId: 'call_9', name: 'delete_file', argumentsText: '{"path":"README.md"}' },
]

function pathArgument(args: unknown): string | undefined {
  const path = (args as { path?: unknown } | null)?.path
  return typeof path === 'string' ? path : undefined
}

/** Runs the example; `print` receives the readable account (silent: `() => {}`). */
export async function main({ print = console.log as Print } = {}): Promise<NativeAgentSummary> {
  const fs = createMemoryFs()
  const approvals: { callId: string; reason?: string; answer: ApprovalAnswer }[] = []

  // The deployment. The approval service stands in for a human clicking "Allow once" — one time.
  using root = createContext({
    approval: {
      async request({ execution, reason }) {
        const answer: ApprovalAnswer = approvals.length === 0 ? 'allowed-once' : 'denied'
        approvals.push({ callId: execution.callId, ...(reason === undefined ? {} : { reason }), answer })
        return answer
      },
    },
  })
  for (const tool of fileTools(fs)) root.tools.register(tool)

  // Policy: writes need approval. A pre-execute listener may allow, deny or ask; it never rewrites arguments.
  root.on('tools/pre-execute', async (exec, next) =>
    exec.name === 'write_file' ? { kind: 'ask', reason: `write ${pathArgument(exec.arguments) ?? '?'}` } : next(),
  )
  // Guards run after policy and can only narrow: nothing can allow a call a guard denied.
  root.tools.guard((exec) => (pathArgument(exec.arguments)?.startsWith('.env') ? 'files holding secrets are off limits' : undefined))
  // Enforces each tool's `timeoutMs` (search has one) by aborting its signal.
  installTimeoutPolicy(root)

  const agent = root.agent('native-1')
  const toolNames = root.tools.schemas(agent).map((schema) => schema.name)

  heading(print, 'What the model sees')
  for (const schema of root.tools.schemas(agent)) print(`  ${schema.name}(${Object.keys(schema.parameters.properties ?? {}).join(', ')}): ${schema.description}`)

  heading(print, 'One model turn: results in call order')
  const results = await runToolCalls(agent.ctx.tools, TURN, { agent, signal: AbortSignal.timeout(10_000) })
  const summaries = results.map((result, i): TurnResultSummary => {
    const { callId, name } = TURN[i] as TurnCall
    const code = errorCode(result)
    return { callId, name, isError: result.isError, ...(code === undefined ? {} : { code }), text: contentText(result) }
  })
  for (const result of summaries) {
    print(`${result.callId} ${result.name}  ${result.isError ? `✗ ${result.code}` : '✓'}`)
    print(indent(clip(result.text, 300)))
  }

  heading(print, 'Approvals asked')
  for (const a of approvals) print(`  ${a.callId} "${a.reason ?? ''}" -> ${a.answer}`)

  // The session log is the durable record: arguments, content, error and meta, never the value.
  const events = agent.session.events
  heading(print, `Session log of ${agent.id} (${events.length} events)`)
  for (const event of events) print(`  ${describeEvent(event)}`)

  // A UI that reloads the session rebuilds its cards from the log and the tool definitions alone.
  const cards = replaySession(events, (name) => root.tools.get(name, agent))
  heading(print, 'Cards replayed from the log')
  for (const card of cards) {
    const result = card.result === undefined ? 'pending' : card.result.card
    print(`  ${card.callId} ${card.name}: call=${card.call.card} "${'title' in card.call ? card.call.title : ''}" result=${result}${card.isError ? ' (error)' : ''}`)
    if (card.result?.card === 'read') {
      for (const line of card.result.lines) print(`      ${String(line.number).padStart(3)} | ${line.text}`)
    }
    if (card.result?.card === 'search' && card.result.shape === 'matches') {
      for (const file of card.result.files) print(`      ${file.path}: lines ${file.matches.map((m) => m.line).join(', ')}`)
    }
  }

  await agent.session.close()
  return {
    toolNames,
    results: summaries,
    approvals,
    sessionEvents: events.map((event) => event.type),
    cards,
    files: [...fs.files.keys()].sort(),
  }
}

if (isMain(import.meta.url)) await main()
