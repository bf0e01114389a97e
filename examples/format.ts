/**
 * Small printing helpers the examples share, so each example reads as the story it tells.
 */
import { pathToFileURL } from 'node:url'
import type { SessionEvent, ToolExecutionResult } from 'toolbox-codemode'

/** Where an example writes its account; `console.log` when run directly, silent in tests. */
export type Print = (line: string) => void

/** True when `moduleUrl` is the file node was started with (`node ... examples/x.ts`). */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1]
  return entry !== undefined && moduleUrl === pathToFileURL(entry).href
}

/** A heading with an underline of its length. */
export function heading(print: Print, title: string, rule = '-'): void {
  print('')
  print(title)
  print(rule.repeat(title.length))
}

/** `text` with every line indented. */
export function indent(text: string, by = '    '): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? by.trimEnd() : by + line))
    .join('\n')
}

/** `text` cut to `max` characters, marking the cut. */
export function clip(text: string, max = 400): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`
}

/** The text a model reads for a result: its content blocks joined. */
export function contentText(result: { readonly content: readonly { type: string; text?: string }[] }): string {
  return result.content.map((block) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`)).join('\n')
}

/** The error code of a failed result, or undefined for a success. */
export function errorCode(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

/** One session event on one line: its type, ids and outcome. */
export function describeEvent(event: SessionEvent): string {
  switch (event.type) {
    case 'tool/call':
      return `tool/call                 ${event.callId}  ${event.name} ${clip(JSON.stringify(event.arguments), 80)}`
    case 'tool/result':
      return `tool/result               ${event.callId}  ${event.name} ${event.isError ? `ERROR ${event.error?.info?.code ?? ''}` : 'ok'}${event.meta === undefined ? '' : ' (+meta)'}`
    case 'tool/code-dispatch-start':
      return `tool/code-dispatch-start  ${event.subCallId}  ${event.name} ${JSON.stringify(event.arguments)}`
    case 'tool/code-dispatch':
      return `tool/code-dispatch        ${event.subCallId}  ${event.name} ${event.isError ? 'ERROR' : 'ok'}`
  }
}
