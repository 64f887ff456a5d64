import { describe, expect, it } from 'vitest'
import { FlowDoc } from './flowDoc'
import { History, HISTORY_LIMIT, COALESCE_MS } from './flowHistory'

describe('History', () => {
  it('undoes and redoes in order and forgets the future on a new edit', () => {
    const h = new History<number>()
    let s = 0
    for (let i = 1; i <= 3; i++) {
      h.record(s)
      s = i
    }
    s = h.undo(s)!
    expect(s).toBe(2)
    s = h.undo(s)!
    expect(s).toBe(1)
    s = h.redo(s)!
    expect(s).toBe(2)
    h.record(s)
    s = 9
    expect(h.canRedo).toBe(false)
    expect(h.undo(s)).toBe(2)
  })

  it(`keeps at most ${HISTORY_LIMIT} steps`, () => {
    const h = new History<number>()
    for (let i = 0; i < 80; i++) h.record(i)
    expect(h.undoDepth).toBe(HISTORY_LIMIT)
    let s = 80
    let n = 0
    for (let v = h.undo(s); v !== undefined; v = h.undo(s)) {
      s = v
      n++
    }
    expect(n).toBe(HISTORY_LIMIT)
    expect(s).toBe(80 - HISTORY_LIMIT)
  })

  it('coalesces edits with the same key within the window only', () => {
    const h = new History<string>()
    h.record('a', 'k', 1000)
    h.record('ab', 'k', 1000 + COALESCE_MS / 2)
    h.record('abc', 'k', 1000 + COALESCE_MS)
    expect(h.undoDepth).toBe(1)
    h.record('abcd', 'k', 1000 + 3 * COALESCE_MS)
    expect(h.undoDepth).toBe(2)
    h.record('x', 'other', 1000 + 3 * COALESCE_MS + 1)
    expect(h.undoDepth).toBe(3)
    h.seal()
    h.record('y', 'other', 1000 + 3 * COALESCE_MS + 2)
    expect(h.undoDepth).toBe(4)
  })
})

describe('FlowDoc undo/redo', () => {
  /** Ten edits of every structural kind, with the snapshot after each. */
  function tenEdits(doc: FlowDoc): string[] {
    const snaps = [doc.snapshot()]
    const a = doc.addStep('Grep', { x: 0, y: 0 }); snaps.push(doc.snapshot())
    const b = doc.addStep('Read', { x: 300, y: 0 }); snaps.push(doc.snapshot())
    const c = doc.addStep('Write', { x: 600, y: 0 }); snaps.push(doc.snapshot())
    const e1 = doc.connect(a.id, b.id)!; snaps.push(doc.snapshot())
    doc.connect(b.id, c.id); snaps.push(doc.snapshot())
    doc.move([{ id: b.id, position: { x: 320, y: 140 } }]); snaps.push(doc.snapshot())
    const n = doc.addNote({ x: 0, y: 300 }, 'remember'); snaps.push(doc.snapshot())
    doc.move([{ id: n.id, position: { x: 40, y: 340 } }, { id: a.id, position: { x: 10, y: 10 } }]); snaps.push(doc.snapshot())
    doc.remove([], [e1.id]); snaps.push(doc.snapshot())
    doc.remove([c.id]); snaps.push(doc.snapshot())
    return snaps
  }

  it('ten edits undone one by one pass back through every state, and redone forward again', () => {
    const doc = new FlowDoc()
    let changes = 0
    doc.onChange = () => changes++
    const snaps = tenEdits(doc)
    expect(changes).toBe(10)
    expect(new Set(snaps).size).toBe(11)
    for (let i = 9; i >= 0; i--) {
      expect(doc.undo()).toBe(true)
      expect(doc.snapshot()).toBe(snaps[i])
    }
    expect(doc.undo()).toBe(false)
    expect(doc.nodes).toEqual([])
    for (let i = 1; i <= 10; i++) {
      expect(doc.redo()).toBe(true)
      expect(doc.snapshot()).toBe(snaps[i])
    }
    expect(doc.redo()).toBe(false)
  })

  it('removing a node removes its edges, and undo brings both back', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 0, y: 0 })
    const b = doc.addStep('Read', { x: 1, y: 0 })
    doc.connect(a.id, b.id)
    doc.remove([a.id])
    expect(doc.edges).toEqual([])
    doc.undo()
    expect(doc.edges).toHaveLength(1)
    expect(doc.nodes).toHaveLength(2)
  })

  it('refuses self, duplicate and note edges without recording anything', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 0, y: 0 })
    const b = doc.addStep('Read', { x: 1, y: 0 })
    const n = doc.addNote({ x: 0, y: 0 })
    doc.connect(a.id, b.id)
    const depth = doc.history.undoDepth
    expect(doc.connect(a.id, a.id)).toBeNull()
    expect(doc.connect(a.id, b.id)).toBeNull()
    expect(doc.connect(a.id, n.id)).toBeNull()
    expect(doc.history.undoDepth).toBe(depth)
  })

  it('a move to the same place is not an edit', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 5, y: 5 })
    expect(doc.move([{ id: a.id, position: { x: 5.2, y: 4.9 } }])).toBe(false)
    expect(doc.history.undoDepth).toBe(1)
  })

  it('typing in one field is one undo step; renaming a step fixes the references to it', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 0, y: 0 })
    const b = doc.addStep('Read', { x: 300, y: 0 })
    doc.connect(a.id, b.id)
    const before = doc.snapshot()
    for (const v of ['{', '{{steps.', '{{steps.grep.result}}']) doc.updateStep(b.id, { args: { file_path: v } }, 'args.file_path')
    expect(doc.history.undoDepth).toBe(4)
    doc.updateStep(a.id, { stepId: 'search' }, 'stepId')
    expect((doc.node(b.id) as any).data.args.file_path).toBe('{{steps.search.result}}')
    doc.undo()
    expect((doc.node(b.id) as any).data.args.file_path).toBe('{{steps.grep.result}}')
    doc.undo()
    expect(doc.snapshot()).toBe(before)
  })

  it('a rename through another step\'s id does not take over that step\'s references', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 0, y: 0 })
    const b = doc.addStep('Read', { x: 300, y: 0 })
    const c = doc.addStep('Write', { x: 600, y: 0 })
    doc.updateStep(c.id, { args: { content: '{{steps.grep.result}} {{steps.read.result}}' } })
    // "read" becomes "grep" (taken: the compiler reports the duplicate), then "grep-x".
    doc.updateStep(b.id, { stepId: 'grep' }, 'stepId')
    doc.updateStep(b.id, { stepId: 'grep-x' }, 'stepId')
    // The references to the other "grep" are still its own.
    expect((doc.node(c.id) as any).data.args.content).toBe('{{steps.grep.result}} {{steps.read.result}}')
    expect((doc.node(a.id) as any).data.stepId).toBe('grep')
    // A rename between free ids rewrites.
    doc.updateStep(b.id, { stepId: 'read' }, 'stepId')
    doc.updateStep(b.id, { stepId: 'load' }, 'stepId')
    expect((doc.node(c.id) as any).data.args.content).toBe('{{steps.grep.result}} {{steps.load.result}}')
  })

  it('duplicates nodes with fresh step ids and the edges between them', () => {
    const doc = new FlowDoc()
    const a = doc.addStep('Grep', { x: 0, y: 0 })
    const b = doc.addStep('Grep', { x: 300, y: 0 })
    doc.connect(a.id, b.id)
    const copies = doc.duplicate([a.id, b.id])
    expect(copies.map((c: any) => c.data.stepId)).toEqual(['grep-3', 'grep-4'])
    expect(doc.edges).toHaveLength(2)
    doc.undo()
    expect(doc.nodes).toHaveLength(2)
  })

  it('load is not undoable', () => {
    const doc = new FlowDoc()
    doc.addStep('Grep', { x: 0, y: 0 })
    doc.load({ nodes: [], edges: [] })
    expect(doc.history.canUndo).toBe(false)
  })
})
