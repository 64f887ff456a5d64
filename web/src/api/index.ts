// The app's one API client and stream factory, wired to the token store.

import { Client } from './http'
import { EventStream, type StreamOptions } from './stream'
import { useAuth } from '../stores/auth'

let client: Client | null = null

export function api(): Client {
  if (!client) {
    const auth = useAuth()
    client = new Client({
      baseURL: import.meta.env.VITE_WEFT_BASE ?? '',
      token: () => auth.token,
      onAuthError: () => auth.require(),
    })
  }
  return client
}

/** Opens an event stream with the app's credentials. */
export function openStream(opts: Omit<StreamOptions, 'headers' | 'baseURL'>): EventStream {
  const auth = useAuth()
  const s = new EventStream({
    ...opts,
    baseURL: import.meta.env.VITE_WEFT_BASE ?? '',
    headers: (): Record<string, string> => (auth.token ? { Authorization: `Bearer ${auth.token}` } : {}),
    onState: (state, d) => {
      if (state === 'failed' && d?.error && 'status' in d.error && ((d.error as any).status === 401)) auth.require()
      opts.onState?.(state, d)
    },
  })
  return s.start()
}
