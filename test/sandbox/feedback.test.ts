import { describe, expect, it } from 'vitest'
import {
  closestNames,
  editDistance,
  MAX_CANDIDATES,
  MAX_COMPARISONS_PER_TURN,
  MAX_QUOTED_LINE_CHARS,
  nameWords,
  notJsonHint,
  pendingCallsNote,
  quoteLine,
  unknownGlobalHint,
  unknownToolHint,
} from '../../sandbox/feedback.ts'
import { spellingComparisons } from '../../src/spelling.ts'

const TOOLS = ['read_file', 'write_file', 'list_directory', 'search_files', 'fetch_url', 'create_entities', 'read_graph', 'get_file_info', 'move_file', 'directory_tree']

describe('closestNames', () => {
  it('finds a tool written in another casing or with other separators', () => {
    expect(closestNames('readFile', TOOLS)).toEqual(['read_file'])
    expect(closestNames('ReadGraph', TOOLS)).toEqual(['read_graph'])
    expect(closestNames('write-file', TOOLS)).toEqual(['write_file'])
  })

  it('finds a misspelled tool, a swap of two letters counting as one edit', () => {
    expect(closestNames('readFlie', TOOLS)).toEqual(['read_file'])
    expect(closestNames('serch_files', TOOLS)).toEqual(['search_files'])
  })

  it('names only near spellings when there is one, not every tool sharing a word', () => {
    expect(closestNames('writeFile', TOOLS)).toEqual(['write_file'])
  })

  it('finds tools by a shared prefix or shared words when no spelling is near', () => {
    expect(closestNames('read', TOOLS)).toEqual(['read_file', 'read_graph'])
    expect(closestNames('listDir', TOOLS)).toEqual(['list_directory', 'directory_tree'])
  })

  it('finds tools about the same thing for the Node and browser names models reach for', () => {
    expect(closestNames('fs', TOOLS)).toEqual(['read_file', 'write_file', 'list_directory'])
    expect(closestNames('fetch', TOOLS)).toEqual(['fetch_url'])
  })

  it('names nothing for a name unlike every tool, and never the name itself', () => {
    expect(closestNames('foo', TOOLS)).toEqual([])
    expect(closestNames('require', TOOLS)).toEqual([])
    expect(closestNames('read_file', ['read_file'])).toEqual([])
  })

  it('suggests for a name of one or two letters only the same letters in another case', () => {
    expect(closestNames('x', ['y', 'a_b', 'X'])).toEqual(['X'])
    expect(closestNames('ab', ['ac', 'AB'])).toEqual(['AB'])
  })

  it('returns at most max names, closest first', () => {
    expect(closestNames('readFile', ['readd_filee', 'read_file', 'read_fil'], 2)).toEqual(['read_file', 'read_fil'])
    expect(closestNames('readFile', ['readd_filee', 'read_file'], 1)).toEqual(['read_file'])
  })

  it('compares only the first MAX_CANDIDATES names of a huge tool set', async () => {
    const filler = Array.from({ length: MAX_CANDIDATES }, (_, i) => `zz${i}`)
    expect(closestNames('readFile', ['read_file', ...filler])).toEqual(['read_file'])
    // The next turn, so that the per-message budget is whole again: the cap per lookup is what stops it.
    await Promise.resolve()
    expect(closestNames('readFile', [...filler, 'read_file'])).toEqual([])
  })

  it('compares at most MAX_COMPARISONS_PER_TURN names over every hint of one message', () => {
    const tools = Array.from({ length: 5_000 }, (_, i) => `mcp_server_${i % 50}_read_file_contents_${i}`)
    const before = spellingComparisons()
    // A refusal formats up to ten hints, each for another name, in one synchronous turn.
    for (let i = 0; i < 10; i++) unknownGlobalHint(`readFileContents${i}`, tools)
    const compared = spellingComparisons() - before
    expect(compared).toBeGreaterThan(0)
    expect(compared).toBeLessThanOrEqual(MAX_COMPARISONS_PER_TURN)
  })

  it('answers a name asked again within a message without comparing again', () => {
    const tools = Array.from({ length: 40 }, (_, i) => `tool_${i}`).concat('read_file')
    const first = closestNames('readFile', tools)
    const before = spellingComparisons()
    expect(closestNames('readFile', tools)).toEqual(first)
    expect(unknownToolHint('readFile', tools)).toContain('Did you mean `tools.read_file`?')
    expect(spellingComparisons() - before).toBe(0)
  })

  it('gives the next message its own budget', async () => {
    const tools = Array.from({ length: MAX_COMPARISONS_PER_TURN }, (_, i) => `zz${i}`)
    closestNames('spent', tools)
    expect(closestNames('readFile', ['read_file'])).toEqual([])
    await Promise.resolve()
    expect(closestNames('readFile', ['read_file'])).toEqual(['read_file'])
  })

  it('compares every tool of a set of tens for each of ten hints in a message', () => {
    const tools = [...TOOLS, ...Array.from({ length: 30 }, (_, i) => `other_tool_${i}`)]
    const before = spellingComparisons()
    const hints = ['readFlie', 'writeFile', 'listDirectory', 'serch_files', 'fetchUrl', 'createEntities', 'readGraph', 'getFileInfo', 'moveFile', 'directoryTree']
    const found = hints.map((name) => closestNames(name, tools, 1)[0])
    expect(found).toEqual(TOOLS)
    expect(spellingComparisons() - before).toBe(hints.length * tools.length)
  })

  it('sees a name list changed in place since an earlier message prepared it', async () => {
    const tools = ['zz_top', 'read_file']
    expect(closestNames('readFile', tools)).toEqual(['read_file'])
    await Promise.resolve()
    tools[1] = 'write_file'
    expect(closestNames('writeFile', tools)).toEqual(['write_file'])
  })

  it('does not take a name Object.prototype has for a related word', () => {
    expect(closestNames('constructor', TOOLS)).toEqual([])
    expect(closestNames('toString', ['to_string'])).toEqual(['to_string'])
  })

  it('splits identifiers into lower-case words at separators and case boundaries', () => {
    expect(nameWords('readFileSync')).toEqual(['read', 'file', 'sync'])
    expect(nameWords('HTTPServer_v2')).toEqual(['http', 'server', 'v', '2'])
    expect(nameWords('list_dir-all')).toEqual(['list', 'dir', 'all'])
  })

  it('counts edits and stops early past the limit', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(editDistance('abcd', 'abdc')).toBe(1)
    expect(editDistance('abcdefgh', 'zzzzzzzz', 2)).toBe(3)
    expect(editDistance('a', 'abcdef', 2)).toBe(3)
  })
})

describe('quoteLine', () => {
  it('quotes the line with its number and a caret under the column', () => {
    expect(quoteLine('const a = 1\nconst t = fs.readFileSync("a")\n', 2, 11)).toBe('  2 | const t = fs.readFileSync("a")\n    |           ^')
  })

  it('keeps tabs under the caret so it lines up however tabs are shown', () => {
    expect(quoteLine('\tx(\t1)', 1, 5)).toBe('  1 | \tx(\t1)\n    | \t  \t^')
  })

  it('quotes a line without a caret when the column is unknown, and nothing for a line that does not exist', () => {
    expect(quoteLine('a\nb', 2)).toBe('  2 | b')
    expect(quoteLine('a\nb', 3, 1)).toBeUndefined()
    expect(quoteLine('a', 0, 1)).toBeUndefined()
  })

  it('drops a carriage return at the end of the line', () => {
    expect(quoteLine('a\r\nbad()\r\n', 2, 1)).toBe('  2 | bad()\n    | ^')
  })

  it('shows a window around the column of a long line, marked where it is cut', () => {
    const line = `${'x'.repeat(5_000)}BAD${'y'.repeat(5_000)}`
    const quoted = quoteLine(line, 1, 5_001) as string
    const [text, caret] = quoted.split('\n') as [string, string]
    expect(text.length).toBeLessThan(MAX_QUOTED_LINE_CHARS + 20)
    expect(text).toMatch(/^ {2}1 \| \.\.\.x+BADy+\.\.\.$/)
    expect(caret.indexOf('^')).toBe(text.indexOf('BAD'))
  })

  it('clamps a caret past the end of the line to the end', () => {
    expect(quoteLine('abc', 1, 99)).toBe('  1 | abc\n    |    ^')
  })
})

describe('hints', () => {
  it('an unknown global names the closest tools and the surface a program has', () => {
    const hint = unknownGlobalHint('fs', TOOLS)
    expect(hint).toContain('Did you mean `tools.read_file`, `tools.write_file` or `tools.list_directory`?')
    expect(hint).toContain('A program has `tools` (read_file, write_file')
    expect(hint).toContain('`console` and the JavaScript built-ins (JSON, Math')
  })

  it('an unknown global says why modules, timers and Node globals are not there', () => {
    expect(unknownGlobalHint('require', TOOLS)).toMatch(/^A program cannot load modules: it reaches the outside world only through `tools`\./)
    expect(unknownGlobalHint('setTimeout', TOOLS)).toContain('A program has no timers')
    expect(unknownGlobalHint('process', [])).toContain('`process` is a Node or browser global')
    expect(unknownGlobalHint('process', [])).toContain('A program has `tools` (none)')
  })

  it('an unknown global the program assigns to is one it forgot to declare', () => {
    expect(unknownGlobalHint('total', TOOLS, { assigned: true })).toBe(
      '`total` is assigned but never declared, which strict mode (every program\'s) refuses: declare it first, `let total = ...`.',
    )
  })

  it('an unknown tool names the closest tools, then every tool there is', () => {
    expect(unknownToolHint('readFile', TOOLS)).toBe(`Did you mean \`tools.read_file\`? Available tools: ${TOOLS.join(', ')}.`)
    expect(unknownToolHint('zzz', ['a_b'])).toBe('Available tools: a_b.')
  })

  it('lists a huge tool set by its first names and a count', () => {
    const many = Array.from({ length: 500 }, (_, i) => `t${i}`)
    const hint = unknownToolHint('nothing_like_it', many)
    expect(hint).toContain('t29 (and 470 more)')
    expect(hint.length).toBeLessThan(400)
  })

  it('a pending-calls note names each tool once with its count, and the likely cause', () => {
    expect(pendingCallsNote(['write_file', 'write_file', 'fetch_url'], 'returned')).toBe(
      '3 tool calls were still running when the program returned: tools.write_file (2 calls), tools.fetch_url. They were signalled to stop and their results discarded, but they may already have taken effect: check before repeating them. Did you forget `await`?',
    )
    expect(pendingCallsNote(['slow'], 'failed')).toBe(
      '1 tool call was still running when the program failed: tools.slow. It was signalled to stop and its result discarded, but it may already have taken effect: check before repeating it. A call that is not awaited, or one a `Promise.all` left running when another failed, is not waited for.',
    )
  })

  it('names what to send instead of each value that is not JSON', () => {
    expect(notJsonHint('a Map (not JSON) at $.m')).toBe('Only JSON crosses: send a Map as `Object.fromEntries(map)`.')
    expect(notJsonHint('a function at $')).toBe('Only JSON crosses: a function is not data: did you mean to call it (and `await` it)?')
    expect(notJsonHint('NaN at $.n')).toBe('Only JSON crosses: JSON has no NaN, Infinity or -0: send `null` or a string.')
    expect(notJsonHint('a class instance (only plain objects are JSON) at $')).toContain('into a plain object')
    expect(notJsonHint('a WeakMap (not JSON) at $')).toBeUndefined()
  })

  it('clips a giant name it echoes', () => {
    const hint = unknownToolHint('x'.repeat(1e6), ['a'])
    expect(hint.length).toBeLessThan(100)
    expect(pendingCallsNote(['y'.repeat(1e6)], 'returned').length).toBeLessThan(300)
  })
})
