/**
 * Live progress of a running program, seen through the context's `tools/code-progress` event: each
 * sub-call as it starts and settles, and each console line as the program writes it. On a terminal
 * the calls in flight are one status line redrawn in place above which settled calls and console
 * lines scroll; anywhere else every start, end and console line is a plain line.
 */

import type { Context } from '../src/context.ts'

/** Where progress goes: a stream, and whether it is a terminal. */
export interface ProgressSink {
  write(text: string): void
  readonly isTTY: boolean
}

const CLEAR_LINE = '\r\x1b[2K'

/** One line, at most `width` characters, for a terminal. */
function fit(line: string, width: number): string {
  return line.length <= width ? line : `${line.slice(0, Math.max(0, width - 1))}…`
}

/**
 * Show the sub-calls and console lines of the `run_code` call `callId` on `sink` until the returned
 * function is called (which also clears the status line).
 */
export function showProgress(context: Context, callId: string, sink: ProgressSink, columns = 100): () => void {
  const inFlight = new Map<string, { name: string; started: number }>()
  let status = ''
  const redraw = (): void => {
    if (!sink.isTTY) return
    const names = [...inFlight.values()].map((call) => call.name)
    const next = names.length === 0 ? '' : fit(`… ${names.length} running: ${names.join(', ')}`, columns)
    if (next === status) return
    sink.write(`${CLEAR_LINE}${next}`)
    status = next
  }
  /** A console line: above the status line on a terminal, as it is elsewhere. */
  const write = (text: string): void => {
    if (sink.isTTY) {
      sink.write(`${CLEAR_LINE}${text}\n`)
      status = ''
      redraw()
    } else {
      sink.write(`${text}\n`)
    }
  }
  /** A line of progress: cut to the terminal's width there. */
  const print = (line: string): void => write(sink.isTTY ? fit(line, columns) : line)
  const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim()
  const stop = context.on('tools/code-progress', (run, progress) => {
    if (run.callId !== callId) return
    switch (progress.type) {
      case 'call-start':
        inFlight.set(progress.subCallId, { name: progress.name, started: performance.now() })
        if (sink.isTTY) redraw()
        else print(`start ${progress.name}`)
        return
      case 'call-end': {
        const call = inFlight.get(progress.subCallId)
        inFlight.delete(progress.subCallId)
        const ms = call === undefined ? '' : ` (${Math.round(performance.now() - call.started)} ms)`
        const failure = progress.error === undefined ? '' : `: ${oneLine(progress.error.message)}`
        if (sink.isTTY) print(progress.isError ? `✗ ${progress.name}${ms}${failure}` : `✓ ${progress.name}${ms}`)
        else print(progress.isError ? `fail ${progress.name}${ms}${failure}` : `done ${progress.name}${ms}`)
        return
      }
      case 'log':
        // The program's own words, whole: never cut to the terminal's width.
        write(`${progress.level === 'log' ? '' : `[${progress.level}] `}${progress.text}`)
        return
    }
  })
  return () => {
    stop()
    if (sink.isTTY && status !== '') sink.write(CLEAR_LINE)
    status = ''
  }
}
