import { describe, expect, it } from 'vitest'
import { newRunState, reduceRun, flowCallRunId } from './flowRun'
import { compile } from './flowCompile'
import { inputNames } from './flowSchema'
import { templateGraph, templates } from './flowTemplates'
import type { StreamEvent } from '../api/types'

let seq = 0
const ev = (type: string, data: unknown): StreamEvent => ({ seq: ++seq, type, data })
const plan = { steps: [{ id: 'a', tool: 'Grep' }, { id: 'b', tool: 'Write', dependsOn: ['a'], requiresApproval: true }] }

describe('reduceRun', () => {
  it('follows a run through a step gate, a permission request and completion', () => {
    seq = 0
    const events = [
      ev('plan_ready', { plan }),
      ev('step_start', { index: 0, stepId: 'a', tool: 'Grep', args: { pattern: 'x' } }),
      ev('step_complete', { index: 0, stepId: 'a', status: 'completed', result: 'found', startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:01.5Z' }),
      ev('step_approval_requested', { gate: 'step', index: 1, stepId: 'b', tool: 'Write', args: { content: 'found' } }),
    ]
    let st = reduceRun(newRunState('run_1'), events)
    expect(st.order).toEqual(['a', 'b'])
    expect(st.steps.a).toMatchObject({ status: 'completed', result: 'found' })
    expect(st.steps.b).toMatchObject({ status: 'awaiting', args: { content: 'found' } })
    st = reduceRun(st, [
      ev('step_start', { index: 1, stepId: 'b', tool: 'Write', args: { content: 'found' } }),
      ev('permission_request', { id: 'perm_1', tool_name: 'Write', input: { content: 'found' }, message: 'Write wants to write', tool_use_id: 't' }),
    ])
    expect(st.steps.b.status).toBe('running')
    expect(st.requests).toEqual([expect.objectContaining({ id: 'perm_1', kind: 'permission', toolName: 'Write', status: 'pending' })])
    st = reduceRun(st, [ev('step_complete', { index: 1, stepId: 'b', status: 'completed', result: 'ok' }), ev('complete', { result: 'ok', summary: 'ok' })])
    expect(st.status).toBe('completed')
    expect(st.result).toBe('ok')
    expect(st.requests[0].status).toBe('answered')
  })

  it('drops events it has seen (a replay after a reconnect)', () => {
    seq = 0
    const a = [ev('plan_ready', { plan }), ev('step_start', { index: 0, stepId: 'a', tool: 'Grep' })]
    const st = reduceRun(reduceRun(newRunState('r'), a), a)
    expect(st.lastSeq).toBe(2)
    expect(st.order).toEqual(['a', 'b'])
  })

  it('a failed run leaves no step running, and a resume keeps the results of the steps it reuses', () => {
    seq = 0
    let st = reduceRun(newRunState('r'), [
      ev('plan_ready', { plan }),
      ev('step_complete', { index: 0, stepId: 'a', status: 'completed', result: 1 }),
      ev('step_start', { index: 1, stepId: 'b', tool: 'Write' }),
      ev('error', { message: 'boom' }),
    ])
    expect(st.status).toBe('failed')
    expect(st.error).toBe('boom')
    expect(st.steps.b.status).toBe('cancelled')
    st = reduceRun(st, [ev('resumed', { from: 'resume', keptSteps: ['a'] }), ev('plan_ready', { plan })])
    expect(st.status).toBe('running')
    expect(st.steps.a).toMatchObject({ status: 'completed', result: 1 })
  })

  it('a plan gate', () => {
    seq = 0
    const st = reduceRun(newRunState('r'), [ev('plan_approval_requested', { gate: 'plan', reason: 'review', plan })])
    expect(st.status).toBe('awaiting_plan')
    expect(st.order).toEqual(['a', 'b'])
  })
})

describe('templates', () => {
  // What the server's agent tools are called; the gallery uses only built-in ones.
  const builtin = new Map(['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep', 'WebFetch'].map((n) => [n, {}]))
  for (const tp of templates) {
    it(`${tp.id} compiles without problems, in both languages`, () => {
      for (const lang of ['en', 'zh'] as const) {
        const out = compile(templateGraph(tp, lang), { inputs: inputNames(tp.inputSchema), tools: builtin })
        expect(out.problems).toEqual([])
        expect(out.plan.steps.map((s) => s.id)).toEqual(tp.plan.steps.map((s) => s.id))
      }
    })
  }
  it('have unique ids and both languages', () => {
    expect(new Set(templates.map((x) => x.id)).size).toBe(templates.length)
    for (const tp of templates) {
      for (const l of ['en', 'zh'] as const) expect(tp.title[l] && tp.description[l]).toBeTruthy()
      expect(Object.keys(tp.zh).sort()).toEqual(tp.plan.steps.map((s) => s.id!).sort())
    }
  })
})

describe('flowCallRunId', () => {
  it.each([
    ['the progress line, while the call runs', ['workflow run run_0a1b2c3d started'], undefined, 'run_0a1b2c3d'],
    ['the progress line wins over the output', ['workflow run run_1 started'], '{"runId":"run_2"}', 'run_1'],
    ['the output once it ends (an older server: no progress)', [], '{"runId":"run_2","status":"completed"}', 'run_2'],
    ['other progress lines name no run', ['workflow run run_1 completed', 'step 1 started'], undefined, null],
    ['an error result that is not JSON', [], 'run_current_flow: workflow "wf_1" no longer exists', null],
    ['a runId that is not a string', [], '{"runId":7}', null],
    ['nothing yet', [], undefined, null],
  ])('%s', (_name, progress, output, want) => {
    expect(flowCallRunId(progress, output)).toBe(want)
  })
})
