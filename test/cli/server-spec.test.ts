import { describe, expect, it } from 'vitest'
import { CliError } from '../../cli/args.ts'
import { parseServerSpec, splitCommand } from '../../cli/servers.ts'

describe('--mcp values', () => {
  it('splits words like a shell: quotes group, a backslash escapes, nothing expands', () => {
    expect(splitCommand(`npx -y "@scope/server name" 'a $HOME b' c\\ d "say \\"hi\\"" ''`)).toEqual([
      'npx',
      '-y',
      '@scope/server name',
      'a $HOME b',
      'c d',
      'say "hi"',
      '',
    ])
  })

  it('refuses an unclosed quote, naming it', () => {
    expect(() => splitCommand('node "server.js')).toThrow(CliError)
    expect(() => splitCommand('node "server.js')).toThrow(/a double quote is not closed/)
  })

  it('reads a prefix before "=" and leaves a plain command without one', () => {
    expect(parseServerSpec('fs=mcp-server-filesystem /tmp')).toMatchObject({ prefix: 'fs', command: 'mcp-server-filesystem', args: ['/tmp'] })
    expect(parseServerSpec('mcp-server-memory')).toMatchObject({ prefix: undefined, command: 'mcp-server-memory', args: [] })
    expect(parseServerSpec('node server.js --opt=1')).toMatchObject({ prefix: undefined, command: 'node', args: ['server.js', '--opt=1'] })
  })

  it('refuses a value that names no command', () => {
    expect(() => parseServerSpec('fs=')).toThrow(/names no command to start/)
  })
})
