// A cold tab opened on a session's URL (/chat/<id>) starts that session's
// event stream and record as soon as the app starts, while the Chat view's
// code is still loading; the view adopts them when it mounts instead of
// asking again. The server's replay of a long session then overlaps with
// loading and compiling the view, instead of following it.

import { api, openStream } from '.'
import type { EventStream, StreamOptions, StreamState } from './stream'
import type { Session, StreamEvent } from './types'

type OnState = NonNullable<StreamOptions['onState']>

interface Prefetch {
  id: string
  stream: EventStream
  session: Promise<Session>
  buffered: StreamEvent[]
  state?: Parameters<OnState>
  onEvents?: (evs: StreamEvent[]) => void
  onState?: OnState
}

let pending: Prefetch | null = null

/** The session id of a chat URL, or "" (the paths of router.ts's chat route). */
export function chatSessionOf(pathname: string): string {
  const m = /^\/chat\/([^/]+)\/?$/.exec(pathname)
  if (!m) return ''
  try {
    return decodeURIComponent(m[1])
  } catch {
    return ''
  }
}

/** Starts following session id now, for the Chat view to adopt. */
export function prefetchSession(id: string) {
  pending?.stream.close()
  const p: Prefetch = {
    id, buffered: [],
    session: api().getSession(id),
    stream: undefined as unknown as EventStream,
  }
  // Errors are the adopter's to show; until then they must not be unhandled.
  p.session.catch(() => {})
  p.stream = openStream({
    path: `/v1/sessions/${encodeURIComponent(id)}/events`,
    after: 0,
    onEvents: (evs) => {
      if (p.onEvents) p.onEvents(evs)
      else p.buffered.push(...evs)
    },
    onState: (s, d) => {
      p.state = [s, d]
      p.onState?.(s, d)
    },
  })
  pending = p
}

/**
 * Hands the prefetched stream of session id to its consumer: the events
 * that arrived so far are delivered at once, in order, then the later ones
 * as they come. null when nothing usable was prefetched for id (another
 * session, or a stream that failed: the caller opens its own).
 */
export function adoptSession(id: string, onEvents: (evs: StreamEvent[]) => void, onState: OnState):
  { stream: EventStream; session: Promise<Session> } | null {
  const p = pending
  pending = null
  if (!p) return null
  if (p.id !== id || p.state?.[0] === 'failed') {
    p.stream.close()
    return null
  }
  p.onEvents = onEvents
  p.onState = onState
  if (p.state) onState(...p.state)
  if (p.buffered.length) onEvents(p.buffered.splice(0))
  return { stream: p.stream, session: p.session }
}

/** Drops a prefetch nobody adopted (the app went elsewhere). */
export function dropPrefetch() {
  pending?.stream.close()
  pending = null
}

export type { StreamState }
