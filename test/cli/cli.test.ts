import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { enginesUnderTest } from '../sandbox/engines.ts'

const root = join(import.meta.dirname, '..', '..')
const CLI = ['--import', 'tsx', join(root, 'cli', 'main.ts')]
const TOY = `node --import tsx ${join(root, 'test', 'mcp', 'fixtures', 'toy-stdio.ts')}`
const dir = mkdtempSync(join(tmpdir(), 'toolbox-cli-'))

interface Outcome {
  readonly status: number
  readonly stdout: string
  readonly stderr: string
}

/** Run the CLI to completion, without the test runner's --no-node-snapshot. */
function cli(args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...CLI, ...args], { cwd: root, timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } }, (error, stdout, stderr) => {
      const status = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      resolve({ status, stdout, stderr })
    })
  })
}

function program(name: string, code: string): string {
  const path = join(dir, name)
  writeFileSync(path, code)
  return path
}

const closing: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((entry) => entry.close()))
})

describe('toolbox-codemode --help', () => {
  it('prints the usage of every command and exits 0', async () => {
    const outcome = await cli(['--help'])
    expect(outcome.status).toBe(0)
    expect(outcome.stdout).toContain('toolbox-codemode serve --mcp "<command>"')
    expect(outcome.stdout).toContain('toolbox-codemode run <program.ts>')
  })

  it.each(['serve', 'sdk', 'run'])('prints the flags of %s', async (command) => {
    const outcome = await cli([command, '--help'])
    expect(outcome.status).toBe(0)
    expect(outcome.stdout).toMatch(new RegExp(`^Usage: toolbox-codemode ${command} `))
    expect(outcome.stdout).toContain('--mcp "<command>"')
  })
})

describe('toolbox-codemode errors: one line naming the fix, status 2', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['an unknown command', ['launch'], /^toolbox-codemode: unknown command "launch": use serve, sdk or run/],
    ['an unknown flag', ['sdk', '--mcp', 'x', '--verbose'], /^toolbox-codemode: unknown flag --verbose for "sdk": see toolbox-codemode sdk --help/],
    ['a flag without its value', ['sdk', '--mcp'], /^toolbox-codemode: --mcp needs a value/],
    ['no server', ['sdk'], /^toolbox-codemode: "sdk" needs at least one --mcp "<command>"/],
    ['an unknown engine', ['serve', '--mcp', 'x', '--engine', 'v8'], /^toolbox-codemode: unknown engine "v8": use --engine quickjs or --engine isolated-vm/],
    ['a bad port', ['serve', '--mcp', 'x', '--http', 'eighty'], /^toolbox-codemode: --http takes a port number from 0 to 65535, got "eighty"/],
    ['a missing program file', ['run', join(dir, 'missing.ts'), '--mcp', 'x'], /^toolbox-codemode: cannot read the program ".*missing\.ts": no such file/],
    ['run without a program', ['run', '--mcp', 'x'], /^toolbox-codemode: "run" needs the program file/],
    ['a server command that does not exist', ['sdk', '--mcp', 'no-such-mcp-server --flag'], /^toolbox-codemode: MCP server "no-such-mcp-server --flag" did not start \("no-such-mcp-server" was not found\): check the command/],
    ['a server that exits at once', ['sdk', '--mcp', `node -e "console.error('missing API key'); process.exit(3)"`], /did not start \(it said: missing API key\)/],
    ['two servers under one prefix', ['sdk', '--mcp', TOY, '--mcp', TOY], /"toy\.echo".* already registered.*name it with --mcp "<prefix>=/],
  ]
  it.each(cases)('%s', async (_label, args, expected) => {
    const outcome = await cli(args)
    expect(outcome.status).toBe(2)
    // Refused tools of a server that did start are reported first, one line each; the error is one line.
    const lines = outcome.stderr.trim().split('\n').filter((line) => !line.includes('was not imported'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(expected)
  })
})

describe('toolbox-codemode sdk', () => {
  it('prints the declarations a model sees and lists refused tools on stderr', async () => {
    const outcome = await cli(['sdk', '--mcp', `t=${TOY}`])
    expect(outcome.status).toBe(0)
    expect(outcome.stdout).toContain('declare const tools: {')
    expect(outcome.stdout).toContain('t_add(args: {')
    expect(outcome.stdout).toContain('Calls the tool `t.add`.')
    expect(outcome.stderr).toMatch(/MCP server "toy-server": tool "remote_ref" was not imported: inputSchema \$\.properties\.x/)
  })
})

describe.each(enginesUnderTest())('toolbox-codemode run on $name', ({ name }) => {
  it('prints the result as JSON on stdout, progress and logs on stderr, and exits 0', async () => {
    const path = program('ok.ts', 'const [a, b] = await Promise.all([tools.toy_add({ a: 1, b: 2 }), tools.toy_echo({ text: "x" })])\nconsole.log("sum is", a.sum)\nreturn { sum: a.sum, text: b[0].text }\n')
    const outcome = await cli(['run', path, '--engine', name, '--mcp', TOY])
    expect(outcome.status).toBe(0)
    expect(JSON.parse(outcome.stdout)).toEqual({ sum: 3, text: 'x' })
    const lines = outcome.stderr.split('\n')
    expect(lines).toContain('start toy.add')
    expect(lines.some((line) => /^done toy\.echo \(\d+ ms\)$/.test(line))).toBe(true)
    expect(lines).toContain('sum is 3')
  })

  it('exits 1 with the failure a model would read when the program fails', async () => {
    const path = program('fail.ts', 'await tools.toy_fail({})\n')
    const outcome = await cli(['run', path, '--engine', name, '--mcp', TOY])
    expect(outcome.status).toBe(1)
    expect(outcome.stderr).toContain('fail toy.fail')
    expect(outcome.stderr).toMatch(/toolbox-codemode: the program failed: .*disk full/)
    expect(outcome.stdout).toBe('')
  })

  it('prints the console lines of a failed program once, as it wrote them', async () => {
    const path = program('fail-logs.ts', 'console.log("about to fail")\nawait tools.toy_fail({})\n')
    const outcome = await cli(['run', path, '--engine', name, '--mcp', TOY])
    expect(outcome.status).toBe(1)
    expect(outcome.stderr.split('about to fail')).toHaveLength(2)
    expect(outcome.stderr).toMatch(/toolbox-codemode: the program failed: .*disk full/)
  })

  it('prints the notes of a run on stderr after its result, as the model would read them', async () => {
    // The slow call is surely under way when the program returns: the awaited one was sent after it.
    const path = program('notes.ts', 'tools.toy_slow({ ms: 60000 })\nawait tools.toy_echo({ text: "x" })\nreturn 1\n')
    const outcome = await cli(['run', path, '--engine', name, '--mcp', TOY])
    expect(outcome.status).toBe(0)
    expect(JSON.parse(outcome.stdout)).toBe(1)
    expect(outcome.stderr).toMatch(/toolbox-codemode: note: .*tools\.toy_slow.*await/)
  })
})

/** Start `serve` over stdio, as an MCP client would. */
async function serveOverStdio(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, 'serve', '--mcp', TOY],
    cwd: root,
    env: Object.fromEntries(Object.entries({ ...process.env, NODE_OPTIONS: '' }).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    stderr: 'pipe',
  })
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(transport)
  closing.push(client)
  return client
}

describe('toolbox-codemode serve over stdio, driven by the SDK client', () => {
  it('lists run_code with the downstream tools in its SDK', async () => {
    const client = await serveOverStdio()
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['run_code'])
    expect(tools[0]?.description).toContain('toy_add(args: {')
  })

  it('runs a program over the downstream tools, with progress, and returns structuredContent', async () => {
    const client = await serveOverStdio()
    const seen: Progress[] = []
    const result = await client.callTool(
      { name: 'run_code', arguments: { code: 'const r = await tools.toy_add({ a: 20, b: 22 }); return r.sum' } },
      undefined,
      { onprogress: (progress) => seen.push(progress) },
    )
    expect(result.structuredContent).toEqual({ result: 42, logs: [] })
    expect(seen.map((progress) => progress.message)).toEqual(['toy.add started', 'toy.add done'])
  })

  it('returns an error result for a failing program', async () => {
    const client = await serveOverStdio()
    const result = await client.callTool({ name: 'run_code', arguments: { code: 'return await tools.toy_fail({})' } })
    expect(result.isError).toBe(true)
    expect(JSON.stringify(result.content)).toContain('disk full')
  })

  it('cancels a running program and goes on serving', async () => {
    const client = await serveOverStdio()
    const controller = new AbortController()
    const pending = client.callTool({ name: 'run_code', arguments: { code: 'await tools.toy_slow({ ms: 30000 }); return 1' } }, undefined, {
      signal: controller.signal,
      onprogress: () => setTimeout(() => controller.abort(), 100),
    })
    await expect(pending).rejects.toThrow(/abort/i)
    // The server is still there and answers the next call.
    const after = await client.callTool({ name: 'run_code', arguments: { code: 'return 7' } })
    expect(after.structuredContent).toEqual({ result: 7, logs: [] })
  })
})

describe('toolbox-codemode serve --http', () => {
  it('serves on 127.0.0.1, answers an SDK client over Streamable HTTP, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [...CLI, 'serve', '--mcp', TOY, '--http', '0'], { cwd: root, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      const url = await new Promise<URL>((resolve, reject) => {
        let said = ''
        child.stderr.on('data', (chunk: Buffer) => {
          said += chunk.toString('utf8')
          const match = /on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(said)
          if (match !== null) resolve(new URL(match[1] as string))
        })
        child.on('exit', () => reject(new Error(`serve exited early: ${said}`)))
      })
      const client = new Client({ name: 'test-client', version: '1.0.0' })
      await client.connect(new StreamableHTTPClientTransport(url))
      const result = await client.callTool({ name: 'run_code', arguments: { code: 'return (await tools.toy_add({ a: 1, b: 1 })).sum' } })
      expect(result.structuredContent).toEqual({ result: 2, logs: [] })
      await client.close()
    } finally {
      child.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
  })
})
