/**
 * Live progress of a running program's sub-calls, seen through the context's own events: a
 * pass-through `tools/pre-execute` listener (a call starts) and `tools/result` (it settled). On a
 * terminal the calls in flight are one status line redrawn in place above which settled calls
 * scroll; anywhere else every start and end is a plain line.
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
 * Show the sub-calls of the call `callId` on `sink` until the returned function is called (which
 * also clears the status line).
 */
export function showProgress(context: Context, callId: string, sink: ProgressSink, columns = 100): () => void {
  const inFlight = new Map<symbol, { name: string; started: number }>()
  let status = ''
  const redraw = (): void => {
    if (!sink.isTTY) return
    const names = [...inFlight.values()].map((call) => call.name)
    const next = names.length === 0 ? '' : fit(`… ${names.length} running: ${names.join(', ')}`, columns)
    if (next === status) return
    sink.write(`${CLEAR_LINE}${next}`)
    status = next
  }
  const print = (line: string): void => {
    if (sink.isTTY) {
      sink.write(`${CLEAR_LINE}${fit(line, columns)}\n`)
      status = ''
      redraw()
    } else {
      sink.write(`${line}\n`)
    }
  }
  const stopStarts = context.on('tools/pre-execute', (exec, next) => {
    if (exec.parent !== undefined && exec.rootCallId === callId) {
      inFlight.set(exec.token, { name: exec.name, started: performance.now() })
      if (sink.isTTY) redraw()
      else print(`start ${exec.name}`)
    }
    return next()
  })
  const stopResults = context.on('tools/result', (exec, result) => {
    if (exec.parent === undefined || exec.rootCallId !== callId) return
    const call = inFlight.get(exec.token)
    inFlight.delete(exec.token)
    const ms = call === undefined ? '' : ` (${Math.round(performance.now() - call.started)} ms)`
    const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim()
    if (sink.isTTY) print(result.isError ? `✗ ${exec.name}${ms}: ${oneLine(result.error.message)}` : `✓ ${exec.name}${ms}`)
    else print(result.isError ? `fail ${exec.name}${ms}: ${oneLine(result.error.message)}` : `done ${exec.name}${ms}`)
  })
  return () => {
    stopStarts()
    stopResults()
    if (sink.isTTY && status !== '') sink.write(CLEAR_LINE)
    status = ''
  }
}
