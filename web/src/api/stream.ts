// The event stream client: follows a session's or a run's Server-Sent
// Events with fetch(), so that it controls reconnection itself (EventSource
// gives up for good on any non-200 answer) and can send the token as a
// header instead of putting it in the URL.
//
// Every frame carries its event's seq (`id:`), strictly increasing in the
// stream. The client remembers the last seq it delivered, reconnects from
// there (?after=<seq>, which the server treats like Last-Event-ID) with
// exponential backoff after a dropped connection or a server restart, and
// drops any frame whose seq it has already delivered, so a consumer sees
// every event exactly once and in order.

import { toApiError, withQuery, type ApiError } from './http'
import type { StreamEvent } from './types'

export type StreamState = 'connecting' | 'open' | 'retrying' | 'ended' | 'closed' | 'failed'

export interface StreamOptions {
  /** Path (and query) of the stream, without the position. */
  path: string
  /** Where to start: the seq of the last event already seen (0: from the start). */
  after?: number
  baseURL?: string
  headers?: () => Record<string, string>
  /** Receives new events in order, in batches (one per network chunk). */
  onEvents: (events: StreamEvent[]) => void
  onState?: (state: StreamState, detail?: { error?: ApiError | Error; retryInMs?: number; attempt?: number }) => void
  /**
   * An event after which the server ends the stream on purpose (a run's
   * terminal event): an end after it is final, not a drop.
   */
  isTerminal?: (ev: StreamEvent) => boolean
  /** Backoff: first delay and cap, in ms. */
  minDelayMs?: number
  maxDelayMs?: number
  fetch?: typeof fetch
  /** For tests: replaces setTimeout-based sleeping. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /** For tests: jitter source in [0,1). */
  random?: () => number
}

/** Statuses after which reconnecting cannot help. */
const FATAL = new Set([400, 401, 403, 404, 410])

export class EventStream {
  private opts: StreamOptions
  private last: number
  private ctl: AbortController | null = null
  private stopped = false
  private attempt = 0
  private running: Promise<void> | null = null
  private terminal = false
  private now = false
  /** Frames dropped as duplicates (for tests and diagnostics). */
  duplicates = 0
  connects = 0

  constructor(opts: StreamOptions) {
    this.opts = opts
    this.last = opts.after ?? 0
  }

  /** The seq of the last event delivered. */
  get lastSeq(): number {
    return this.last
  }

  start(): this {
    if (!this.running) {
      this.stopped = false
      this.running = this.loop().finally(() => { this.running = null })
    }
    return this
  }

  /** Restarts a stream that ended (a run resumed after its terminal event). */
  restart(): this {
    this.terminal = false
    return this.start()
  }

  /** Stops for good; no callback is called after it returns. */
  close(): void {
    this.stopped = true
    this.ctl?.abort()
    this.emitState('closed')
  }

  /** Drops the connection now and reconnects at once (used by tests and "reconnect" buttons). */
  reconnect(): void {
    this.attempt = 0
    this.now = true
    this.ctl?.abort()
  }

  private emitState(s: StreamState, d?: Parameters<NonNullable<StreamOptions['onState']>>[1]) {
    this.opts.onState?.(s, d)
  }

  private async loop(): Promise<void> {
    const f = this.opts.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a))
    while (!this.stopped) {
      this.ctl = new AbortController()
      const signal = this.ctl.signal
      let retryAfterMs = 0
      let error: Error | undefined
      this.emitState(this.attempt === 0 ? 'connecting' : 'retrying', { attempt: this.attempt })
      try {
        this.connects++
        const url = (this.opts.baseURL ?? '') + withQuery(this.opts.path, { after: this.last })
        const res = await f(url, {
          headers: { Accept: 'text/event-stream', ...(this.opts.headers?.() ?? {}) },
          signal,
          cache: 'no-store',
          credentials: 'omit',
        })
        if (!res.ok || !res.body) {
          const err = await toApiError(res)
          if (FATAL.has(res.status)) {
            this.stopped = true
            this.emitState('failed', { error: err })
            return
          }
          error = err
          retryAfterMs = (err.retryAfter ?? 0) * 1000
        } else {
          performance.mark('weft:stream-open')
          this.emitState('open')
          await this.read(res.body, signal)
          if (this.stopped) return
          if (this.terminal) {
            this.emitState('ended')
            // restart() from the callback above asks for more at once.
            if (this.terminal || this.stopped) return
            continue
          }
        }
      } catch (e) {
        if (this.stopped) return
        error = e as Error
      }
      if (this.stopped) return
      // Dropped, refused for now, or ended without its terminal event (the
      // server restarted): back off, then resume after the last seq.
      const delay = Math.max(retryAfterMs, this.backoff())
      this.attempt++
      this.emitState('retrying', { error, retryInMs: delay, attempt: this.attempt })
      if (this.now) {
        this.now = false
        continue
      }
      await (this.opts.sleep ?? sleep)(delay, this.ctl.signal)
    }
  }

  private backoff(): number {
    const min = this.opts.minDelayMs ?? 250
    const max = this.opts.maxDelayMs ?? 5_000
    const base = Math.min(max, min * 2 ** Math.min(this.attempt, 16))
    const r = (this.opts.random ?? Math.random)()
    // Full jitter in the upper half, so many tabs do not reconnect in step.
    return Math.round(base / 2 + (base / 2) * r)
  }

  private async read(body: ReadableStream<Uint8Array>, signal: AbortSignal): Promise<void> {
    const reader = body.getReader()
    const parser = new SSEParser()
    const decoder = new TextDecoder()
    const onAbort = () => { void reader.cancel().catch(() => {}) }
    signal.addEventListener('abort', onAbort)
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done || this.stopped) break
        const frames = parser.push(decoder.decode(value, { stream: true }))
        this.deliver(frames)
      }
      this.deliver(parser.push(decoder.decode()))
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  private deliver(frames: SSEFrame[]) {
    if (!frames.length || this.stopped) return
    const out: StreamEvent[] = []
    for (const fr of frames) {
      if (fr.id === undefined) continue // comments and id-less frames carry no event
      const seq = Number(fr.id)
      if (!Number.isSafeInteger(seq)) continue
      if (seq <= this.last) {
        // Already delivered (a replay overlapping what we had) or the
        // "metadata" frame of a turn stream (seq 0).
        this.duplicates++
        continue
      }
      let data: unknown = fr.data
      try {
        data = fr.data === '' ? {} : JSON.parse(fr.data)
      } catch {
        // keep the raw text
      }
      const ev: StreamEvent = { seq, type: fr.event || 'message', data }
      this.last = seq
      out.push(ev)
      if (this.opts.isTerminal?.(ev)) this.terminal = true
      else if (this.terminal) this.terminal = false // a resume appended more
    }
    if (out.length) {
      this.attempt = 0
      this.opts.onEvents(out)
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(t); resolve() }, { once: true })
  })
}

export interface SSEFrame {
  id?: string
  event?: string
  data: string
}

/**
 * SSEParser is an incremental parser of the text/event-stream format
 * (WHATWG HTML §9.2): lines end in CRLF, LF or CR; "field: value" with one
 * optional space; data lines joined with "\n"; a blank line dispatches;
 * lines starting with ":" are comments. It keeps partial lines across
 * chunks.
 */
export class SSEParser {
  private buf = ''
  private cur: { id?: string; event?: string; data: string[] } = { data: [] }
  private pendingCR = false

  push(chunk: string): SSEFrame[] {
    const out: SSEFrame[] = []
    let s = this.buf + chunk
    this.buf = ''
    if (this.pendingCR && s.startsWith('\n')) s = s.slice(1)
    this.pendingCR = false
    // Line ends are found with indexOf, not a loop over every character: a
    // long session's replay is megabytes, parsed on the page's main thread
    // while it starts. The next CR and LF are each searched for once and
    // kept until passed.
    let start = 0
    let lf = s.indexOf('\n')
    let cr = s.indexOf('\r')
    for (;;) {
      if (lf !== -1 && lf < start) lf = s.indexOf('\n', start)
      if (cr !== -1 && cr < start) cr = s.indexOf('\r', start)
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        if (lf === -1) break
        this.line(s.slice(start, lf), out)
        start = lf + 1
        continue
      }
      this.line(s.slice(start, cr), out)
      if (cr + 1 < s.length) {
        start = s.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1
      } else {
        // A CR ending the chunk: an LF starting the next one belongs to it.
        this.pendingCR = true
        start = cr + 1
      }
    }
    this.buf = s.slice(start)
    return out
  }

  private line(line: string, out: SSEFrame[]) {
    if (line === '') {
      if (this.cur.data.length || this.cur.id !== undefined || this.cur.event !== undefined) {
        out.push({ id: this.cur.id, event: this.cur.event, data: this.cur.data.join('\n') })
      }
      this.cur = { data: [] }
      return
    }
    if (line.charCodeAt(0) === 58) return // ':' comment (keepalive)
    const i = line.indexOf(':')
    const field = i < 0 ? line : line.slice(0, i)
    let value = i < 0 ? '' : line.slice(i + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    switch (field) {
      case 'id':
        if (!value.includes('\0')) this.cur.id = value
        break
      case 'event':
        this.cur.event = value
        break
      case 'data':
        this.cur.data.push(value)
        break
    }
  }
}
