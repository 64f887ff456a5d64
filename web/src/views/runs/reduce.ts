// The run reducer: a run's events (docs/runs.md, "Stream"), in seq order,
// folded into what the run panel shows: the plan as it streams and once
// final, the gate waiting for a person, every step's state, args and
// result, permission requests, and how the run ended. A replay from seq 0
// rebuilds a past run exactly as it was followed live.

import type { Plan, PlanStep, StreamEvent } from '../../api/types'
import type { PermissionState } from '../chat/reduce'

export type StepStatus = 'pending' | 'running' | 'awaiting' | 'completed' | 'failed' | 'skipped' | 'cancelled'

export interface StepView {
  id: string
  index: number
  tool: string
  description?: string
  dependsOn: string[]
  requiresApproval?: boolean
  status: StepStatus
  args?: unknown
  result?: unknown
  error?: string
  reused?: boolean
  startedAt?: string
  finishedAt?: string
}

export type RunStatus = 'planning' | 'awaiting_approval' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface RunView {
  lastSeq: number
  version: number
  status: RunStatus
  planText: string
  plan?: Plan
  planEdited: boolean
  /** The plan gate, while it waits. */
  planGate?: { reason: string; plan: Plan }
  steps: StepView[]
  permissions: PermissionState[]
  result?: unknown
  summary?: string
  error?: string
  endMessage?: string
  resumes: number
}

export function newRunView(): RunView {
  return { lastSeq: 0, version: 0, status: 'planning', planText: '', planEdited: false, steps: [], permissions: [], resumes: 0 }
}

export const terminalRunEvent = (type: string) => type === 'complete' || type === 'error' || type === 'cancelled' || type === 'interrupted'

function stepsOf(plan: Plan | undefined, prev: StepView[]): StepView[] {
  const old = new Map(prev.map((s) => [s.id, s]))
  return (plan?.steps ?? []).map((s: PlanStep, index) => {
    const o = old.get(s.id)
    const keep = o && (o.status === 'completed' || o.reused)
    return {
      id: s.id, index, tool: s.tool, description: s.description, dependsOn: s.dependsOn ?? [], requiresApproval: s.requiresApproval,
      status: keep ? o.status : 'pending', args: keep ? o.args : s.args, result: keep ? o.result : undefined,
      reused: keep ? o.reused : undefined, startedAt: keep ? o.startedAt : undefined, finishedAt: keep ? o.finishedAt : undefined,
    }
  })
}

function step(v: RunView, d: { stepId?: string; index?: number; tool?: string; description?: string }): StepView {
  let s = v.steps.find((x) => x.id === d.stepId)
  if (!s) {
    // A step the plan did not announce (an event arrived first): add it.
    s = { id: d.stepId ?? `#${d.index}`, index: d.index ?? v.steps.length, tool: d.tool ?? '', description: d.description, dependsOn: [], status: 'pending' }
    v.steps = [...v.steps, s]
  }
  return s
}

function patchStep(v: RunView, s: StepView, patch: Partial<StepView>) {
  v.steps = v.steps.map((x) => (x === s ? { ...x, ...patch } : x))
}

function expirePermissions(v: RunView) {
  v.permissions = v.permissions.map((p) => (p.status === 'pending' ? { ...p, status: 'expired' } : p))
}

export function reduceRun(v: RunView, events: StreamEvent[]): RunView {
  for (const ev of events) {
    if (ev.seq <= v.lastSeq) continue
    v.lastSeq = ev.seq
    applyRun(v, ev)
  }
  v.version++
  return v
}

function applyRun(v: RunView, ev: StreamEvent) {
  const d = (ev.data ?? {}) as Record<string, any>
  switch (ev.type) {
    case 'plan_token':
      v.planText += d.text ?? ''
      break
    case 'plan_ready':
      v.plan = d.plan
      v.planEdited = !!d.edited
      v.steps = stepsOf(d.plan, v.steps)
      v.planGate = undefined
      break
    case 'plan_approval_requested':
      v.status = 'awaiting_approval'
      v.planGate = { reason: d.reason ?? 'review', plan: d.plan ?? v.plan }
      if (d.plan && !v.plan) {
        v.plan = d.plan
        v.steps = stepsOf(d.plan, v.steps)
      }
      break
    case 'step_start': {
      v.status = 'running'
      v.planGate = undefined
      const s = step(v, d)
      patchStep(v, s, { status: 'running', args: d.args, startedAt: d.startedAt ?? s.startedAt })
      break
    }
    case 'step_approval_requested': {
      v.planGate = undefined
      v.status = 'running'
      const s = step(v, d)
      patchStep(v, s, { status: 'awaiting', args: d.args })
      break
    }
    case 'step_complete': {
      const s = step(v, d)
      patchStep(v, s, {
        status: (d.status as StepStatus) ?? 'completed', result: d.result, error: d.error, reused: d.reused,
        startedAt: d.startedAt ?? s.startedAt, finishedAt: d.finishedAt,
      })
      break
    }
    case 'permission_request':
    case 'checkpoint':
      v.permissions = [...v.permissions, {
        id: d.id, kind: ev.type === 'checkpoint' ? 'checkpoint' : 'permission', toolName: d.tool_name, input: d.input,
        message: d.message, reason: d.reason, status: 'pending',
      }]
      break
    case 'complete':
      v.status = 'completed'
      v.result = d.result
      v.summary = d.summary
      expirePermissions(v)
      break
    case 'error':
    case 'cancelled':
    case 'interrupted':
      v.status = ev.type === 'error' ? 'failed' : ev.type
      v.endMessage = d.message
      if (ev.type === 'error') v.error = d.message
      v.planGate = undefined
      v.steps = v.steps.map((s) => (s.status === 'running' || s.status === 'awaiting' ? { ...s, status: 'cancelled' } : s))
      expirePermissions(v)
      break
    case 'resumed': {
      // A resume or rewind starts the run again: kept steps keep their
      // results, the others run again after a review.
      const kept = new Set<string>(d.keptSteps ?? [])
      v.resumes++
      v.status = 'planning'
      v.error = undefined
      v.endMessage = undefined
      v.result = undefined
      v.planText = ''
      v.steps = v.steps.map((s) => (kept.has(s.id) ? s : { ...s, status: 'pending', result: undefined, error: undefined, reused: undefined }))
      break
    }
  }
}

/**
 * Layered layout of a plan's DAG: a step's column is the length of the
 * longest dependency chain before it, its row its order in that column.
 * Unknown dependencies (a bad edit) are ignored, and a cycle cannot loop.
 */
export function layout(steps: { id: string; dependsOn: string[] }[], colW = 250, rowH = 96): Map<string, { x: number; y: number }> {
  const byId = new Map(steps.map((s) => [s.id, s]))
  const depth = new Map<string, number>()
  const visiting = new Set<string>()
  const depthOf = (id: string): number => {
    const known = depth.get(id)
    if (known !== undefined) return known
    if (visiting.has(id)) return 0
    visiting.add(id)
    const s = byId.get(id)
    let d = 0
    for (const dep of s?.dependsOn ?? []) if (byId.has(dep)) d = Math.max(d, depthOf(dep) + 1)
    visiting.delete(id)
    depth.set(id, d)
    return d
  }
  const rows = new Map<number, number>()
  const out = new Map<string, { x: number; y: number }>()
  for (const s of steps) {
    const d = depthOf(s.id)
    const r = rows.get(d) ?? 0
    rows.set(d, r + 1)
    out.set(s.id, { x: d * colW, y: r * rowH })
  }
  return out
}
