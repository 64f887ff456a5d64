import { describe, expect, it } from 'vitest'
import type { Session } from '../api/types'
import { sessionsForFlow } from './flowApi'

const s = (id: string, updated: string, wf?: string): Session => ({
  session_id: id, created_at: updated, updated_at: updated, message_count: 1, last_seq: 1,
  workflow_tool: wf ? { workflow_id: wf, tool_name: 'run_current_flow' } : undefined,
})

describe('sessionsForFlow', () => {
  it('keeps the sessions bound to the flow, most recently updated first', () => {
    const all = [
      s('a', '2026-12-01T10:00:00Z', 'wf_1'), s('b', '2026-12-01T12:00:00Z'), s('c', '2026-12-01T11:00:00Z', 'wf_2'),
      s('d', '2026-12-01T13:00:00Z', 'wf_1'), s('e', '2026-12-01T09:00:00Z', 'wf_1'),
    ]
    expect(sessionsForFlow(all, 'wf_1').map((x) => x.session_id)).toEqual(['d', 'a', 'e'])
    expect(sessionsForFlow(all, 'wf_3')).toEqual([])
    // The input is left as it was.
    expect(all.map((x) => x.session_id)).toEqual(['a', 'b', 'c', 'd', 'e'])
  })
})
