import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../api/types'
import { alwaysRule, newChatState, reduce, type ChatItem } from './reduce'

let seq = 0
function ev(type: string, data: unknown = {}): StreamEvent {
  return { seq: ++seq, type, data }
}

function strip(items: ChatItem[]) {
  return items.map((it) => {
    const { key: _key, ...rest } = it as ChatItem & { key: string }
    return rest
  })
}

describe('chat reducer', () => {
  it('shows a message only once consumed, queued until then, and dropped ones as notices', () => {
    seq = 0
    const st = newChatState()
    const m1 = ev('user_message', { text: 'first' })
    const m2 = ev('user_message', { text: 'second' })
    reduce(st, [m1, m2])
    expect(st.queued.map((q) => q.text)).toEqual(['first', 'second'])
    expect(st.items).toEqual([])
    reduce(st, [ev('message_consumed', { message_seq: m1.seq }), ev('text_delta', { text: 'hi' })])
    expect(st.queued.map((q) => q.text)).toEqual(['second'])
    expect(st.running).toBe(true)
    expect(strip(st.items)).toEqual([
      { kind: 'user', seq: m1.seq, text: 'first' },
      { kind: 'text', text: 'hi', streaming: true },
    ])
    reduce(st, [ev('message_dropped', { message_seq: m2.seq, reason: 'cancelled' }), ev('done', { stop_reason: 'cancelled' })])
    expect(st.queued).toEqual([])
    expect(st.running).toBe(false)
    expect(strip(st.items).slice(1)).toEqual([
      { kind: 'text', text: 'hi', streaming: false },
      { kind: 'notice', level: 'warn', code: 'dropped', text: 'second', params: { reason: 'cancelled' } },
      { kind: 'notice', level: 'info', code: 'cancelled', text: '' },
    ])
  })

  it('joins deltas, lets the complete block win, and separates thinking from text', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [
      ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }), ev('turn_start', { turn_number: 1 }),
      ev('thinking_delta', { text: 'let me ' }), ev('thinking_delta', { text: 'see' }), ev('thinking', { text: 'let me see' }),
      ev('text_delta', { text: 'Hel' }), ev('text_delta', { text: 'lo' }), ev('text', { text: 'Hello!' }),
    ])
    expect(strip(st.items).slice(1)).toEqual([
      { kind: 'thinking', text: 'let me see', streaming: false },
      { kind: 'text', text: 'Hello!', streaming: false },
    ])
  })

  it('discards the deltas of a failed attempt on retry', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [
      ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }), ev('turn_start', { turn_number: 1 }),
      ev('text_delta', { text: 'partial ans' }),
      ev('retry', { turn_number: 1, attempt: 1, delay_ms: 500, status: 'failed', error: 'overloaded' }),
      ev('text_delta', { text: 'full answer' }), ev('text', { text: 'full answer' }),
    ])
    const texts = st.items.filter((i) => i.kind === 'text').map((i) => (i as { text: string }).text)
    expect(texts).toEqual(['full answer'])
    expect(st.items.some((i) => i.kind === 'notice' && i.code === 'retry')).toBe(true)
  })

  it('follows a tool call through its permission request to its result', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [
      ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }),
      ev('tool_use', { id: 't1', tool_name: 'Bash', input: { command: 'ls' } }),
      ev('permission_request', { id: 'perm_1', tool_name: 'Bash', input: { command: 'ls' }, message: 'm', tool_use_id: 't1' }),
    ])
    let tool = st.items[1] as Extract<ChatItem, { kind: 'tool' }>
    expect(tool.status).toBe('waiting')
    expect(tool.permission?.status).toBe('pending')
    const before = st.items[1]
    reduce(st, [
      ev('tool_progress', { id: 't1', tool_name: 'Bash', detail: 'a' }),
      ev('tool_result', { id: 't1', tool_name: 'Bash', output: 'a\nb', is_error: false, duration_ms: 12 }),
    ])
    tool = st.items[1] as Extract<ChatItem, { kind: 'tool' }>
    expect(tool).not.toBe(before) // replaced, so a view sees the change
    expect(tool).toMatchObject({ status: 'done', output: 'a\nb', durationMs: 12, progress: ['a'] })
    expect(tool.permission?.status).toBe('allowed')

    // A denied call; a request still open at done expires.
    reduce(st, [
      ev('tool_use', { id: 't2', tool_name: 'Write', input: {} }),
      ev('permission_request', { id: 'perm_2', tool_name: 'Write', input: {}, message: 'm', tool_use_id: 't2' }),
      ev('tool_result', { id: 't2', tool_name: 'Write', output: 'denied', is_error: true, denied: true, duration_ms: 0 }),
      ev('tool_use', { id: 't3', tool_name: 'Edit', input: {} }),
      ev('permission_request', { id: 'perm_3', tool_name: 'Edit', input: {}, message: 'm', tool_use_id: 't3' }),
      ev('done', { stop_reason: 'cancelled' }),
    ])
    const byId = (id: string) => st.items.find((i) => i.kind === 'tool' && i.id === id) as Extract<ChatItem, { kind: 'tool' }>
    expect(byId('t2')).toMatchObject({ status: 'denied', permission: { status: 'denied' } })
    expect(byId('t3')).toMatchObject({ status: 'cancelled', permission: { status: 'expired' } })
  })

  it('sums tokens and cost over turn_end events', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [
      ev('turn_end', { input_tokens: 100, output_tokens: 10, cost_usd: 0.5, cache_read_tokens: 3 }),
      ev('turn_end', { input_tokens: 20, output_tokens: 5, cost_usd: 0.25 }),
    ])
    expect(st.usage).toEqual({ input: 120, output: 15, cacheRead: 3, cacheWrite: 0, cost: 0.75, turns: 2 })
  })

  it('ignores events it has seen, and a replay in one batch equals a live follow', () => {
    seq = 0
    const events = [
      ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }), ev('turn_start', {}),
      ev('text_delta', { text: 'a' }), ev('text_delta', { text: 'b' }),
      ev('tool_use', { id: 't', tool_name: 'Read', input: {} }), ev('tool_result', { id: 't', tool_name: 'Read', output: 'x', is_error: false, duration_ms: 1 }),
      ev('text_delta', { text: 'c' }), ev('text', { text: 'c' }), ev('turn_end', { input_tokens: 1, output_tokens: 1, cost_usd: 0 }), ev('done', {}),
    ]
    const live = newChatState()
    for (const e of events) reduce(live, [e])
    const replay = newChatState()
    reduce(replay, events)
    reduce(replay, events.slice(3)) // a reconnect that replays what we had
    expect(strip(replay.items)).toEqual(strip(live.items))
    expect(replay.lastSeq).toBe(live.lastSeq)
    expect(replay.usage).toEqual(live.usage)
  })
})

describe('context and suggestions', () => {
  it('draws a compaction as a divider with its level and tokens before and after', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [
      ev('compaction', { level: 'summary', trigger: 'threshold', tokens_before: 150000, tokens_after: 12000, messages_before: 80, messages_after: 4, model: 'm', note: '' }),
      ev('compaction', {}),
    ])
    expect(strip(st.items)).toEqual([
      { kind: 'compaction', level: 'summary', trigger: 'threshold', tokensBefore: 150000, tokensAfter: 12000, messagesBefore: 80, messagesAfter: 4, note: undefined },
      { kind: 'compaction', level: '', trigger: '', tokensBefore: 0, tokensAfter: 0, messagesBefore: 0, messagesAfter: 0, note: undefined },
    ])
  })

  it.each([
    // [warnings, compaction tokens_after or null, the badge after]
    ['80% of the limit', [{ used_tokens: 160000, window: 200000, limit: 180000, threshold: 0.8 }], null, { percent: 89, used: 160000, limit: 180000 }],
    ['the later warning wins', [{ used_tokens: 144000, window: 200000, limit: 180000, threshold: 0.8 }, { used_tokens: 171000, window: 200000, limit: 180000, threshold: 0.95 }], null, { percent: 95, used: 171000, limit: 180000 }],
    ['a compaction under the warning clears it', [{ used_tokens: 144000, window: 200000, limit: 180000, threshold: 0.8 }], 20000, null],
    ['a compaction that did not get under it keeps it, updated', [{ used_tokens: 144000, window: 200000, limit: 180000, threshold: 0.8 }], 170000, { percent: 94, used: 170000, limit: 180000 }],
    ['no limit: the threshold', [{ used_tokens: 0, window: 0, limit: 0, threshold: 0.8 }], null, { percent: 80, used: 0, limit: 0 }],
  ])('token_warning: %s', (_name, warnings, after, want) => {
    seq = 0
    const st = newChatState()
    reduce(st, warnings.map((w) => ev('token_warning', w)))
    const rows = st.items.filter((it) => it.kind === 'token_warning')
    expect(rows.map((it) => (it as { threshold: number }).threshold)).toEqual(warnings.map((w) => Math.round(w.threshold * 100)))
    if (after !== null) reduce(st, [ev('compaction', { level: 'summary', tokens_before: 1, tokens_after: after })])
    expect(st.contextWarning).toEqual(want)
  })

  it('offers up to three suggestions after a turn, cleaned, until the next message', () => {
    seq = 0
    const st = newChatState()
    reduce(st, [ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }), ev('text', { text: 'a' }), ev('done', {})])
    reduce(st, [ev('suggestions', { suggestions: ['  Run the tests ', 'Run the tests', '', 42, 'Explain', 'Commit', 'Push'] })])
    expect(st.suggestions).toEqual(['Run the tests', 'Explain', 'Commit'])
    // Not a row of the conversation.
    expect(st.items.map((it) => it.kind)).toEqual(['user', 'text'])
    // A later suggestions event replaces them; a malformed one clears them.
    reduce(st, [ev('suggestions', { suggestions: ['Deploy'] })])
    expect(st.suggestions).toEqual(['Deploy'])
    reduce(st, [ev('suggestions', { suggestions: 'not a list' })])
    expect(st.suggestions).toEqual([])
    reduce(st, [ev('suggestions', { suggestions: ['Again'] })])
    reduce(st, [ev('user_message', { text: 'next' })])
    expect(st.suggestions).toEqual([])
  })

  it('a replay gives the same suggestions and warning as following live', () => {
    seq = 0
    const events = [
      ev('user_message', { text: 'q' }), ev('message_consumed', { message_seq: 1 }),
      ev('token_warning', { used_tokens: 150, window: 200, limit: 180, threshold: 0.8 }), ev('done', {}),
      ev('suggestions', { suggestions: ['a', 'b'] }),
    ]
    const live = newChatState()
    for (const e of events) reduce(live, [e])
    const replay = newChatState()
    reduce(replay, events)
    expect(replay.suggestions).toEqual(live.suggestions)
    expect(replay.contextWarning).toEqual(live.contextWarning)
    expect(strip(replay.items)).toEqual(strip(live.items))
  })
})

describe('alwaysRule', () => {
  it.each([
    ['Bash', { command: 'git status' }, 'Bash(git status)'],
    ['Bash', { command: '  ls -la ' }, 'Bash(ls -la)'],
    ['Bash', { command: 'echo (x)' }, ''],
    ['Bash', { command: 'a\nb' }, ''],
    ['Bash', {}, ''],
    ['Write', { file_path: '/x' }, 'Write'],
  ])('%s %j -> %s', (tool, input, want) => {
    expect(alwaysRule(tool, input)).toBe(want)
  })
})
