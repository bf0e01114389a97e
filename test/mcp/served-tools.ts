/**
 * Native tools a served view holds in the `serve` tests: a structured adder, a waiter that notes
 * its cancellation, and a tool that always fails. Written with `defineTool`, as a user would.
 */

import { defineTool } from '../../src/tool.ts'
import type { ToolDefinition } from '../../src/tool.ts'

/** What the waiter saw. */
export interface WaitLog {
  readonly aborted: string[]
}

/** The three tools, sharing `log`. */
export function servedTools(log: WaitLog): ToolDefinition[] {
  return [
    defineTool({
      name: 'add',
      description: 'Add two integers.',
      parameters: { a: { type: 'integer', required: true }, b: { type: 'integer', required: true } },
      output: {
        schema: { type: 'object', properties: { sum: { type: 'integer', required: true } }, additionalProperties: false },
        render: (_args, value) => [{ type: 'text', text: `sum ${value.sum}` }],
      },
      isConcurrencySafe: () => true,
      execute: ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: 'wait',
      description: 'Wait until cancelled or ms pass.',
      parameters: { ms: { type: 'integer', required: true } },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: ({ ms }, exec) =>
        new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => resolve('waited'), ms)
          exec.signal.addEventListener('abort', () => {
            clearTimeout(timer)
            log.aborted.push('wait')
            reject(exec.signal.reason)
          })
        }),
    }),
    defineTool({
      name: 'boom',
      description: 'Always fails.',
      parameters: {},
      output: { schema: { type: 'null' }, render: () => [] },
      execute: () => {
        throw new Error('boom went the tool')
      },
    }),
  ]
}
