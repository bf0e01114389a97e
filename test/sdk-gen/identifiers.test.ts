import { describe, expect, it } from 'vitest'
import { assignBindings, isSafeBinding } from '../../sdk-gen/index.ts'

describe('assignBindings', () => {
  it('keeps a name that is already a safe identifier', () => {
    expect(assignBindings(['read_file', '$x', 'Find2'])).toEqual([
      { binding: 'read_file', name: 'read_file' },
      { binding: '$x', name: '$x' },
      { binding: 'Find2', name: 'Find2' },
    ])
  })

  it('replaces characters that cannot appear in an identifier with underscores', () => {
    expect(assignBindings(['my-tool', 'fs.read', 'émoji🙂'])).toEqual([
      { binding: 'my_tool', name: 'my-tool' },
      { binding: 'fs_read', name: 'fs.read' },
      { binding: '_moji__', name: 'émoji🙂' },
    ])
  })

  it('prefixes a name that starts with a digit', () => {
    expect(assignBindings(['2fa'])).toEqual([{ binding: '_2fa', name: '2fa' }])
  })

  it('suffixes reserved words and names every object already has', () => {
    expect(assignBindings(['delete', 'await', '__proto__', 'constructor', 'toString', 'then', 'toJSON']).map((b) => b.binding)).toEqual([
      'delete_',
      'await_',
      '__proto___',
      'constructor_',
      'toString_',
      'then_',
      // JSON.stringify(tools) would call a `toJSON`.
      'toJSON_',
    ])
  })

  it('numbers a sanitized name that collides with an existing one, whatever the order', () => {
    expect(assignBindings(['my-tool', 'my_tool']).map((b) => b.binding)).toEqual(['my_tool_2', 'my_tool'])
    expect(assignBindings(['my_tool', 'my-tool']).map((b) => b.binding)).toEqual(['my_tool', 'my_tool_2'])
  })

  it('keeps counting until the suffixed name is free', () => {
    expect(assignBindings(['a-b', 'a.b', 'a_b', 'a_b_2']).map((b) => b.binding)).toEqual(['a_b_3', 'a_b_4', 'a_b', 'a_b_2'])
  })

  it('never assigns the same binding twice', () => {
    const names = ['x', 'x-', 'x.', 'x_', 'x__', 'x_2', '-x', '_x', 'x_2_', 'x-2']
    const bindings = assignBindings(names).map((b) => b.binding)
    expect(new Set(bindings).size).toBe(names.length)
    for (const binding of bindings) expect(isSafeBinding(binding)).toBe(true)
  })
})
