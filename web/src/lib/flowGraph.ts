// The flow canvas's document: step nodes (one tool call each), sticky
// notes, and edges (dependencies). It is what the API keeps byte for byte
// as a workflow's `canvas`, so its serialization is deterministic: the same
// graph always gives the same text, and a graph read back from its text
// serializes to that text again.

import type { Plan, PlanStep } from '../api/types'

export interface XY { x: number; y: number }

export interface StepData {
  /** The plan step's id: what dependsOn and {{steps.<id>.result}} name. */
  stepId: string
  tool: string
  /** A title for the card; the step's description when empty. */
  label?: string
  description?: string
  args: Record<string, unknown>
  requiresApproval?: boolean
}

export interface NoteData {
  text: string
}

export type CanvasNode =
  | { id: string; type: 'step'; position: XY; data: StepData }
  | { id: string; type: 'note'; position: XY; data: NoteData }

export interface CanvasEdge { id: string; source: string; target: string }

export interface Viewport { x: number; y: number; zoom: number }

/** The canvas document, version 1. */
export interface CanvasDoc {
  version: 1
  nodes: CanvasNode[]
  edges: CanvasEdge[]
  viewport?: Viewport
}

export interface Graph { nodes: CanvasNode[]; edges: CanvasEdge[] }

export type StepNode = Extract<CanvasNode, { type: 'step' }>
export type NoteNode = Extract<CanvasNode, { type: 'note' }>

export function isStep(n: CanvasNode): n is StepNode { return n.type === 'step' }
export function isNote(n: CanvasNode): n is NoteNode { return n.type === 'note' }

const round = (v: number) => (Number.isFinite(v) ? Math.round(v) : 0)

/**
 * normalizeNode copies a node into its canonical form: fixed key order,
 * integer positions, no empty optional fields. Everything that is stored
 * or compared goes through it.
 */
export function normalizeNode(n: CanvasNode): CanvasNode {
  const position = { x: round(n.position.x), y: round(n.position.y) }
  if (n.type === 'note') return { id: n.id, type: 'note', position, data: { text: String(n.data.text ?? '') } }
  const d = n.data
  const data = { stepId: d.stepId, tool: d.tool } as StepData
  if (d.label) data.label = d.label
  if (d.description) data.description = d.description
  data.args = cleanValue(isObject(d.args) ? d.args : {}) as Record<string, unknown>
  if (d.requiresApproval) data.requiresApproval = true
  return { id: n.id, type: 'step', position, data }
}

/**
 * cleanValue drops what a form leaves behind that means "not given":
 * undefined in objects (a cleared field). Arrays keep their elements
 * (undefined becomes null, as JSON would have it), objects their key
 * order, and an empty string stays a value.
 */
export function cleanValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : cleanValue(x)))
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue
      out[k] = cleanValue(x)
    }
    return out
  }
  return v
}

export function normalizeGraph(g: Graph): Graph {
  return {
    nodes: g.nodes.map(normalizeNode),
    edges: g.edges.map((e) => ({ id: e.id, source: e.source, target: e.target })),
  }
}

/** serializeGraph is the canonical text of a graph (no viewport): the thing compared to tell whether the canvas changed. */
export function serializeGraph(g: Graph): string {
  return JSON.stringify(normalizeGraph(g))
}

/** serializeCanvas is the text saved as a workflow's canvas. */
export function serializeCanvas(g: Graph, viewport?: Viewport): string {
  const doc: CanvasDoc = { version: 1, ...normalizeGraph(g) }
  if (viewport) doc.viewport = { x: round(viewport.x), y: round(viewport.y), zoom: Math.round(viewport.zoom * 1000) / 1000 }
  return JSON.stringify(doc)
}

/**
 * parseCanvas reads a saved canvas (a JSON value or its text). It returns
 * null for anything that is not a version 1 canvas document, so that the
 * caller rebuilds the canvas from the plan instead.
 */
export function parseCanvas(raw: unknown): CanvasDoc | null {
  let v = raw
  if (typeof raw === 'string') {
    try {
      v = JSON.parse(raw)
    } catch {
      return null
    }
  }
  if (!v || typeof v !== 'object') return null
  const d = v as Partial<CanvasDoc>
  if (d.version !== 1 || !Array.isArray(d.nodes) || !Array.isArray(d.edges)) return null
  const nodes: CanvasNode[] = []
  const ids = new Set<string>()
  for (const n of d.nodes as unknown[]) {
    const o = n as Record<string, any>
    if (!o || typeof o.id !== 'string' || ids.has(o.id) || !o.position || typeof o.data !== 'object' || !o.data) continue
    const position = { x: Number(o.position.x) || 0, y: Number(o.position.y) || 0 }
    if (o.type === 'note') {
      nodes.push({ id: o.id, type: 'note', position, data: { text: String(o.data.text ?? '') } })
    } else if (o.type === 'step' && typeof o.data.tool === 'string') {
      const args = o.data.args && typeof o.data.args === 'object' && !Array.isArray(o.data.args) ? o.data.args : {}
      nodes.push({
        id: o.id, type: 'step', position,
        data: { ...o.data, stepId: String(o.data.stepId ?? ''), tool: o.data.tool, args } as StepData,
      })
    } else {
      continue
    }
    ids.add(o.id)
  }
  const edges: CanvasEdge[] = []
  for (const e of d.edges as unknown[]) {
    const o = e as Record<string, unknown>
    if (o && typeof o.id === 'string' && typeof o.source === 'string' && typeof o.target === 'string') {
      edges.push({ id: o.id, source: o.source, target: o.target })
    }
  }
  const doc: CanvasDoc = { version: 1, nodes, edges }
  const vp = d.viewport as Viewport | undefined
  if (vp && [vp.x, vp.y, vp.zoom].every((x) => typeof x === 'number' && Number.isFinite(x)) && vp.zoom > 0) doc.viewport = vp
  return doc
}

let counter = 0
/** newId makes a node or edge id that is unique in practice: prefix, time, counter, randomness. */
export function newId(prefix: string): string {
  counter = (counter + 1) % 1e6
  const rnd = Math.floor(Math.random() * 36 ** 4).toString(36).padStart(4, '0')
  return `${prefix}_${Date.now().toString(36)}${counter.toString(36)}${rnd}`
}

export const STEP_ID_RE = /^[A-Za-z0-9_-]+$/

/**
 * suggestStepId derives a readable step id from a tool name ("Grep" ->
 * "grep", "mcp__github__list_issues" -> "list_issues"), made unique
 * against taken with a "-2", "-3"... suffix. Ids always contain a letter
 * (the server reads an all-digit id as a position).
 */
export function suggestStepId(tool: string, taken: Set<string>): string {
  let base = tool.replace(/^mcp__.*?__/, '').replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').toLowerCase()
  if (!base || /^\d+$/.test(base)) base = 'step' + (base ? '_' + base : '')
  base = base.slice(0, 100)
  if (!taken.has(base)) return base
  for (let i = 2; ; i++) {
    const id = `${base}-${i}`
    if (!taken.has(id)) return id
  }
}

/** The plan's id for step i: its own, or step-<i+1> (plan.Plan.ID). */
export function planStepId(p: Plan, i: number): string {
  return p.steps[i].id || `step-${i + 1}`
}

/**
 * graphFromPlan rebuilds a canvas for a workflow saved without one (made
 * through the API, or before canvases were kept): one node per step, an
 * edge per dependency, laid out in columns by depth (the longest chain of
 * dependencies before the step), in plan order within a column.
 */
export function graphFromPlan(p: Plan | null | undefined): Graph {
  const steps: PlanStep[] = p?.steps ?? []
  const ids = steps.map((_, i) => planStepId(p as Plan, i))
  const index = new Map<string, number>()
  ids.forEach((id, i) => { if (!index.has(id)) index.set(id, i) })
  const resolve = (r: string | number): number | undefined => {
    const s = String(r)
    if (/^\d+$/.test(s)) {
      const n = Number(s)
      return n < steps.length ? n : undefined
    }
    return index.get(s)
  }
  const deps = steps.map((s) => {
    const out: number[] = []
    for (const r of s.dependsOn ?? []) {
      const j = resolve(r as string | number)
      if (j !== undefined && !out.includes(j)) out.push(j)
    }
    return out
  })
  const depth: number[] = []
  const depthOf = (i: number, seen: Set<number>): number => {
    if (depth[i] !== undefined) return depth[i]
    if (seen.has(i)) return 0 // a cycle in a stored plan: the server refuses those; draw it anyway
    seen.add(i)
    let d = 0
    for (const j of deps[i]) d = Math.max(d, depthOf(j, seen) + 1)
    seen.delete(i)
    depth[i] = d
    return d
  }
  steps.forEach((_, i) => depthOf(i, new Set()))
  const rows = new Map<number, number>()
  const nodeIds = ids.map((id, i) => `node_${id.replace(/[^A-Za-z0-9_-]/g, '_')}_${i}`)
  const nodes: CanvasNode[] = steps.map((s, i) => {
    const row = rows.get(depth[i]) ?? 0
    rows.set(depth[i], row + 1)
    const data: StepData = { stepId: ids[i], tool: s.tool, args: isObject(s.args) ? (s.args as Record<string, unknown>) : {} }
    if (s.description) data.description = s.description
    if (s.requiresApproval) data.requiresApproval = true
    return { id: nodeIds[i], type: 'step', position: { x: 80 + depth[i] * 340, y: 80 + row * 150 }, data }
  })
  const edges: CanvasEdge[] = []
  steps.forEach((_, i) => {
    for (const j of deps[i]) edges.push({ id: `edge_${nodeIds[j]}_${nodeIds[i]}`, source: nodeIds[j], target: nodeIds[i] })
  })
  return { nodes, edges }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v)
}

/**
 * layoutGraph places the steps in columns by depth (the longest chain of
 * edges before each), keeping their vertical order within a column; notes
 * stay where they are. It is the builder's "tidy up".
 */
export function layoutGraph(g: Graph): Graph {
  const steps = g.nodes.filter(isStep)
  const ids = new Set(steps.map((s) => s.id))
  const parents = new Map<string, string[]>(steps.map((s) => [s.id, []]))
  for (const e of g.edges) if (ids.has(e.source) && ids.has(e.target) && e.source !== e.target) parents.get(e.target)!.push(e.source)
  const depth = new Map<string, number>()
  const depthOf = (id: string, stack: Set<string>): number => {
    const d0 = depth.get(id)
    if (d0 !== undefined) return d0
    if (stack.has(id)) return 0 // a cycle: the compiler reports it; lay it out anyway
    stack.add(id)
    let d = 0
    for (const p of parents.get(id)!) d = Math.max(d, depthOf(p, stack) + 1)
    stack.delete(id)
    depth.set(id, d)
    return d
  }
  for (const s of steps) depthOf(s.id, new Set())
  const minX = steps.length ? Math.min(...steps.map((s) => s.position.x)) : 0
  const minY = steps.length ? Math.min(...steps.map((s) => s.position.y)) : 0
  const columns = new Map<number, StepNode[]>()
  for (const s of steps) {
    const d = depth.get(s.id)!
    columns.set(d, [...(columns.get(d) ?? []), s])
  }
  const at = new Map<string, XY>()
  for (const [d, col] of columns) {
    col.sort((a, b) => a.position.y - b.position.y || a.position.x - b.position.x)
    col.forEach((s, i) => at.set(s.id, { x: minX + d * 340, y: minY + i * 150 }))
  }
  return { nodes: g.nodes.map((n) => (at.has(n.id) ? ({ ...n, position: at.get(n.id)! } as CanvasNode) : n)), edges: g.edges }
}
