import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../api/types'
import { layout, newRunView, reduceRun, terminalRunEvent } from './reduce'

let seq = 0
const ev = (type: string, data: unknown = {}): StreamEvent => ({ seq: ++seq, type, data })

const plan = {
  steps: [
    { id: 'a', tool: 'Grep', args: { pattern: 'x' } },
    { id: 'b', tool: 'Bash', args: { command: 'echo {{steps.a.result}}' }, dependsOn: ['a'], requiresApproval: true },
    { id: 'c', tool: 'Glob', args: { pattern: '*' }, dependsOn: ['a'] },
  ],
}

describe('run reducer', () => {
  it('streams the plan, waits at the gate, runs the steps and completes', () => {
    seq = 0
    const v = newRunView()
    reduceRun(v, [ev('plan_token', { text: '{"steps":' }), ev('plan_token', { text: '[...]}' })])
    expect(v.planText).toBe('{"steps":[...]}')
    expect(v.status).toBe('planning')
    reduceRun(v, [ev('plan_ready', { plan }), ev('plan_approval_requested', { gate: 'plan', reason: 'review', plan })])
    expect(v.status).toBe('awaiting_approval')
    expect(v.planGate?.reason).toBe('review')
    expect(v.steps.map((s) => [s.id, s.status, s.dependsOn])).toEqual([['a', 'pending', []], ['b', 'pending', ['a']], ['c', 'pending', ['a']]])

    reduceRun(v, [
      ev('plan_ready', { plan, edited: true }),
      ev('step_start', { index: 0, stepId: 'a', tool: 'Grep', args: { pattern: 'x' } }),
    ])
    expect(v.planGate).toBeUndefined()
    expect(v.planEdited).toBe(true)
    expect(v.status).toBe('running')
    reduceRun(v, [
      ev('step_complete', { index: 0, stepId: 'a', status: 'completed', result: 'found', startedAt: 't0', finishedAt: 't1' }),
      ev('step_approval_requested', { gate: 'step', index: 1, stepId: 'b', tool: 'Bash', args: { command: 'echo found' } }),
      ev('step_start', { index: 2, stepId: 'c', tool: 'Glob', args: { pattern: '*' } }),
      ev('permission_request', { id: 'perm_1', tool_name: 'Glob', input: {}, message: 'm', tool_use_id: 'x' }),
    ])
    const byId = Object.fromEntries(v.steps.map((s) => [s.id, s]))
    expect(byId.a).toMatchObject({ status: 'completed', result: 'found', finishedAt: 't1' })
    // A step gate shows the rendered args, not the template.
    expect(byId.b).toMatchObject({ status: 'awaiting', args: { command: 'echo found' } })
    expect(byId.c.status).toBe('running')
    expect(v.permissions.map((p) => [p.id, p.status])).toEqual([['perm_1', 'pending']])

    reduceRun(v, [
      ev('step_complete', { index: 2, stepId: 'c', status: 'completed', result: ['f'] }),
      ev('step_start', { index: 1, stepId: 'b', tool: 'Bash', args: { command: 'echo found' } }),
      ev('step_complete', { index: 1, stepId: 'b', status: 'completed', result: 'found\n' }),
      ev('complete', { result: { b: 'found\n', c: ['f'] }, summary: 's' }),
    ])
    expect(v.status).toBe('completed')
    expect(v.result).toEqual({ b: 'found\n', c: ['f'] })
    expect(v.permissions[0].status).toBe('expired')
  })

  it('ends on error, cancel and interrupt, and starts over on resume keeping kept steps', () => {
    for (const end of ['error', 'cancelled', 'interrupted']) {
      seq = 0
      const v = newRunView()
      reduceRun(v, [
        ev('plan_ready', { plan }),
        ev('step_start', { index: 0, stepId: 'a', tool: 'Grep' }),
        ev('step_complete', { index: 0, stepId: 'a', status: 'completed', result: 1 }),
        ev('step_start', { index: 2, stepId: 'c', tool: 'Glob' }),
        ev(end, { message: 'stopped' }),
      ])
      expect(terminalRunEvent(end)).toBe(true)
      expect(v.status).toBe(end === 'error' ? 'failed' : end)
      expect(v.endMessage).toBe('stopped')
      expect(v.steps.find((s) => s.id === 'c')?.status).toBe('cancelled')

      reduceRun(v, [ev('resumed', { from: 'resume', keptSteps: ['a'] }), ev('plan_approval_requested', { reason: 'resume', plan })])
      expect(v.status).toBe('awaiting_approval')
      expect(v.endMessage).toBeUndefined()
      expect(v.steps.map((s) => s.status)).toEqual(['completed', 'pending', 'pending'])
      expect(v.resumes).toBe(1)
    }
  })

  it('ignores events already seen', () => {
    seq = 0
    const evs = [ev('plan_token', { text: 'ab' }), ev('plan_token', { text: 'cd' })]
    const v = newRunView()
    reduceRun(v, evs)
    reduceRun(v, evs)
    expect(v.planText).toBe('abcd')
  })
})

describe('layout', () => {
  it('puts each step one column after its deepest dependency', () => {
    const pos = layout([
      { id: 'a', dependsOn: [] }, { id: 'b', dependsOn: ['a'] }, { id: 'c', dependsOn: ['a'] },
      { id: 'd', dependsOn: ['b', 'c'] }, { id: 'e', dependsOn: [] }, { id: 'f', dependsOn: ['missing'] },
    ], 100, 10)
    expect(Object.fromEntries(pos)).toEqual({
      a: { x: 0, y: 0 }, b: { x: 100, y: 0 }, c: { x: 100, y: 10 }, d: { x: 200, y: 0 }, e: { x: 0, y: 10 }, f: { x: 0, y: 20 },
    })
  })

  it('survives a cycle (a bad edit)', () => {
    const pos = layout([{ id: 'a', dependsOn: ['b'] }, { id: 'b', dependsOn: ['a'] }])
    expect(pos.size).toBe(2)
  })
})
