// The chat reducer: a session's events, in seq order, folded into what the
// conversation shows. It is pure with respect to its input (the same events
// always give the same view), so every tab following a session shows the
// same thing, and a replay after a reconnect rebuilds exactly what a live
// follower saw.
//
// Seed 002's send/display separation: a message the user sends appears in
// the conversation only when its message_consumed event arrives; until
// then (user_message seen, turn not started) it is listed as queued.
//
// Items are replaced, never mutated, when they change, so a view can tell a
// changed row by identity; the items array itself is updated in place for
// speed (a 5,000-event replay) and `version` counts the changes.

import type {
  CheckpointData, CompactionData, DoneData, ErrorData, MessageData, NotifyData, PermissionRequestData, RetryData, StreamEvent,
  SuggestionsData, TextData, TokenWarningData, ToolProgressData, ToolResultData, ToolUseData, TurnEndData,
} from '../../api/types'

export type Answer = 'pending' | 'allowed' | 'denied' | 'expired'

export interface PermissionState {
  id: string
  kind: 'permission' | 'checkpoint'
  toolName: string
  input: unknown
  message: string
  reason?: string
  status: Answer
}

export type ToolStatus = 'running' | 'waiting' | 'done' | 'error' | 'denied' | 'cancelled'

export type ChatItem =
  | { kind: 'user'; key: string; seq: number; text: string }
  | { kind: 'text'; key: string; text: string; streaming: boolean }
  | { kind: 'thinking'; key: string; text: string; streaming: boolean }
  | {
      kind: 'tool'; key: string; id: string; name: string; input: unknown; progress: string[]; status: ToolStatus
      output?: string; durationMs?: number; permission?: PermissionState
    }
  | { kind: 'permission'; key: string; permission: PermissionState }
  | { kind: 'notice'; key: string; level: 'info' | 'warn' | 'error'; code: string; text: string; hint?: string; params?: Record<string, unknown> }
  | {
      kind: 'compaction'; key: string; level: string; trigger: string; tokensBefore: number; tokensAfter: number
      messagesBefore: number; messagesAfter: number; note?: string
    }
  | { kind: 'token_warning'; key: string; percent: number; used: number; limit: number; threshold: number }
  | { kind: 'todos'; key: string; payload: unknown }
  | { kind: 'ask'; key: string; payload: unknown }

export interface Usage {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  cost: number
  turns: number
}

export interface Queued { seq: number; text: string }

/** How full the context is, from the last token_warning (cleared by a compaction). */
export interface ContextWarning { percent: number; used: number; limit: number }

/** At most this many suggestions are offered. */
export const MAX_SUGGESTIONS = 3

export interface ChatState {
  items: ChatItem[]
  /** Messages sent but not consumed yet (seed 002: shown as pending). */
  queued: Queued[]
  running: boolean
  usage: Usage
  /** The last token_warning, until a compaction brings the context back down. */
  contextWarning: ContextWarning | null
  /** Follow-ups offered after the last turn (the suggestions event); gone once the next message is sent. */
  suggestions: string[]
  lastSeq: number
  events: number
  version: number
  // internal indexes
  tools: Map<string, number>
  perms: Map<string, number>
  text: number
  thinking: number
  attemptStart: number
}

export function newChatState(): ChatState {
  return {
    items: [], queued: [], running: false,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, turns: 0 },
    contextWarning: null, suggestions: [],
    lastSeq: 0, events: 0, version: 0,
    tools: new Map(), perms: new Map(), text: -1, thinking: -1, attemptStart: 0,
  }
}

const MAX_PROGRESS = 200

function push(st: ChatState, item: ChatItem): number {
  st.items.push(item)
  return st.items.length - 1
}

function replace(st: ChatState, i: number, patch: Partial<ChatItem>) {
  st.items[i] = { ...st.items[i], ...patch } as ChatItem
}

function closeStreams(st: ChatState) {
  for (const idx of [st.text, st.thinking]) {
    if (idx >= 0 && (st.items[idx] as { streaming?: boolean }).streaming) replace(st, idx, { streaming: false })
  }
  st.text = -1
  st.thinking = -1
}

/** Applies events in order; events at or before lastSeq are ignored. */
export function reduce(st: ChatState, events: StreamEvent[]): ChatState {
  for (const ev of events) {
    if (ev.seq <= st.lastSeq) continue
    st.lastSeq = ev.seq
    st.events++
    apply(st, ev)
  }
  st.version++
  return st
}

function apply(st: ChatState, ev: StreamEvent) {
  const key = `e${ev.seq}`
  switch (ev.type) {
    case 'user_message': {
      // A new message answers (or ignores) the last turn's suggestions.
      st.suggestions = []
      st.queued.push({ seq: ev.seq, text: (ev.data as TextData).text ?? '' })
      break
    }
    case 'message_consumed': {
      st.suggestions = []
      const m = ev.data as MessageData
      const i = st.queued.findIndex((q) => q.seq === m.message_seq)
      const text = i >= 0 ? st.queued[i].text : ''
      if (i >= 0) st.queued.splice(i, 1)
      closeStreams(st)
      push(st, { kind: 'user', key, seq: m.message_seq, text })
      st.running = true
      st.attemptStart = st.items.length
      break
    }
    case 'message_dropped': {
      const m = ev.data as MessageData
      const i = st.queued.findIndex((q) => q.seq === m.message_seq)
      if (i >= 0) {
        const q = st.queued.splice(i, 1)[0]
        push(st, { kind: 'notice', key, level: 'warn', code: 'dropped', text: q.text, params: { reason: m.reason ?? '' } })
      }
      break
    }
    case 'turn_start': {
      closeStreams(st)
      st.attemptStart = st.items.length
      break
    }
    case 'text_delta':
    case 'thinking_delta': {
      const kind = ev.type === 'text_delta' ? 'text' : 'thinking'
      const idxName = kind === 'text' ? 'text' : 'thinking'
      const t = (ev.data as TextData).text ?? ''
      const cur = st[idxName]
      if (cur >= 0) {
        const it = st.items[cur] as { text: string }
        replace(st, cur, { text: it.text + t })
      } else {
        // A text block closes the thinking before it, and vice versa.
        closeStreams(st)
        st[idxName] = push(st, { kind, key, text: t, streaming: true })
      }
      break
    }
    case 'text':
    case 'thinking': {
      const kind = ev.type as 'text' | 'thinking'
      const t = (ev.data as TextData).text ?? ''
      const cur = st[kind]
      // The complete block is authoritative over the deltas.
      if (cur >= 0) replace(st, cur, { text: t, streaming: false })
      else if (t !== '') push(st, { kind, key, text: t, streaming: false })
      st[kind] = -1
      break
    }
    case 'tool_use': {
      closeStreams(st)
      const d = ev.data as ToolUseData
      const i = push(st, { kind: 'tool', key, id: d.id, name: d.tool_name, input: d.input, progress: [], status: 'running' })
      if (d.id) st.tools.set(d.id, i)
      break
    }
    case 'tool_progress': {
      const d = ev.data as ToolProgressData
      const i = st.tools.get(d.id)
      if (i === undefined) break
      const it = st.items[i] as Extract<ChatItem, { kind: 'tool' }>
      const progress = [...it.progress, d.detail]
      replace(st, i, { progress: progress.length > MAX_PROGRESS ? progress.slice(-MAX_PROGRESS) : progress })
      break
    }
    case 'tool_result': {
      const d = ev.data as ToolResultData
      const i = st.tools.get(d.id)
      const status: ToolStatus = d.denied ? 'denied' : d.is_error ? 'error' : 'done'
      if (i === undefined) {
        push(st, { kind: 'tool', key, id: d.id, name: d.tool_name, input: undefined, progress: [], status, output: d.output, durationMs: d.duration_ms })
        break
      }
      const it = st.items[i] as Extract<ChatItem, { kind: 'tool' }>
      const permission = it.permission && it.permission.status === 'pending'
        ? { ...it.permission, status: (d.denied ? 'denied' : 'allowed') as Answer }
        : it.permission
      replace(st, i, { status, output: d.output, durationMs: d.duration_ms, permission })
      break
    }
    case 'permission_request':
    case 'checkpoint': {
      const isCk = ev.type === 'checkpoint'
      const d = ev.data as PermissionRequestData & CheckpointData
      const p: PermissionState = {
        id: d.id, kind: isCk ? 'checkpoint' : 'permission', toolName: d.tool_name, input: d.input,
        message: d.message, reason: d.reason, status: 'pending',
      }
      const toolID = isCk ? d.tool_call_id : d.tool_use_id
      const ti = toolID ? st.tools.get(toolID) : undefined
      if (ti !== undefined) {
        replace(st, ti, { permission: p, status: 'waiting' })
        st.perms.set(d.id, ti)
      } else {
        st.perms.set(d.id, push(st, { kind: 'permission', key, permission: p }))
      }
      break
    }
    case 'compaction': {
      const d = ev.data as CompactionData
      push(st, {
        kind: 'compaction', key, level: d.level ?? '', trigger: d.trigger ?? '', tokensBefore: d.tokens_before || 0,
        tokensAfter: d.tokens_after || 0, messagesBefore: d.messages_before || 0, messagesAfter: d.messages_after || 0,
        note: d.note || undefined,
      })
      // The agent re-arms its warnings when a compaction brings the
      // context back under them; so does the badge.
      const w = st.contextWarning
      if (w && w.limit > 0) {
        const percent = pct(d.tokens_after || 0, w.limit)
        st.contextWarning = percent >= w.percent ? { ...w, percent, used: d.tokens_after || 0 } : null
      } else st.contextWarning = null
      break
    }
    case 'token_warning': {
      const d = ev.data as TokenWarningData
      const limit = d.limit || d.window || 0
      const w = { percent: limit > 0 ? pct(d.used_tokens || 0, limit) : Math.round((d.threshold || 0) * 100), used: d.used_tokens || 0, limit }
      st.contextWarning = w
      push(st, { kind: 'token_warning', key, ...w, threshold: Math.round((d.threshold || 0) * 100) })
      break
    }
    case 'suggestions': {
      const d = ev.data as SuggestionsData
      const list = Array.isArray(d?.suggestions) ? d.suggestions : []
      // Model-written: strings only, trimmed, no empties or repeats.
      const seen = new Set<string>()
      st.suggestions = []
      for (const s of list) {
        if (typeof s !== 'string') continue
        const t = s.trim()
        if (!t || seen.has(t)) continue
        seen.add(t)
        st.suggestions.push(t)
        if (st.suggestions.length === MAX_SUGGESTIONS) break
      }
      break
    }
    case 'ask_user':
      push(st, { kind: 'ask', key, payload: (ev.data as NotifyData).payload })
      break
    case 'todos':
      push(st, { kind: 'todos', key, payload: (ev.data as NotifyData).payload })
      break
    case 'retry': {
      // The failed attempt's deltas are void (agent.RetryData).
      const d = ev.data as RetryData
      const kept = st.items.slice(st.attemptStart).filter((it) => it.kind !== 'text' && it.kind !== 'thinking')
      st.items.length = st.attemptStart
      st.items.push(...kept)
      rebuildIndexes(st)
      st.text = -1
      st.thinking = -1
      push(st, { kind: 'notice', key, level: 'warn', code: 'retry', text: d.error, params: { status: d.status, delay: d.delay_ms } })
      st.attemptStart = st.items.length
      break
    }
    case 'turn_end': {
      const d = ev.data as TurnEndData
      const u = st.usage
      st.usage = {
        input: u.input + (d.input_tokens || 0), output: u.output + (d.output_tokens || 0),
        cacheRead: u.cacheRead + (d.cache_read_tokens || 0), cacheWrite: u.cacheWrite + (d.cache_write_tokens || 0),
        cost: u.cost + (d.cost_usd || 0), turns: u.turns + 1,
      }
      break
    }
    case 'error': {
      const d = ev.data as ErrorData
      closeStreams(st)
      push(st, { kind: 'notice', key, level: 'error', code: 'error', text: d.error, hint: d.hint })
      break
    }
    case 'done': {
      const d = ev.data as DoneData
      closeStreams(st)
      st.running = false
      // Whatever still waits can no longer be answered.
      for (const [id, i] of st.perms) {
        const it = st.items[i]
        const p = it.kind === 'tool' || it.kind === 'permission' ? it.permission : undefined
        if (p && p.status === 'pending') replace(st, i, { permission: { ...p, status: 'expired' } })
        st.perms.delete(id)
      }
      for (const i of st.tools.values()) {
        const it = st.items[i]
        if (it.kind === 'tool' && (it.status === 'running' || it.status === 'waiting')) replace(st, i, { status: 'cancelled' })
      }
      st.tools.clear()
      if (d.stop_reason === 'cancelled') push(st, { kind: 'notice', key, level: 'info', code: 'cancelled', text: '' })
      else if (d.stop_reason === 'max_turns') push(st, { kind: 'notice', key, level: 'warn', code: 'max_turns', text: '' })
      break
    }
    default:
      // Event types this view does not show (metadata, future types).
      break
  }
}

function pct(used: number, limit: number) {
  return Math.min(999, Math.round((used / limit) * 100))
}

function rebuildIndexes(st: ChatState) {
  st.tools.clear()
  const perms = new Map<string, number>()
  st.items.forEach((it, i) => {
    if (it.kind === 'tool') st.tools.set(it.id, i)
    const p = it.kind === 'tool' || it.kind === 'permission' ? it.permission : undefined
    if (p && st.perms.has(p.id)) perms.set(p.id, i)
  })
  st.perms = perms
}

/**
 * The rule "Always allow" adds for a call: the exact command for Bash (a
 * rule for every command would be far more than the person approved; a
 * command the rule syntax cannot hold gets none, ""), else the tool.
 */
export function alwaysRule(toolName: string, input: unknown): string {
  const inp = (input ?? {}) as Record<string, unknown>
  if (toolName === 'Bash') {
    const cmd = typeof inp.command === 'string' ? inp.command.trim() : ''
    return cmd && !/[()\n]/.test(cmd) ? `Bash(${cmd})` : ''
  }
  return toolName
}
