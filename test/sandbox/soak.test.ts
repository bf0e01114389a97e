import { describe, expect, it } from 'vitest'
import { soak } from '../soak/soak.ts'
import { enginesUnderTest } from './engines.ts'

/**
 * The soak run (test/soak/soak.ts) at a reduced count: mixed programs from several agents at once,
 * then nothing left behind. `npm run soak` runs it at full size and reports memory too.
 */
describe.each(enginesUnderTest())('soak on $name', (engineUnderTest) => {
  it('ends every program with a structured result, balances every session log and leaves no handle behind', async () => {
    const report = await soak(() => engineUnderTest.create(), { runs: 120, agents: 6 })
    expect(report.problems).toEqual([])
    expect(report.byEnding.ok).toBeGreaterThan(0)
    expect(report.byEnding['fails:CODE_RUN_FAILED']).toBeGreaterThan(0)
    expect(report.byEnding['fails:ABORTED']).toBeGreaterThan(0)
  }, 240_000)
})
