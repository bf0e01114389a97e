/**
 * The description of the `run_code` tool: how to write a program, then the SDK it may call.
 */

import type { GeneratedSdk } from './declarations.ts'

const GUIDE = `Run a JavaScript program that calls the tools declared below, and get back the value it returns.

How to write the program:
- The code is the body of an async function: use \`await\` at the top level and \`return\` the result. The returned value must be JSON (objects, arrays, strings, numbers, booleans, null); returning nothing gives null.
- Call a tool with \`await tools.name(args)\`. It resolves to the tool's result value; a failed call throws an Error whose message says why, so use try/catch where you can recover.
- Start independent calls together: \`const [a, b] = await Promise.all([tools.x(...), tools.y(...)])\`.
- \`console.log\` output is captured and returned beside the result.
- TypeScript type annotations are allowed; \`enum\` and \`namespace\` are not. There is no \`import\`, \`require\`, file system or network: only \`tools\` and standard JavaScript built-ins.
- Process data inside the program and return only what you need.`

/** How many tool calls one program may make, in all and at once (the transport's limits). */
export interface CallBudget {
  readonly maxSubCalls: number
  readonly maxSubCallsInFlight: number
}

/**
 * The `run_code` tool's description for `sdk`: a short guide to writing the program (async
 * function body, top-level await and return, `await tools.x(args)`, `Promise.all`, captured
 * console, a JSON result, and with `budget` how many calls it may make) followed by the
 * declarations in a fenced block.
 */
export function renderRunCodeDescription(sdk: GeneratedSdk, budget?: CallBudget): string {
  // A fence longer than any backtick run in the declarations (author text may hold one) stays closed.
  const longestRun = Math.max(0, ...(sdk.declarations.match(/`+/g) ?? []).map((run) => run.length))
  const fence = '`'.repeat(Math.max(3, longestRun + 1))
  const calls =
    budget === undefined
      ? ''
      : `\n- A program may make at most ${budget.maxSubCalls} tool calls, at most ${budget.maxSubCallsInFlight} of them started and not yet finished at once: batch a long list into Promise.all groups of that size.`
  return `${GUIDE}${calls}\n\nAvailable tools:\n${fence}ts\n${sdk.declarations}${fence}\n`
}
