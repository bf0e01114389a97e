import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { generateSdk, renderRunCodeDescription } from '../../sdk-gen/index.ts'
import { representativeTools } from './fixtures.ts'

describe('renderRunCodeDescription', () => {
  it('renders the golden description: the guide, then the declarations in a ts block', () => {
    const sdk = generateSdk(representativeTools.filter((tool) => tool.name === 'my_tool'))
    expect(renderRunCodeDescription(sdk)).toBe(readFileSync(new URL('./golden/run-code-description.txt', import.meta.url), 'utf8'))
  })

  it('fences the declarations with more backticks than any run inside them', () => {
    const sdk = generateSdk([
      { name: 'x', description: 'Example:\n```\nx()\n```', parameters: { type: 'object', additionalProperties: false } },
    ])
    const description = renderRunCodeDescription(sdk)
    expect(description).toContain('\n````ts\n/** Any JSON value. */')
    expect(description.endsWith('}\n````\n')).toBe(true)
  })

  it('states the call budget it is given, in the guide before the declarations', () => {
    const sdk = generateSdk(representativeTools.filter((tool) => tool.name === 'my_tool'))
    const description = renderRunCodeDescription(sdk, { maxSubCalls: 40, maxSubCallsInFlight: 8 })
    const guideEnd = description.indexOf('\n\nAvailable tools:')
    expect(description.indexOf('at most 40 tool calls, at most 8 of them started and not yet finished at once')).toBeGreaterThan(0)
    expect(description.indexOf('at most 40 tool calls')).toBeLessThan(guideEnd)
    expect(description.slice(guideEnd)).toBe(renderRunCodeDescription(sdk).slice(renderRunCodeDescription(sdk).indexOf('\n\nAvailable tools:')))
  })
})
