import { describe, expect, it } from 'vitest'
import { EventStream, SSEParser, type StreamState } from './stream'
import type { StreamEvent } from './types'

// A scripted server: each connection gets the next response. A response is
// a status and the chunks of its body; `cut` ends the body with a network
// error instead of a clean end.
interface Conn { status?: number; chunks?: string[]; cut?: boolean; headers?: Record<string, string>; body?: string }

function frame(seq: number, type: string, data: unknown): string {
  return `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`
}

function scriptedFetch(conns: Conn[], urls: string[]): typeof fetch {
  let i = 0
  return (async (input: RequestInfo | URL) => {
    urls.push(String(input))
    const c = conns[Math.min(i++, conns.length - 1)]
    if (c.status && c.status !== 200) {
      return new Response(c.body ?? JSON.stringify({ error: { type: 'x', message: `status ${c.status}` } }), { status: c.status, headers: c.headers })
    }
    const enc = new TextEncoder()
    const chunks = [...(c.chunks ?? [])]
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        const next = chunks.shift()
        if (next !== undefined) ctl.enqueue(enc.encode(next))
        else if (c.cut) ctl.error(new TypeError('network error'))
        else ctl.close()
      },
    })
    return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } })
  }) as typeof fetch
}

function run(conns: Conn[], opts: { after?: number; terminal?: string; untilEvents?: number; maxConnects?: number } = {}) {
  const urls: string[] = []
  const got: StreamEvent[] = []
  const states: StreamState[] = []
  const delays: number[] = []
  return new Promise<{ got: StreamEvent[]; urls: string[]; states: StreamState[]; delays: number[]; s: EventStream }>((resolve) => {
    const done = () => { s.close(); resolve({ got, urls, states, delays, s }) }
    const s: EventStream = new EventStream({
      path: '/v1/sessions/s1/events',
      after: opts.after,
      fetch: scriptedFetch(conns, urls),
      random: () => 0.5,
      sleep: async (ms) => { delays.push(ms) },
      isTerminal: opts.terminal ? (ev) => ev.type === opts.terminal : undefined,
      onEvents: (evs) => {
        got.push(...evs)
        if (opts.untilEvents && got.length >= opts.untilEvents) done()
      },
      onState: (st) => {
        states.push(st)
        if (st === 'ended' || st === 'failed') resolve({ got, urls, states, delays, s })
        if (opts.maxConnects && s.connects >= opts.maxConnects && st === 'retrying') done()
      },
    })
    s.start()
  })
}

describe('SSEParser', () => {
  it('parses frames split at any byte, with CRLF, CR, comments and multi-line data', () => {
    const text = ': keepalive\r\n\r\nid: 1\r\nevent: a\r\ndata: {"x":1}\r\n\r\nid:2\revent:b\rdata: l1\rdata: l2\r\rid: 3\ndata\n\n'
    for (let step = 1; step <= text.length; step++) {
      const p = new SSEParser()
      const out = []
      for (let i = 0; i < text.length; i += step) out.push(...p.push(text.slice(i, i + step)))
      expect(out, `chunks of ${step}`).toEqual([
        { id: '1', event: 'a', data: '{"x":1}' },
        { id: '2', event: 'b', data: 'l1\nl2' },
        { id: '3', event: undefined, data: '' },
      ])
    }
  })
  it('parses random frames with mixed line ends in random chunks (seeded)', () => {
    let seed = 42
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    const ends = ['\n', '\r', '\r\n']
    for (let round = 0; round < 200; round++) {
      const want: { id?: string; event?: string; data: string }[] = []
      let text = ''
      // A CR followed by an LF is one line end, so a line ending in CR is
      // never followed by one ending in a bare LF.
      let prev = ''
      const nl = () => {
        let e = ends[rnd(3)]
        if (prev === '\r' && e === '\n') e = '\r\n'
        return (prev = e)
      }
      for (let f = 0; f < 1 + rnd(8); f++) {
        if (rnd(4) === 0) text += ': comment ' + f + nl()
        const lines = Array.from({ length: 1 + rnd(3) }, (_, i) => `{"f":${f},"l":${i}}`)
        const ev = rnd(2) ? 'delta' : undefined
        text += `id: ${f + 1}` + nl() + (ev ? `event: ${ev}` + nl() : '') + lines.map((l) => 'data: ' + l + nl()).join('') + nl()
        want.push({ id: String(f + 1), event: ev, data: lines.join('\n') })
      }
      const p = new SSEParser()
      const got = []
      for (let i = 0; i < text.length;) {
        const n = 1 + rnd(12)
        got.push(...p.push(text.slice(i, i + n)))
        i += n
      }
      expect(got, JSON.stringify(text)).toEqual(want)
    }
  })
})

describe('EventStream', () => {
  it('resumes after a dropped connection from the last seq, without duplicates', async () => {
    const r = await run([
      { chunks: [frame(1, 'user_message', { text: 'hi' }), frame(2, 'text_delta', { text: 'Hel' }).slice(0, 20)], cut: true },
      // The server replays from after=1: seq 2 again in full, then more.
      { chunks: [frame(2, 'text_delta', { text: 'Hel' }), frame(3, 'text_delta', { text: 'lo' })], cut: true },
      // A replay overlapping what we had (a proxy that ignored after=): dropped.
      { chunks: [frame(1, 'user_message', { text: 'hi' }) + frame(2, 'text_delta', { text: 'Hel' }) + frame(3, 'text_delta', { text: 'lo' }) + frame(4, 'done', {})] },
    ], { untilEvents: 4 })
    expect(r.got.map((e) => e.seq)).toEqual([1, 2, 3, 4])
    expect(r.got.filter((e) => e.type === 'text_delta').map((e) => e.data.text).join('')).toBe('Hello')
    expect(r.urls).toEqual([
      '/v1/sessions/s1/events?after=0',
      '/v1/sessions/s1/events?after=1',
      '/v1/sessions/s1/events?after=3',
    ])
    expect(r.s.duplicates).toBe(3)
  })

  it('starts from a given position', async () => {
    const r = await run([{ chunks: [frame(5, 'x', {}), frame(6, 'y', {})] }], { after: 4, untilEvents: 2 })
    expect(r.urls[0]).toBe('/v1/sessions/s1/events?after=4')
    expect(r.got.map((e) => e.seq)).toEqual([5, 6])
  })

  it('treats a clean end before the terminal event as a restart and reconnects', async () => {
    const r = await run([
      { chunks: [frame(1, 'plan_ready', {})] }, // server shut down: stream ended cleanly
      { status: 503 }, // still starting
      { chunks: [frame(2, 'step_start', {}), frame(3, 'complete', {})] },
    ], { terminal: 'complete' })
    expect(r.got.map((e) => e.type)).toEqual(['plan_ready', 'step_start', 'complete'])
    expect(r.states.at(-1)).toBe('ended')
    expect(r.urls.map((u) => u.split('after=')[1])).toEqual(['0', '1', '1'])
  })

  it('backs off exponentially with a cap, and resets after progress', async () => {
    const r = await run([{ status: 500 }], { maxConnects: 8 })
    // random() = 0.5: 3/4 of 250·2^n, capped at 5 s.
    expect(r.delays.slice(0, 7)).toEqual([188, 375, 750, 1500, 3000, 3750, 3750])
    const r2 = await run([
      { status: 500 }, { status: 500 },
      { chunks: [frame(1, 'a', {})], cut: true },
      { chunks: [frame(2, 'b', {})] },
    ], { untilEvents: 2 })
    expect(r2.delays).toEqual([188, 375, 188])
  })

  it('honours Retry-After', async () => {
    const r = await run([{ status: 429, headers: { 'Retry-After': '3' } }, { chunks: [frame(1, 'a', {})] }], { untilEvents: 1 })
    expect(r.delays[0]).toBe(3000)
  })

  it('stops for good on errors a retry cannot fix', async () => {
    for (const status of [400, 401, 403, 404]) {
      const r = await run([{ status }])
      expect(r.states.at(-1)).toBe('failed')
      expect(r.urls.length).toBe(1)
    }
  })

  it('restarts after a terminal event when asked (a resumed run)', async () => {
    const urls: string[] = []
    const got: StreamEvent[] = []
    const conns: Conn[] = [
      { chunks: [frame(1, 'error', { message: 'x' })] },
      { chunks: [frame(2, 'resumed', {}), frame(3, 'complete', {})] },
    ]
    await new Promise<void>((resolve) => {
      let ended = 0
      const s = new EventStream({
        path: '/v1/runs/r/events', fetch: scriptedFetch(conns, urls), sleep: async () => {},
        isTerminal: (e) => e.type === 'error' || e.type === 'complete',
        onEvents: (evs) => got.push(...evs),
        onState: (st) => {
          if (st !== 'ended') return
          if (++ended === 1) s.restart()
          else resolve()
        },
      })
      s.start()
    })
    expect(got.map((e) => e.seq)).toEqual([1, 2, 3])
    expect(urls).toEqual(['/v1/runs/r/events?after=0', '/v1/runs/r/events?after=1'])
  })
})
