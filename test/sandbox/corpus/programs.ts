/**
 * The program corpus: programs in the styles models write, against the tools of tools.ts. Correct
 * programs must run unchanged and give `expected`; faulty ones must be refused, or fail, with
 * feedback holding every string of `names` (what names the fix: the tool, the key, the closest
 * name), and with no side effect run. The default check mode's list of refusing diagnostics was
 * chosen by measurement on this corpus (sdk-gen/type-check-core.js).
 */

/** A program that must run unchanged and return `expected`. */
export interface CorrectProgram {
  readonly name: string
  readonly code: string
  readonly expected: unknown
}

/** A program that must not run to completion, with feedback naming the fix. */
export interface FaultyProgram {
  readonly name: string
  readonly code: string
  /** Strings the feedback must contain (the tool, the key, the closest name). */
  readonly names: readonly string[]
}

const lines = (...text: string[]): string => text.join('\n')

export const CORRECT_PROGRAMS: readonly CorrectProgram[] = [
  { name: 'a plain return of a tool result', code: 'return await tools.read_file({ path: "/data/b.txt" })', expected: { content: 'foo', size: 3 } },
  { name: 'a bare expression', code: '1 + 2', expected: 3 },
  { name: 'a bare awaited tool call', code: 'await tools.get_user({ id: "u1" })', expected: { id: 'u1', name: 'Ada', email: 'ada@example.com', age: 36, tags: ['admin', 'ops'] } },
  { name: 'a bare expression after statements', code: lines('const { users } = await tools.search_users({ query: "" })', 'users.map((u) => u.name)'), expected: ['Ada', 'Bob', 'Cy'] },
  { name: 'a fenced TypeScript program', code: lines('```ts', 'const f = await tools.read_file({ path: "/data/a.txt" })', 'return f.content.split("\\n").length', '```'), expected: 2 },
  { name: 'a fenced program tagged typescript with a bare expression', code: lines('```typescript', 'const n: number = 2', 'n * 21', '```'), expected: 42 },
  { name: 'a fenced program without a language tag', code: lines('```', 'return "plain"', '```'), expected: 'plain' },
  { name: 'a fenced JavaScript program with blank lines around it', code: lines('', '```javascript', 'const r = await tools.list_dir({ path: "/data" })', 'return r.entries.length', '```', ''), expected: 3 },
  { name: 'type annotations on variables and parameters', code: lines('const names: string[] = []', 'const add = (n: string): void => { names.push(n) }', 'add("x")', 'return names'), expected: ['x'] },
  { name: 'an interface and a typed result', code: lines('interface Row { id: string; age: number }', 'const { users } = await tools.search_users({ query: "" })', 'const rows: Row[] = users.map((u) => ({ id: u.id, age: u.age }))', 'return rows.filter((r) => r.age > 30).map((r) => r.id)'), expected: ['u1', 'u3'] },
  { name: 'satisfies', code: lines('const args = { query: "a" } satisfies { query: string }', 'const r = await tools.search_users(args)', 'return r.total'), expected: 1 },
  { name: 'as const', code: lines('const ids = ["u1", "u2"] as const', 'const users = await Promise.all(ids.map((id) => tools.get_user({ id })))', 'return users.map((u) => u.name)'), expected: ['Ada', 'Bob'] },
  { name: 'a generic helper', code: lines('function first<T>(items: T[]): T | undefined { return items[0] }', 'const { users } = await tools.search_users({ query: "" })', 'return first(users)?.name'), expected: 'Ada' },
  { name: 'optional chaining on an optional result field', code: lines('const bob = await tools.get_user({ id: "u2" })', 'const ada = await tools.get_user({ id: "u1" })', 'return [bob.manager?.name, ada.manager?.name ?? "none"]'), expected: ['Ada', 'none'] },
  { name: 'destructuring with defaults and renames', code: lines('const { users: [a, , c], total = 0 } = await tools.search_users({ query: "" })', 'return { a: a?.id, c: c?.id, total }'), expected: { a: 'u1', c: 'u3', total: 3 } },
  { name: 'a for...of loop over a tool result', code: lines('const { entries } = await tools.list_dir({ path: "/data" })', 'let total = 0', 'for (const entry of entries) {', '  total += entry.size', '}', 'return total'), expected: 11 + 3 + 19 },
  { name: 'a loop of sequential awaited calls', code: lines('const out: Record<string, number> = {}', 'for (const name of ["a.txt", "b.txt"]) {', '  const f = await tools.read_file({ path: `/data/${name}` })', '  out[name] = f.size', '}', 'return out'), expected: { 'a.txt': 11, 'b.txt': 3 } },
  { name: 'Promise.all over a listing', code: lines('const { entries } = await tools.list_dir({ path: "/data" })', 'const files = await Promise.all(entries.map((e) => tools.read_file({ path: "/data/" + e.name })))', 'return files.map((f) => f.size)'), expected: [11, 3, 19] },
  { name: 'try/catch around a failing call', code: lines('try {', '  await tools.read_file({ path: "/missing" })', '  return "found"', '} catch (error) {', '  return "missing"', '}'), expected: 'missing' },
  { name: 'an error code branch', code: lines('try {', '  await tools.get_user({ id: "nobody" })', '} catch (e: any) {', '  return typeof e.code', '}'), expected: 'string' },
  { name: 'a write then a read', code: lines('const w = await tools.write_file({ path: "/data/c.txt", content: "abc" })', 'return w.bytes'), expected: 3 },
  { name: 'sending an email with an optional body', code: lines('const ada = await tools.get_user({ id: "u1" })', 'const sent = await tools.send_email({ to: ada.email, subject: "Hi" })', 'return sent.messageId.startsWith("m")'), expected: true },
  { name: 'an enum-like argument from a const', code: lines('const encoding = "utf8"', 'const f = await tools.read_file({ path: "/data/b.txt", encoding })', 'return f.content'), expected: 'foo' },
  { name: 'a let-declared enum-like argument (a note, not a refusal)', code: lines('let encoding = "utf8"', 'const f = await tools.read_file({ path: "/data/b.txt", encoding })', 'return f.size'), expected: 3 },
  { name: 'a possibly undefined argument (a note, not a refusal)', code: lines('const { users } = await tools.search_users({ query: "" })', 'const bob = users.find((u) => u.name === "Bob")', 'const full = await tools.get_user({ id: bob?.id })', 'return full.age'), expected: 25 },
  { name: 'a type assertion', code: lines('const data = JSON.parse("{\\"n\\": 5}") as { n: number }', 'return data.n * 2'), expected: 10 },
  { name: 'a non-null assertion', code: lines('const { users } = await tools.search_users({ query: "cy" })', 'return users[0]!.email'), expected: 'cy@example.com' },
  { name: 'a type alias with a union', code: lines('type Kind = "file" | "dir"', 'const { entries } = await tools.list_dir({ path: "/data" })', 'const kinds: Kind[] = entries.map((e) => e.kind)', 'return [...new Set(kinds)]'), expected: ['file'] },
  { name: 'an unknown type name in an annotation (a note)', code: lines('const n: Count = 3', 'return n'), expected: 3 },
  { name: 'a mismatched local annotation (a note)', code: lines('const label: number = "seven"', 'return label'), expected: 'seven' },
  { name: 'a property added to an empty object (a note)', code: lines('const o = {}', 'o.x = 1', 'return o'), expected: { x: 1 } },
  { name: 'reduce into a map object', code: lines('const { users } = await tools.search_users({ query: "" })', 'return users.reduce<Record<string, number>>((acc, u) => { acc[u.id] = u.age; return acc }, {})'), expected: { u1: 36, u2: 25, u3: 41 } },
  { name: 'sorting and slicing', code: lines('const { users } = await tools.search_users({ query: "" })', 'return [...users].sort((a, b) => b.age - a.age).slice(0, 2).map((u) => u.id)'), expected: ['u3', 'u1'] },
  { name: 'console output and a result', code: lines('console.log("start")', 'const r = await tools.search_users({ query: "o" })', 'console.log(r.total)', 'return r.users.map((u) => u.name)'), expected: ['Bob'] },
  { name: 'an async helper function', code: lines('async function sizeOf(path: string): Promise<number> {', '  const f = await tools.read_file({ path })', '  return f.size', '}', 'return (await sizeOf("/data/a.txt")) + (await sizeOf("/data/b.txt"))'), expected: 14 },
  { name: 'a class with a method', code: lines('class Counter {', '  private n = 0', '  add(by: number): this { this.n += by; return this }', '  get value(): number { return this.n }', '}', 'return new Counter().add(2).add(3).value'), expected: 5 },
  { name: 'a Map over tool results', code: lines('const { users } = await tools.search_users({ query: "" })', 'const byTag = new Map<string, string[]>()', 'for (const u of users) for (const t of u.tags) byTag.set(t, [...(byTag.get(t) ?? []), u.id])', 'return Object.fromEntries(byTag)'), expected: { admin: ['u1'], ops: ['u1', 'u3'] } },
  { name: 'an object literal as the last expression', code: lines('const r = await tools.search_users({ query: "", limit: 1 });', '({ shown: r.users.length, total: r.total })'), expected: { shown: 1, total: 3 } },
  { name: 'an awaited Promise.all as the last expression', code: 'await Promise.all(["u1", "u3"].map((id) => tools.get_user({ id }).then((u) => u.age)))', expected: [36, 41] },
  { name: 'a last statement that is a declaration returns nothing', code: 'const x = 1', expected: null },
  { name: 'a return inside an if keeps the program its own', code: lines('const r = await tools.search_users({ query: "zz" })', 'if (r.total === 0) return "none"', 'r.total'), expected: 'none' },
  { name: 'a ternary on a result field', code: lines('const u = await tools.get_user({ id: "u3" })', 'return u.age >= 40 ? "senior" : "junior"'), expected: 'senior' },
  { name: 'template literals and string methods', code: lines('const f = await tools.read_file({ path: "/data/notes.md" })', 'const items = f.content.split("\\n").filter((l) => l.startsWith("- "));', '`${items.length} items`'), expected: '2 items' },
  { name: 'a template literal and a comment holding fenced Markdown blocks', code: lines('const f = await tools.read_file({ path: "/data/b.txt" })', '/* Renders:', '```md', '# Notes', '```', '*/', 'const readme = `# Notes', '~~~js', 'console.log(${JSON.stringify(f.content)})', '~~~', '`', 'return readme.split("\\n").length'), expected: 5 },
  { name: 'a fenced program whose comment and template literal hold fenced blocks', code: lines('```ts', '/* Example:', '```', 'tools.x()', '```', '*/', 'const md = `', '~~~', 'x', '~~~', '`', 'return md.trim()', '```'), expected: '~~~\nx\n~~~' },
  { name: 'typeof guards on a name that may not exist', code: 'return typeof fetch === "function" ? "has fetch" : "no fetch"', expected: 'no fetch' },
  { name: 'element access on tools by a known name', code: 'return (await tools["read_file"]({ path: "/data/b.txt" })).size', expected: 3 },
  { name: 'a while loop with a counter', code: lines('let i = 0', 'const seen: string[] = []', 'while (i < 3) { seen.push(`u${i + 1}`); i++ }', 'const users = await Promise.all(seen.map((id) => tools.get_user({ id })))', 'users.length'), expected: 3 },
  { name: 'a program that never names tools', code: lines('const xs = [3, 1, 2]', 'xs.sort()', 'return xs'), expected: [1, 2, 3] },
  { name: 'an extra argument key on a tool whose schema leaves other keys open', code: 'return (await tools.log_event({ message: "m", level: "info" })).keys', expected: ['message', 'level'] },
  { name: 'an extra key in an open nested argument object', code: 'return (await tools.log_event({ message: "m", meta: { level: "warn", source: "cli" } })).keys', expected: ['message', 'meta', 'meta.level', 'meta.source'] },
]

export const FAULTY_PROGRAMS: readonly FaultyProgram[] = [
  { name: 'an unknown tool after a write', code: lines('await tools.write_file({ path: "/data/x", content: "x" })', 'return await tools.readFile({ path: "/data/x" })'), names: ['readFile', 'read_file'] },
  { name: 'a misspelled tool', code: 'return await tools.serch_users({ query: "a" })', names: ['serch_users', 'search_users'] },
  { name: 'a tool in another naming style', code: lines('await tools.send_email({ to: "a@b.c", subject: "s" })', 'return await tools.getUser({ id: "u1" })'), names: ['getUser', 'get_user'] },
  { name: 'a result property the result does not have, after a write', code: lines('await tools.write_file({ path: "/data/y", content: "y" })', 'const r = await tools.read_file({ path: "/data/a.txt" })', 'return r.text'), names: ['text', 'content'] },
  { name: 'a destructured result property that does not exist', code: lines('await tools.send_email({ to: "a@b.c", subject: "s" })', 'const { text } = await tools.read_file({ path: "/data/a.txt" })', 'return text'), names: ['text'] },
  { name: 'a nested result property that does not exist', code: lines('await tools.write_file({ path: "/z", content: "" })', 'const { entries } = await tools.list_dir({ path: "/data" })', 'return entries.map((e) => e.filename)'), names: ['filename', 'name, kind, size'] },
  { name: 'a property of an array result read as if it were an object', code: lines('await tools.write_file({ path: "/z", content: "" })', 'const r = await tools.search_users({ query: "" })', 'return r.users.total'), names: ['total'] },
  { name: 'a missing required argument', code: lines('await tools.write_file({ path: "/data/q" })'), names: ['content'] },
  { name: 'a missing required argument after another write', code: lines('await tools.send_email({ to: "a@b.c", subject: "s" })', 'await tools.write_file({ content: "x" })'), names: ['path'] },
  { name: 'a mistyped argument', code: lines('await tools.write_file({ path: "/data/q", content: "q" })', 'return await tools.get_user({ id: 1 })'), names: ['id', 'string'] },
  { name: 'a number where a string is expected', code: 'await tools.write_file({ path: "/data/q", content: 42 })', names: ['content', 'string'] },
  { name: 'a value outside an enum', code: lines('await tools.write_file({ path: "/w", content: "w" })', 'return await tools.read_file({ path: "/data/a.txt", encoding: "ascii" })'), names: ['encoding', 'utf8'] },
  { name: 'an undeclared argument key on a tool whose schema refuses other keys', code: lines('await tools.send_email({ to: "a@b.c", subject: "s", bcc: "x@y.z" })'), names: ['bcc'] },
  { name: 'a misspelled argument key', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return await tools.search_users({ qeury: "a" })'), names: ['qeury', 'query'] },
  { name: 'arguments not in an object', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return await tools.get_user("u1")'), names: ['get_user', 'id'] },
  { name: 'no arguments at all', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return await tools.list_dir()'), names: ['list_dir'] },
  { name: 'Node fs', code: lines('await tools.write_file({ path: "/p", content: "" })', 'const fs = require("fs")', 'return fs.readFileSync("/data/a.txt", "utf8")'), names: ['require', 'tools'] },
  { name: 'an fs global', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return fs.readFileSync("/data/a.txt")'), names: ['fs', 'read_file'] },
  { name: 'fetch', code: lines('await tools.send_email({ to: "a@b.c", subject: "s" })', 'const r = await fetch("https://example.com")', 'return r.status'), names: ['fetch', 'tools'] },
  { name: 'setTimeout', code: lines('await tools.write_file({ path: "/p", content: "" })', 'await new Promise((r) => setTimeout(r, 10))'), names: ['setTimeout'] },
  { name: 'process.env', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return process.env.HOME'), names: ['process'] },
  { name: 'a misspelled tools object', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return await tool.read_file({ path: "/data/a.txt" })'), names: ['tool', 'tools'] },
  { name: 'an unknown global used in a shorthand property', code: lines('await tools.write_file({ path: "/p", content: "" })', 'return { result }'), names: ['result'] },
  { name: 'calling a result as a function', code: lines('await tools.write_file({ path: "/p", content: "" })', 'const r = await tools.read_file({ path: "/data/a.txt" })', 'return r.content()'), names: ['content'] },
  { name: 'calling a number', code: lines('await tools.write_file({ path: "/p", content: "" })', 'const n = (await tools.read_file({ path: "/data/a.txt" })).size', 'return n()'), names: ['line 3'] },
  { name: 'a forgotten await before reading a field', code: lines('await tools.write_file({ path: "/p", content: "" })', 'const r = tools.read_file({ path: "/data/a.txt" })', 'return r.content.length'), names: ['content', 'await'] },
  { name: 'a fenced program with an unknown tool', code: lines('```ts', 'await tools.write_file({ path: "/p", content: "" })', 'await tools.delete_file({ path: "/p" })', '```'), names: ['delete_file', 'line 3'] },
  { name: 'prose around a fenced program', code: lines('Here is the program:', '```ts', 'await tools.write_file({ path: "/p", content: "" })', '```'), names: ['fence', 'only the program'] },
  { name: 'two fenced blocks', code: lines('```ts', 'await tools.write_file({ path: "/p", content: "" })', '```', '```ts', 'return 1', '```'), names: ['Line 3 looks like a Markdown fence', 'one program'] },
  { name: 'prose after a fenced program', code: lines('```ts', 'await tools.write_file({ path: "/p", content: "" })', '```', 'This writes the file.'), names: ['Line 3 looks like a Markdown fence'] },
  { name: 'an unknown tool reached without naming tools', code: lines('const t = globalThis["to" + "ols"]', 'await t.write_file({ path: "/p", content: "" })', 'return fs.readFileSync("x")'), names: ['fs'] },
  { name: 'an unknown tool through a helper function', code: lines('async function save(path: string) {', '  await tools.write_file({ path, content: "" })', '}', 'await save("/p")', 'return await tools.remove({ path: "/p" })'), names: ['remove'] },
  {
    name: 'a parenthesised last line that calls the line before (no semicolon)',
    code: lines('await tools.write_file({ path: "/p", content: "" })', 'const r = await tools.search_users({ query: "" })', '({ total: r.total })'),
    names: ['not callable', 'line 2'],
  },
  {
    name: 'a template literal line that tags the line before (no semicolon)',
    code: lines('await tools.write_file({ path: "/p", content: "" })', 'const f = await tools.read_file({ path: "/data/a.txt" })', '`${f.size} bytes`'),
    names: ['not callable'],
  },
  { name: 'an email to a missing user field', code: lines('const u = await tools.get_user({ id: "u1" })', 'await tools.send_email({ to: u.mail, subject: "hi" })'), names: ['mail', 'email'] },
]
