import { describe, expect, it } from 'vitest'
import { createBrand } from '../../src/brand.ts'

describe('private-field brands', () => {
  it('knows what it marked, and nothing else: not primitives, heirs, Proxies or another brand', () => {
    const brand = createBrand()
    const other = createBrand()
    const marked = {}
    brand.mark(marked)
    let trapped = false
    const proxy = new Proxy(marked, {
      has() {
        trapped = true
        return true
      },
      getPrototypeOf() {
        trapped = true
        return null
      },
    })
    expect(brand.has(marked)).toBe(true)
    expect(other.has(marked)).toBe(false)
    expect(brand.has({})).toBe(false)
    expect(brand.has(Object.create(marked))).toBe(false)
    expect(brand.has(proxy)).toBe(false)
    expect(trapped).toBe(false)
    for (const primitive of [undefined, null, 0, 'x', true, Symbol('s'), 1n]) expect(brand.has(primitive)).toBe(false)
  })

  it('leaves no trace that reflection can see', () => {
    const brand = createBrand()
    const marked = { a: 1 }
    brand.mark(marked)
    Object.freeze(marked)
    expect(Reflect.ownKeys(marked)).toEqual(['a'])
    expect(JSON.stringify(marked)).toBe('{"a":1}')
    expect(structuredClone(marked)).toEqual({ a: 1 })
  })
})
