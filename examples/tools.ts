/**
 * The tools every example shares: a tiny in-memory file system and four tools over it, written with
 * `defineTool` so their argument and value types come from their schemas.
 *
 * - `list_files`  paths under a prefix                    (concurrency-safe)
 * - `read_file`   a window of numbered lines              (concurrency-safe, shows a 'read' card)
 * - `search`      lines matching a substring              (concurrency-safe, shows a 'search' card)
 * - `write_file`  create or replace a file                (exclusive: runs alone in a turn)
 */
import { defineTool } from 'toolbox-codemode'
import type { ContentBlock, ToolDefinition } from 'toolbox-codemode'

/** A file system held in a Map, with a simulated disk latency so parallel reads can be seen. */
export interface MemoryFs {
  readonly files: Map<string, string>
  /** How many reads ran at once, at most: shows whether calls overlapped. */
  readonly peakConcurrentReads: number
  read(path: string, signal: AbortSignal): Promise<string>
}

/** A little project: sources with TODOs, three quarters of sales data, and a secret. */
export const SAMPLE_FILES: Readonly<Record<string, string>> = {
  'README.md': '# shop\n\nA tiny shop backend.\nRun `npm test` before you push.\n',
  'src/cart.ts': 'export function total(items: number[]): number {\n  // TODO: apply discounts\n  return items.reduce((a, b) => a + b, 0)\n}\n',
  'src/tax.ts': 'export const RATE = 0.2\n// TODO: per-country rates\nexport const tax = (n: number) => n * RATE\n',
  'data/sales-q1.csv': 'region,amount\nnorth,120\nsouth,80\neast,45\n',
  'data/sales-q2.csv': 'region,amount\nnorth,90\nsouth,130\neast,60\n',
  'data/sales-q3.csv': 'region,amount\nnorth,150\nsouth,70\neast,95\n',
  '.env': 'API_KEY=not-for-models\n',
}

const text = (value: string): ContentBlock => ({ type: 'text', text: value })

/** Resolves after `ms`, or rejects as soon as `signal` aborts: every tool body must honour it. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** A fresh file system holding `initial` (the sample project by default). */
export function createMemoryFs(initial: Readonly<Record<string, string>> = SAMPLE_FILES, latencyMs = 10): MemoryFs {
  const files = new Map(Object.entries(initial))
  let reading = 0
  let peak = 0
  return {
    files,
    get peakConcurrentReads() {
      return peak
    },
    async read(path, signal) {
      reading++
      peak = Math.max(peak, reading)
      try {
        await delay(latencyMs, signal)
      } finally {
        reading--
      }
      const content = files.get(path)
      // A thrown Error becomes a TOOL_FAILED result; the message is what the model reads.
      if (content === undefined) throw new Error(`No such file: ${path}. Call list_files to see what exists.`)
      return content
    },
  }
}

const LANGS: Readonly<Record<string, string>> = { ts: 'typescript', md: 'markdown', csv: 'csv' }

/** Lines of a file without the empty string a trailing newline leaves. */
function linesOf(content: string): string[] {
  const lines = content.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines
}

/** The four file tools over `fs`, ready for `ctx.tools.register`. */
export function fileTools(fs: MemoryFs): ToolDefinition[] {
  const listFiles = defineTool({
    name: 'list_files',
    description: 'List the paths of all files whose path starts with `prefix` (all files when omitted).',
    parameters: { prefix: { type: 'string', description: 'A path prefix such as "src/".' } },
    output: {
      schema: { type: 'array', items: { type: 'string' } },
      render: (_args, paths) => [text(paths.length === 0 ? '(no files)' : paths.join('\n'))],
    },
    isConcurrencySafe: () => true,
    execute: ({ prefix = '' }) => [...fs.files.keys()].filter((path) => path.startsWith(prefix)).sort(),
  })

  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file. Returns up to `limit` lines starting at the 1-based line `offset`.',
    parameters: {
      path: { type: 'string', required: true },
      offset: { type: 'integer', description: '1-based first line (default 1).' },
      limit: { type: 'integer', description: 'Most lines to return (default 200).' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          path: { type: 'string', required: true },
          offset: { type: 'integer', required: true },
          totalLines: { type: 'integer', required: true },
          text: { type: 'string', required: true, description: 'The lines of the window, joined by newlines.' },
        },
      },
      // What the model reads: `cat -n` style, so it can cite line numbers.
      render: (_args, value) => {
        const numbered = linesOf(value.text).map((line, i) => `${String(value.offset + i).padStart(4)}  ${line}`)
        return [text(`${value.path} (${value.totalLines} lines)\n${numbered.join('\n')}`)]
      },
      // Kept in the durable result (`meta`), so a replay can rebuild the read card without the value.
      presentationMeta: (_args, value) => ({
        path: value.path,
        offset: value.offset,
        totalLines: value.totalLines,
        lines: linesOf(value.text).map((line, i) => ({ number: value.offset + i, text: line })),
      }),
    },
    isConcurrencySafe: () => true,
    async execute({ path, offset = 1, limit = 200 }, exec) {
      const lines = linesOf(await fs.read(path, exec.signal))
      const window = lines.slice(Math.max(0, offset - 1), Math.max(0, offset - 1) + limit)
      return { path, offset, totalLines: lines.length, text: window.join('\n') }
    },
    presentCall: (args) => {
      // Presenters get unvalidated arguments (a call may still be streaming in): check, or fall back.
      const path = (args as { path?: unknown } | null)?.path
      return typeof path === 'string' ? { card: 'generic', kind: 'read', title: `Read ${path}`, locations: [{ path }] } : undefined
    },
    // Presenters see only the durable result (content, error, meta), live and in replays alike.
    presentResult: (_args, result) => {
      if (result.isError || result.meta === undefined) return undefined
      const meta = result.meta as { path: string; offset: number; totalLines: number; lines: { number: number; text: string }[] }
      const lang = LANGS[meta.path.split('.').pop() ?? '']
      return { card: 'read', title: `Read ${meta.path}`, ...meta, ...(lang === undefined ? {} : { lang }) }
    },
  })

  const search = defineTool({
    name: 'search',
    description: 'Find lines containing `pattern` (plain text, case-sensitive) in files under `prefix`.',
    parameters: {
      pattern: { type: 'string', required: true },
      prefix: { type: 'string' },
      maxResults: { type: 'integer', description: 'Default 20.' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          matches: {
            type: 'array',
            required: true,
            items: {
              type: 'object',
              additionalProperties: false,
              properties: { path: { type: 'string', required: true }, line: { type: 'integer', required: true }, text: { type: 'string', required: true } },
            },
          },
          total: { type: 'integer', required: true },
        },
      },
      render: (_args, { matches, total }) => [
        text([`${total} match(es)`, ...matches.map((m) => `${m.path}:${m.line}: ${m.text}`)].join('\n')),
      ],
      presentationMeta: (_args, { matches, total }) => ({ matches, total }),
    },
    // Enforced by the timeout policy (installTimeoutPolicy), not by the tool itself.
    timeoutMs: 2_000,
    isConcurrencySafe: () => true,
    async execute({ pattern, prefix = '', maxResults = 20 }, exec) {
      const all: { path: string; line: number; text: string }[] = []
      for (const path of [...fs.files.keys()].filter((p) => p.startsWith(prefix)).sort()) {
        linesOf(await fs.read(path, exec.signal)).forEach((line, i) => {
          if (line.includes(pattern)) all.push({ path, line: i + 1, text: line.trim() })
        })
      }
      return { matches: all.slice(0, maxResults), total: all.length }
    },
    presentResult: (_args, result) => {
      if (result.isError || result.meta === undefined) return undefined
      const { matches, total } = result.meta as { matches: { path: string; line: number; text: string }[]; total: number }
      const files = [...new Set(matches.map((m) => m.path))].map((path) => ({
        path,
        matches: matches.filter((m) => m.path === path).map(({ line, text: t }) => ({ line, text: t })),
      }))
      return { card: 'search', shape: 'matches', files, total, truncated: matches.length < total }
    },
  })

  const writeFile = defineTool({
    name: 'write_file',
    description: 'Create or replace a text file.',
    parameters: { path: { type: 'string', required: true }, content: { type: 'string', required: true } },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: { path: { type: 'string', required: true }, created: { type: 'boolean', required: true }, bytes: { type: 'integer', required: true } },
      },
      render: (_args, v) => [text(`${v.created ? 'Created' : 'Replaced'} ${v.path} (${v.bytes} bytes)`)],
    },
    // No isConcurrencySafe: a write is exclusive, so it never overlaps a read of the same file.
    execute({ path, content }) {
      const created = !fs.files.has(path)
      fs.files.set(path, content)
      return { path, created, bytes: Buffer.byteLength(content) }
    },
    presentCall: (args) => {
      const { path, content } = (args ?? {}) as { path?: unknown; content?: unknown }
      if (typeof path !== 'string' || typeof content !== 'string') return undefined
      // presentCall must be pure (it depends on args only), so it cannot know the old text.
      return { card: 'generic', kind: 'edit', title: `Write ${path}`, locations: [{ path }] }
    },
  })

  return [listFiles, readFile, search, writeFile]
}
