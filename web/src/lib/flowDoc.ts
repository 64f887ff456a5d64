// FlowDoc is the flow builder's document: the graph, every edit to it as a
// method, and its undo history. The canvas (Vue Flow) draws it and reports
// gestures back as calls here; nothing changes the graph another way, so
// every edit is undoable and the saved text is always this document's.
//
// Node positions change continuously while a node is dragged; the canvas
// keeps those to itself and calls move() once, when the drag ends.

import { History } from './flowHistory'
import {
  isStep, newId, normalizeGraph, normalizeNode, serializeGraph, suggestStepId,
  type CanvasEdge, type CanvasNode, type Graph, type NoteData, type StepData, type StepNode, type XY,
} from './flowGraph'
import { rewriteStepRefs } from './flowCompile'

export type Change = 'structure' | 'data' | 'load'

export class FlowDoc {
  nodes: CanvasNode[] = []
  edges: CanvasEdge[] = []
  readonly history = new History<string>()
  /** Counts changes, for views that follow the document. */
  version = 0
  /** Called after every change (and after undo, redo and load). */
  onChange?: (kind: Change) => void

  constructor(g?: Graph) {
    if (g) this.load(g)
  }

  get graph(): Graph { return { nodes: this.nodes, edges: this.edges } }

  snapshot(): string {
    return serializeGraph(this.graph)
  }

  private restore(s: string) {
    const g = JSON.parse(s) as Graph
    this.nodes = g.nodes
    this.edges = g.edges
  }

  private changed(kind: Change) {
    this.version++
    this.onChange?.(kind)
  }

  /** edit records the state before a change, applies it, and tells the view. */
  private edit(fn: () => boolean | void, key?: string, kind: Change = 'structure'): boolean {
    const before = this.snapshot()
    if (fn() === false) return false
    if (this.snapshot() === before) return false
    this.history.record(before, key)
    this.changed(kind)
    return true
  }

  /** load replaces the document (a workflow opened, a template): not undoable. */
  load(g: Graph): void {
    const n = normalizeGraph(g)
    this.nodes = n.nodes
    this.edges = n.edges
    this.history.clear()
    this.changed('load')
  }

  node(id: string): CanvasNode | undefined {
    return this.nodes.find((n) => n.id === id)
  }

  stepIds(except?: string): Set<string> {
    return new Set(this.nodes.filter((n) => isStep(n) && n.id !== except).map((n) => (n as StepNode).data.stepId))
  }

  addStep(tool: string, position: XY, data: Partial<StepData> = {}): StepNode {
    const node = normalizeNode({
      id: newId('step'), type: 'step', position,
      data: { args: {}, ...data, tool, stepId: data.stepId || suggestStepId(tool, this.stepIds()) },
    }) as StepNode
    this.edit(() => { this.nodes = [...this.nodes, node] })
    return node
  }

  addNote(position: XY, text = ''): CanvasNode {
    const node = normalizeNode({ id: newId('note'), type: 'note', position, data: { text } })
    this.edit(() => { this.nodes = [...this.nodes, node] })
    return node
  }

  /** duplicate copies nodes (with new ids and step ids) offset by 40 px; edges between them come along. */
  duplicate(ids: string[]): CanvasNode[] {
    const map = new Map<string, string>()
    const copies: CanvasNode[] = []
    const taken = this.stepIds()
    for (const id of ids) {
      const n = this.node(id)
      if (!n) continue
      const copy = JSON.parse(JSON.stringify(n)) as CanvasNode
      copy.id = newId(n.type)
      copy.position = { x: n.position.x + 40, y: n.position.y + 40 }
      if (copy.type === 'step') {
        copy.data.stepId = suggestStepId(copy.data.tool, taken)
        taken.add(copy.data.stepId)
      }
      map.set(id, copy.id)
      copies.push(copy)
    }
    const edges = this.edges
      .filter((e) => map.has(e.source) && map.has(e.target))
      .map((e) => ({ id: newId('edge'), source: map.get(e.source)!, target: map.get(e.target)! }))
    this.edit(() => {
      this.nodes = [...this.nodes, ...copies]
      this.edges = [...this.edges, ...edges]
    })
    return copies
  }

  /** remove deletes nodes (and every edge touching them) and edges, as one step. */
  remove(nodeIds: string[], edgeIds: string[] = []): boolean {
    const nset = new Set(nodeIds)
    const eset = new Set(edgeIds)
    return this.edit(() => {
      this.nodes = this.nodes.filter((n) => !nset.has(n.id))
      this.edges = this.edges.filter((e) => !eset.has(e.id) && !nset.has(e.source) && !nset.has(e.target))
    })
  }

  /**
   * canConnect says whether an edge may be drawn: between two different
   * steps, not twice. Cycles may be drawn (the compiler reports them on
   * the canvas), as a person wiring a graph passes through states that
   * are not valid yet.
   */
  canConnect(source: string, target: string): boolean {
    const s = this.node(source)
    const t = this.node(target)
    if (!s || !t || s.type !== 'step' || t.type !== 'step' || source === target) return false
    return !this.edges.some((e) => e.source === source && e.target === target)
  }

  connect(source: string, target: string): CanvasEdge | null {
    if (!this.canConnect(source, target)) return null
    const edge = { id: newId('edge'), source, target }
    this.edit(() => { this.edges = [...this.edges, edge] })
    return edge
  }

  /** move sets positions (the end of a drag), as one step. */
  move(positions: { id: string; position: XY }[]): boolean {
    const at = new Map(positions.map((p) => [p.id, p.position]))
    return this.edit(() => {
      this.nodes = this.nodes.map((n) => {
        const p = at.get(n.id)
        return p ? ({ ...n, position: { x: Math.round(p.x), y: Math.round(p.y) } } as CanvasNode) : n
      })
    })
  }

  /**
   * updateStep changes a step's configuration. Edits with the same key (a
   * field being typed in) within a moment are one undo step. Renaming the
   * step id rewrites the other steps' references to it.
   */
  updateStep(id: string, patch: Partial<StepData>, key?: string): boolean {
    return this.edit(() => {
      const n = this.node(id)
      if (!n || n.type !== 'step') return false
      const old = n.data.stepId
      const data = { ...n.data, ...patch }
      this.nodes = this.nodes.map((x) => (x.id === id ? ({ ...x, data } as CanvasNode) : x))
      // Only a rename from a unique id to a free one is a rename: while the
      // id collides with another step's, references to it are that step's too.
      const others = this.stepIds(id)
      if (patch.stepId !== undefined && patch.stepId !== old && old && !others.has(old) && !others.has(patch.stepId)) {
        this.nodes = this.nodes.map((x) =>
          x.type === 'step' && x.id !== id
            ? ({ ...x, data: { ...x.data, args: rewriteStepRefs(x.data.args, old, patch.stepId!) as Record<string, unknown> } } as CanvasNode)
            : x,
        )
      }
    }, key ? `${id}:${key}` : undefined, 'data')
  }

  updateNote(id: string, patch: Partial<NoteData>, key = 'text'): boolean {
    return this.edit(() => {
      const n = this.node(id)
      if (!n || n.type !== 'note') return false
      this.nodes = this.nodes.map((x) => (x.id === id ? ({ ...x, data: { ...x.data, ...patch } } as CanvasNode) : x))
    }, `${id}:${key}`, 'data')
  }

  /** replace swaps in a whole graph as one undoable step (auto layout, a pasted graph). */
  replace(g: Graph): boolean {
    return this.edit(() => {
      const n = normalizeGraph(g)
      this.nodes = n.nodes
      this.edges = n.edges
    })
  }

  undo(): boolean {
    const prev = this.history.undo(this.snapshot())
    if (prev === undefined) return false
    this.restore(prev)
    this.changed('structure')
    return true
  }

  redo(): boolean {
    const next = this.history.redo(this.snapshot())
    if (next === undefined) return false
    this.restore(next)
    this.changed('structure')
    return true
  }
}
