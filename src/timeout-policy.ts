import { ToolErrorCode } from './errors.ts'
import type { Context } from './context.ts'
import type { ToolExecutionResult } from './execution.ts'
import { dispatchedDefinition } from './pipeline.ts'
import { failureResult } from './results.ts'

/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Install the timeout policy on `ctx`: a `tools/execute` wrapper that enforces each definition's
 * `timeoutMs`. For the wrapper's lifetime the signal is the caller's fused with a deadline; the
 * previous signal is restored afterwards. The body is still awaited to quiescence (it is never
 * abandoned); an outcome reached after the deadline fired becomes `TOOL_TIMEOUT`.
 * Scope-filtered like any listener: installed on an agent's context, it covers that agent only.
 * @returns the exact disposer that removes the policy.
 */
export function installTimeoutPolicy(ctx: Context): () => void {
  return ctx.on('tools/execute', async (exec, next): Promise<ToolExecutionResult> => {
    // The definition that actually runs (the caller's view, snapshotted at start), not the name
    // re-resolved from this policy's own scope.
    const timeoutMs = (dispatchedDefinition(exec) ?? ctx.tools.get(exec.name, exec.agent ?? ctx))?.timeoutMs
    if (timeoutMs === undefined) return next()
    const deadline = new AbortController()
    const previous = exec.signal
    let fired = false
    const timer = setTimeout(
      () => {
        // A call its caller already cancelled is not timed out on top: it reads as cancelled.
        if (previous.aborted) return
        fired = true
        deadline.abort(new DOMException(`tool "${exec.name}" timed out after ${timeoutMs} ms`, 'TimeoutError'))
      },
      // Node fires a longer timer at once (with a warning); the longest it takes stands in for it.
      Math.min(timeoutMs, MAX_TIMER_MS),
    )
    exec.signal = AbortSignal.any([previous, deadline.signal])
    try {
      const result = await next()
      if (!fired) return result
      return failureResult(ToolErrorCode.TOOL_TIMEOUT, `Tool "${exec.name}" timed out after ${timeoutMs} ms`, {
        name: 'ToolTimeoutError',
      })
    } finally {
      clearTimeout(timer)
      exec.signal = previous
    }
  })
}
