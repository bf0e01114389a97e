import { runInContext, createContext as createVmContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { guestRuntimeSource } from '../../sandbox/guest-runtime.ts'

/**
 * The prelude alone, against stub host functions (node:vm is only a harness here, not a sandbox):
 * what it hands the engine through the raw globals of its contract.
 */
function preludeWithStubs(maxLogChars: number) {
  const logged: [string, string, boolean][] = []
  const context = createVmContext({
    __codemode_call: () => new Promise(() => {}),
    __codemode_log: (level: string, text: string, over: boolean) => void logged.push([level, text, over]),
  })
  const api = runInContext(guestRuntimeSource(), context) as { init(toolsJson: string, maxLogChars: number): void }
  api.init('[]', maxLogChars)
  return { logged, evaluate: (code: string) => runInContext(code, context) }
}

describe('the prelude console', () => {
  it('sends lines while they fit the log limit, counting each line break', () => {
    const { logged, evaluate } = preludeWithStubs(12)
    evaluate("console.log('12345'); console.warn('a', 1)")
    expect(logged).toEqual([
      ['log', '12345', false],
      ['warn', 'a 1', false],
    ])
  })

  it('never sends a line past the limit: the host hears only that it broke, then nothing more', () => {
    const { logged, evaluate } = preludeWithStubs(100)
    evaluate("console.log('fits'); let s = 'x'.repeat(1 << 20); for (let i = 0; i < 4; i++) s = s + s; console.error(s); console.log('after')")
    expect(logged).toEqual([
      ['log', 'fits', false],
      ['error', '', true],
    ])
  })
})
