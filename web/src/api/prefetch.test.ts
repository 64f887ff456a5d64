import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createPinia, setActivePinia } from 'pinia'
import { adoptSession, chatSessionOf, dropPrefetch, prefetchSession } from './prefetch'
import type { StreamEvent } from './types'

const frame = (seq: number, type: string, data: unknown) => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`

// A server with one session "s1" of three events: the stream sends them,
// then stays open (a live session); GET /v1/sessions/s1 is its record.
function server(calls: string[]) {
  return vi.fn(async (input: RequestInfo | URL) => {
    const url = String(input)
    calls.push(url)
    if (url.includes('/events')) {
      if (!url.includes('/s1/')) return new Response('{"error":{"type":"not_found_error","message":"no session"}}', { status: 404 })
      const enc = new TextEncoder()
      const body = new ReadableStream<Uint8Array>({
        start(ctl) {
          ctl.enqueue(enc.encode(frame(1, 'user_message', { text: 'a' }) + frame(2, 'message_consumed', { message_seq: 1 })))
          ctl.enqueue(enc.encode(frame(3, 'done', {})))
        },
      })
      return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } })
    }
    return new Response(JSON.stringify({ session_id: 's1', last_seq: 3 }), { status: 200, headers: { 'Content-Type': 'application/json' } })
  })
}

const settle = () => new Promise((r) => setTimeout(r, 20))

describe('chatSessionOf', () => {
  it.each([
    ['/chat/s1', 's1'], ['/chat/s%3A1/', 's:1'], ['/chat', ''], ['/chat/', ''], ['/runs/r1', ''], ['/chat/a/b', ''], ['/chat/%E0%A4%A', ''],
  ])('%s -> %j', (p, want) => expect(chatSessionOf(p)).toBe(want))
})

describe('prefetching a session for the Chat view', () => {
  let calls: string[]
  beforeEach(() => {
    setActivePinia(createPinia())
    calls = []
    vi.stubGlobal('fetch', server(calls))
  })
  afterEach(() => {
    dropPrefetch()
    vi.unstubAllGlobals()
  })

  it('hands over what arrived before the view, then what comes after, once and in order, with no second request', async () => {
    prefetchSession('s1')
    await settle()
    const got: StreamEvent[] = []
    const states: string[] = []
    const pre = adoptSession('s1', (evs) => got.push(...evs), (s) => states.push(s))
    expect(pre).not.toBeNull()
    expect(got.map((e) => e.seq)).toEqual([1, 2, 3])
    expect(states).toEqual(['open'])
    expect((await pre!.session).last_seq).toBe(3)
    expect(calls.filter((u) => u.includes('/events'))).toHaveLength(1)
    expect(calls.filter((u) => u.endsWith('/v1/sessions/s1'))).toHaveLength(1)
    // Adopted once: a second view opening the session opens its own.
    expect(adoptSession('s1', () => {}, () => {})).toBeNull()
    pre!.stream.close()
  })

  it('is not adopted for another session, nor once it failed', async () => {
    prefetchSession('s1')
    expect(adoptSession('other', () => {}, () => {})).toBeNull()
    prefetchSession('gone')
    await settle()
    expect(adoptSession('gone', () => {}, () => {})).toBeNull()
  })
})
