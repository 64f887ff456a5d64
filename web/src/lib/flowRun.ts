// A workflow run as the builder shows it: the run's events (docs/runs.md,
// "Stream") folded into one state per step, keyed by step id, which the
// canvas maps to its nodes. Pure, like the chat reducer: the same events
// give the same state, so a replay (a past run, a reconnect) shows what a
// live follower saw.

import type { Plan, StreamEvent } from '../api/types'

export type StepStatus = 'pending' | 'running' | 'awaiting' | 'completed' | 'failed' | 'skipped' | 'cancelled'

export interface StepRun {
  stepId: string
  index?: number
  tool?: string
  status: StepStatus
  /** The arguments the step runs with (rendered, secrets redacted). */
  args?: unknown
  result?: unknown
  error?: string
  reused?: boolean
  startedAt?: string
  finishedAt?: string
}

export interface RunRequestCard {
  id: string
  kind: 'permission' | 'checkpoint'
  toolName: string
  input: unknown
  message: string
  reason?: string
  /** The step it came from, when the run says (tool_use_id is the step's call). */
  status: 'pending' | 'answered'
}

export type RunStatus = 'starting' | 'planning' | 'awaiting_plan' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface RunState {
  runId: string
  status: RunStatus
  plan?: Plan
  steps: Record<string, StepRun>
  order: string[]
  requests: RunRequestCard[]
  result?: unknown
  summary?: string
  error?: string
  lastSeq: number
}

export function newRunState(runId: string): RunState {
  return { runId, status: 'starting', steps: {}, order: [], requests: [], lastSeq: 0 }
}

export const TERMINAL = new Set(['complete', 'error', 'cancelled', 'interrupted'])

function stepsOf(plan: Plan | undefined): { steps: Record<string, StepRun>; order: string[] } {
  const steps: Record<string, StepRun> = {}
  const order: string[] = []
  plan?.steps.forEach((s, i) => {
    const id = s.id || `step-${i + 1}`
    steps[id] = { stepId: id, index: i, tool: s.tool, status: 'pending' }
    order.push(id)
  })
  return { steps, order }
}

/** reduceRun folds events (in seq order) into a new state. */
export function reduceRun(prev: RunState, events: StreamEvent[]): RunState {
  const st: RunState = { ...prev, steps: { ...prev.steps }, order: prev.order, requests: prev.requests.slice() }
  const step = (id: string): StepRun => {
    const s = st.steps[id] ?? { stepId: id, status: 'pending' as StepStatus }
    if (!st.order.includes(id)) st.order = [...st.order, id]
    return s
  }
  const set = (id: string, patch: Partial<StepRun>) => { st.steps[id] = { ...step(id), ...patch } }
  for (const ev of events) {
    if (ev.seq <= st.lastSeq) continue
    st.lastSeq = ev.seq
    const d = (ev.data ?? {}) as Record<string, any>
    switch (ev.type) {
      case 'plan_token':
        st.status = 'planning'
        break
      case 'plan_ready': {
        st.plan = d.plan
        const fresh = stepsOf(d.plan)
        // Keep what is known of steps that are still in the plan (a resume keeps results).
        for (const id of fresh.order) if (st.steps[id]) fresh.steps[id] = { ...st.steps[id], index: fresh.steps[id].index }
        st.steps = fresh.steps
        st.order = fresh.order
        if (st.status === 'starting' || st.status === 'planning') st.status = 'running'
        break
      }
      case 'plan_approval_requested':
        st.status = 'awaiting_plan'
        if (d.plan && !st.plan) {
          const fresh = stepsOf(d.plan)
          st.plan = d.plan
          st.steps = fresh.steps
          st.order = fresh.order
        }
        break
      case 'step_start':
        st.status = 'running'
        set(d.stepId, { index: d.index, tool: d.tool, status: 'running', args: d.args, startedAt: undefined, error: undefined })
        break
      case 'step_approval_requested':
        set(d.stepId, { index: d.index, tool: d.tool, status: 'awaiting', args: d.args })
        break
      case 'step_complete':
        set(d.stepId, {
          index: d.index, status: (d.status as StepStatus) ?? 'completed', result: d.result, error: d.error,
          reused: !!d.reused, startedAt: d.startedAt, finishedAt: d.finishedAt,
        })
        break
      case 'permission_request':
      case 'checkpoint':
        st.requests.push({
          id: d.id, kind: ev.type === 'checkpoint' ? 'checkpoint' : 'permission', toolName: d.tool_name, input: d.input,
          message: d.message ?? '', reason: d.reason, status: 'pending',
        })
        break
      case 'complete':
        st.status = 'completed'
        st.result = d.result
        st.summary = d.summary
        break
      case 'error':
        st.status = 'failed'
        st.error = d.message
        break
      case 'cancelled':
      case 'interrupted':
        st.status = ev.type
        st.error = d.message
        break
      case 'resumed':
        st.status = 'running'
        st.error = undefined
        break
    }
    if (TERMINAL.has(ev.type)) {
      // Whatever still waits will not be answered: the run ended.
      st.requests = st.requests.map((r) => (r.status === 'pending' ? { ...r, status: 'answered' } : r))
      for (const id of st.order) {
        const s = st.steps[id]
        if (s.status === 'running' || s.status === 'awaiting') st.steps[id] = { ...s, status: 'cancelled' }
      }
    }
  }
  return st
}

/** durationMs of a finished step, from its timestamps. */
export function durationMs(s: StepRun): number | undefined {
  if (!s.startedAt || !s.finishedAt) return undefined
  const d = Date.parse(s.finishedAt) - Date.parse(s.startedAt)
  return Number.isFinite(d) && d >= 0 ? d : undefined
}

/** resultText renders a step result for a preview: strings as they are, other values as JSON. */
export function resultText(v: unknown): string {
  if (v === undefined) return ''
  if (typeof v === 'string') return v
  try {
    return JSON.stringify(v, null, 2)
  } catch {
    return String(v)
  }
}

/**
 * The run a run_current_flow call started: its first progress line says so
 * as soon as the run exists ("workflow run <id> started": the server's
 * workflow.StartedProgress), and its result names it when it ends (runId
 * in the JSON output). null while neither is there.
 */
export function flowCallRunId(progress: readonly string[], output?: string): string | null {
  for (const line of progress) {
    const m = /^workflow run (\S+) started$/.exec(line)
    if (m) return m[1]
  }
  if (!output) return null
  try {
    const v = JSON.parse(output)
    return typeof v?.runId === 'string' && v.runId ? v.runId : null
  } catch {
    return null
  }
}
