/**
 * What the three provider examples share: the same deployment (the file tools, plus a report tool
 * whose closed schema lets OpenAI use strict mode) and the same scripted two-turn conversation,
 * so each example shows only what its provider needs.
 */
import { createContext } from 'toolbox-codemode'
import type { Agent, Context, ToolDefinition } from 'toolbox-codemode'
import { createMemoryFs, fileTools } from './tools.ts'
import type { MemoryFs } from './tools.ts'

/** The user's request in every example. */
export const TASK = 'Find the TODOs under src/, list them in TODO.md and submit a short report.'

/** One scripted tool call, provider-neutral: the examples turn these into each provider's shape. */
export interface ScriptedCall {
  readonly id: string
  /** The name as the provider sends it. */
  readonly name: string
  /** The argument JSON text as the model writes it. */
  readonly arguments: string
  /** The text under OpenAI strict mode, where every property is required (optionals sent as `null`). */
  readonly strictArguments?: string
}

/**
 * The model's two tool turns. Turn 1 reads (parallel-safe: they overlap); turn 2 writes (exclusive:
 * alone) and submits the report, which concludes the turn, so no third model call is made. The
 * report's `severity` is optional: under OpenAI strict mode the model must send it, as `null`, and the
 * adapter maps that `null` back to an absent key before the tool's schema sees it.
 */
export const SCRIPT: readonly (readonly ScriptedCall[])[] = [
  [
    { id: 'call_1', name: 'list_files', arguments: '{"prefix":"src/"}' },
    { id: 'call_2', name: 'read_file', arguments: '{"path":"src/cart.ts"}' },
    { id: 'call_3', name: 'read_file', arguments: '{"path":"src/tax.ts"}' },
  ],
  [
    { id: 'call_4', name: 'write_file', arguments: '{"path":"TODO.md","content":"- apply discounts (src/cart.ts)\\n- per-country rates (src/tax.ts)\\n"}' },
    {
      id: 'call_5',
      name: 'submit_report',
      arguments: '{"summary":"2 TODOs listed in TODO.md"}',
      strictArguments: '{"summary":"2 TODOs listed in TODO.md","severity":null}',
    },
  ],
]

/** A report the agent submitted. */
export interface Report {
  readonly summary: string
  readonly severity?: string
}

/**
 * Submits the final report and ends the turn. Its parameters are a closed object, so OpenAI gets
 * it with `strict: true` (and `severity` required but nullable).
 */
function reportTool(reports: Report[]): ToolDefinition {
  return {
    name: 'submit_report',
    description: 'Submit the final report of the task. Ends the turn.',
    parameters: {
      type: 'object',
      properties: {
        summary: { type: 'string', description: 'One line.' },
        severity: { type: 'string', enum: ['low', 'medium', 'high'] },
      },
      required: ['summary'],
      additionalProperties: false,
    },
    output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: String(value) }] },
    async execute(args, exec) {
      reports.push(args as Report)
      // Shown to the model with the results, after every tool output of the turn.
      exec.deferContext({ role: 'user', content: [{ type: 'text', text: 'The report reached the team channel.' }] })
      exec.concludeTurn()
      return 'report submitted'
    },
  }
}

/** A deployment with the file tools and the report tool, and one agent. */
export function providerDeployment(): { root: Context; agent: Agent; fs: MemoryFs; reports: Report[] } {
  const fs = createMemoryFs()
  const reports: Report[] = []
  const root = createContext()
  for (const tool of fileTools(fs)) root.tools.register(tool)
  root.tools.register(reportTool(reports))
  return { root, agent: root.agent('agent-1'), fs, reports }
}

/** What each provider example returns, for tests and for the demo. */
export interface ProviderAgentSummary {
  /** Model calls made: 2, since the report concluded the turn. */
  readonly modelCalls: number
  /** Tool names as the provider received them in the first request. */
  readonly toolNames: readonly string[]
  /** The session log: `<type> <callId>` in log order. */
  readonly sessionEvents: readonly string[]
  /** Reports submitted (the optional severity mapped back from null to absent). */
  readonly reports: readonly Report[]
  /** Files after the loop. */
  readonly files: readonly string[]
  /** Peak number of reads that ran at once. */
  readonly peakConcurrentReads: number
  /** The request bodies the provider SDK sent, parsed. */
  readonly requests: readonly unknown[]
}
