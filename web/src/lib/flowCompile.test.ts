import { describe, expect, it } from 'vitest'
import { compile, placeholdersIn, rewriteStepRefs, topoOrder, upstreamSteps, type ProblemCode } from './flowCompile'
import { graphFromPlan, parseCanvas, serializeCanvas, serializeGraph, type CanvasEdge, type CanvasNode, type Graph } from './flowGraph'

function step(id: string, stepId: string, x: number, y = 0, args: Record<string, unknown> = {}, tool = 'Read'): CanvasNode {
  return { id, type: 'step', position: { x, y }, data: { stepId, tool, args } }
}
function edge(source: string, target: string): CanvasEdge {
  return { id: `${source}->${target}`, source, target }
}
const codes = (g: Graph, env = {}) => compile(g, env).problems.map((p) => `${p.code}@${p.nodeId ?? p.edgeId ?? '-'}`).sort()

const tools = new Map<string, unknown>([
  ['Read', { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] }],
  ['Grep', { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } }, required: ['pattern'] }],
  ['Write', { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } }, required: ['file_path', 'content'] }],
])

describe('compile: ordering', () => {
  const cases: { name: string; g: Graph; order: string[]; deps: Record<string, string[]> }[] = [
    {
      name: 'a chain drawn right to left is ordered by its edges, not by position',
      g: { nodes: [step('c', 'c', 0), step('b', 'b', 300), step('a', 'a', 600)], edges: [edge('a', 'b'), edge('b', 'c')] },
      order: ['a', 'b', 'c'], deps: { b: ['a'], c: ['b'] },
    },
    {
      name: 'independent steps: leftmost first, then topmost',
      g: { nodes: [step('n1', 'low', 100, 200), step('n2', 'high', 100, 0), step('n3', 'left', 0, 500)], edges: [] },
      order: ['left', 'high', 'low'], deps: {},
    },
    {
      name: 'a diamond: the join depends on both branches, listed in plan order',
      g: {
        nodes: [step('s', 's', 0), step('l', 'l', 300, 200), step('r', 'r', 300, -200), step('j', 'j', 600)],
        edges: [edge('s', 'l'), edge('s', 'r'), edge('l', 'j'), edge('r', 'j')],
      },
      order: ['s', 'r', 'l', 'j'], deps: { l: ['s'], r: ['s'], j: ['r', 'l'] },
    },
    {
      name: 'notes are not steps and edges to them are ignored',
      g: {
        nodes: [step('a', 'a', 0), { id: 'note', type: 'note', position: { x: 0, y: 0 }, data: { text: 'hi' } }, step('b', 'b', 100)],
        edges: [edge('a', 'b')],
      },
      order: ['a', 'b'], deps: { b: ['a'] },
    },
  ]
  for (const c of cases) {
    it(c.name, () => {
      const out = compile(c.g)
      expect(out.problems).toEqual([])
      expect(out.plan.steps.map((s) => s.id)).toEqual(c.order)
      for (const s of out.plan.steps) expect(s.dependsOn ?? []).toEqual(c.deps[s.id] ?? [])
      // Every dependency comes before its dependent, as the server requires.
      const pos = new Map(out.plan.steps.map((s, i) => [s.id, i]))
      for (const s of out.plan.steps) for (const d of s.dependsOn ?? []) expect(pos.get(d as string)!).toBeLessThan(pos.get(s.id)!)
    })
  }

  it('keeps the step fields the server reads', () => {
    const g: Graph = {
      nodes: [{ id: 'x', type: 'step', position: { x: 0, y: 0 }, data: { stepId: 'w', tool: 'Write', label: 'Save it', args: { file_path: 'a.txt', content: 'hi' }, requiresApproval: true } }],
      edges: [],
    }
    expect(compile(g).plan).toEqual({ steps: [{ id: 'w', tool: 'Write', description: 'Save it', args: { file_path: 'a.txt', content: 'hi' }, requiresApproval: true }] })
  })

  it('topoOrder breaks ties deterministically by id', () => {
    const a = step('a', 'a', 0) as any
    const b = step('b', 'b', 0) as any
    expect(topoOrder([b, a], new Map()).order.map((s) => s.id)).toEqual(['a', 'b'])
  })
})

describe('compile: cycles and edges', () => {
  it('reports every node on a cycle and the ones waiting on it, with the cycle spelled out', () => {
    const g: Graph = {
      nodes: [step('a', 'a', 0), step('b', 'b', 100), step('c', 'c', 200), step('d', 'd', 300), step('z', 'z', 0, 300)],
      edges: [edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd')],
    }
    const out = compile(g)
    expect(codes(g)).toEqual(['afterCycle@d', 'cycle@a', 'cycle@b', 'cycle@c'])
    const msg = out.problems.find((p) => p.nodeId === 'a')!.params.path as string
    expect(msg.split(' → ')).toHaveLength(4)
    expect(new Set(msg.split(' → '))).toEqual(new Set(['a', 'b', 'c']))
    // The plan still lists every step once.
    expect(out.plan.steps.map((s) => s.id).sort()).toEqual(['a', 'b', 'c', 'd', 'z'])
  })

  it('a two-node cycle', () => {
    const g: Graph = { nodes: [step('a', 'a', 0), step('b', 'b', 100)], edges: [edge('a', 'b'), edge('b', 'a')] }
    expect(codes(g)).toEqual(['cycle@a', 'cycle@b'])
  })

  const edgeCases: { name: string; g: Graph; want: string[] }[] = [
    { name: 'an edge to a node that is gone', g: { nodes: [step('a', 'a', 0)], edges: [edge('a', 'ghost')] }, want: ['danglingEdge@a'] },
    { name: 'a self loop', g: { nodes: [step('a', 'a', 0)], edges: [edge('a', 'a')] }, want: ['selfLoop@a'] },
    { name: 'a duplicate edge', g: { nodes: [step('a', 'a', 0), step('b', 'b', 1)], edges: [edge('a', 'b'), { id: 'again', source: 'a', target: 'b' }] }, want: ['duplicateEdge@b'] },
    { name: 'no steps at all', g: { nodes: [], edges: [] }, want: ['empty@-'] },
  ]
  for (const c of edgeCases) it(c.name, () => expect(codes(c.g)).toEqual(c.want))

  it('more than 64 steps', () => {
    const nodes = Array.from({ length: 65 }, (_, i) => step(`n${i}`, `s${i}`, i))
    expect(codes({ nodes, edges: [] })).toEqual(['tooMany@-'])
  })
})

describe('compile: step ids', () => {
  const cases: { id: string; code: ProblemCode | null }[] = [
    { id: 'grep', code: null },
    { id: 'step-2_b', code: null },
    { id: '', code: 'idEmpty' },
    { id: '12', code: 'idDigits' },
    { id: 'has space', code: 'idChars' },
    { id: 'dot.ted', code: 'idChars' },
    { id: 'x'.repeat(129), code: 'idLong' },
  ]
  for (const c of cases) {
    it(`id ${JSON.stringify(c.id.slice(0, 20))}`, () => {
      const got = compile({ nodes: [step('n', c.id, 0)], edges: [] }).problems.map((p) => p.code)
      expect(got).toEqual(c.code ? [c.code] : [])
    })
  }
  it('duplicate ids are reported on the second node', () => {
    expect(codes({ nodes: [step('n1', 'read', 0), step('n2', 'read', 100)], edges: [] })).toEqual(['idDuplicate@n2'])
  })
})

describe('compile: references', () => {
  const chain = (args: Record<string, unknown>, extra: Partial<Graph> = {}): Graph => ({
    nodes: [step('a', 'find', 0, 0, { pattern: 'x' }, 'Grep'), step('b', 'read', 300, 0, { file_path: 'f' }), step('c', 'save', 600, 0, args, 'Write'), ...(extra.nodes ?? [])],
    edges: [edge('a', 'b'), edge('b', 'c'), ...(extra.edges ?? [])],
  })
  const cases: { name: string; args: Record<string, unknown>; extra?: Partial<Graph>; env?: object; want: string[] }[] = [
    { name: 'a direct and a transitive upstream step', args: { file_path: 'o', content: '{{steps.read.result}} {{steps.find.result.files[0]}}' }, want: [] },
    { name: 'a step by position', args: { file_path: 'o', content: '{{steps.0.result}}' }, want: [] },
    { name: 'last.result of a dependency', args: { file_path: 'o', content: '{{last.result}}' }, want: [] },
    { name: 'an unknown step', args: { file_path: 'o', content: '{{steps.nope.result}}' }, want: ['refUnknownStep@c'] },
    { name: 'a position past the end', args: { file_path: 'o', content: '{{steps.9.result}}' }, want: ['refUnknownStep@c'] },
    { name: 'its own result', args: { file_path: 'o', content: '{{steps.save.result}}' }, want: ['refSelf@c'] },
    {
      name: 'a step that is not upstream',
      args: { file_path: 'o', content: '{{steps.other.result}}' },
      extra: { nodes: [step('d', 'other', 0, 300, { pattern: 'y' }, 'Grep')] },
      want: ['refNotUpstream@c'],
    },
    {
      name: 'a step downstream of it',
      args: { file_path: 'o', content: '{{steps.after.result}}' },
      extra: { nodes: [step('d', 'after', 900, 0, { file_path: 'x' })], edges: [edge('c', 'd')] },
      want: ['refLater@c'],
    },
    { name: 'a malformed placeholder', args: { file_path: 'o', content: '{{steps.read}}' }, want: ['badPlaceholder@c'] },
    { name: 'another template language is left alone', args: { file_path: 'o', content: '{{ user.name }} {% if x %}' }, want: [] },
    { name: 'an undeclared input', args: { file_path: '{{inputs.out}}', content: 'x' }, want: ['undeclaredInput@c'] },
    { name: 'a declared input', args: { file_path: '{{inputs.out}}', content: 'x' }, env: { inputs: ['out'] }, want: [] },
    { name: 'an undeclared file', args: { file_path: '@file:report', content: 'x' }, env: { inputs: ['out'] }, want: ['undeclaredFile@c'] },
    { name: 'a declared file', args: { file_path: '@file:report', content: 'x' }, env: { inputs: ['report'] }, want: [] },
    { name: 'placeholders deep in arrays and objects', args: { file_path: 'o', content: 'x', extra: [{ k: '{{steps.nope.result}}' }] }, want: ['refUnknownStep@c'] },
    { name: 'a required argument left out', args: { file_path: 'o' }, env: { tools }, want: ['missingArg@c'] },
    { name: 'an unknown tool', args: { file_path: 'o', content: 'x' }, env: { tools: new Map([['Read', {}], ['Write', {}]]) }, want: ['unknownTool@a'] },
  ]
  for (const c of cases) it(c.name, () => expect(codes(chain(c.args, c.extra), c.env)).toEqual(c.want))

  it('last.result when the previous step in plan order is not a dependency', () => {
    const g: Graph = { nodes: [step('a', 'a', 0), step('b', 'b', 0, 200, { file_path: '{{last.result}}' })], edges: [] }
    expect(codes(g)).toEqual(['refLastNotUpstream@b'])
    const first: Graph = { nodes: [step('a', 'a', 0, 0, { file_path: '{{last.result}}' })], edges: [] }
    expect(codes(first)).toEqual(['refLastFirst@a'])
  })

  it('problems point at the argument', () => {
    const p = compile(chain({ file_path: 'o', content: '{{steps.nope.result}}' })).problems[0]
    expect(p.pointer).toBe('/content')
  })
})

describe('placeholders', () => {
  const cases: { s: string; want: { kind: string; target: string; path: string; whole: boolean }[]; error?: boolean }[] = [
    { s: '{{steps.read.result}}', want: [{ kind: 'step', target: 'read', path: '', whole: true }] },
    { s: '{{ steps.read.result.a[0]["b.c"] }}', want: [{ kind: 'step', target: 'read', path: '.a[0]["b.c"]', whole: true }] },
    { s: 'see {{inputs.x}}', want: [{ kind: 'input', target: 'x', path: '', whole: false }] },
    { s: '{{inputs.x}}{{inputs.y}}', want: [{ kind: 'input', target: 'x', path: '', whole: false }, { kind: 'input', target: 'y', path: '', whole: false }] },
    { s: '{{last.result}}', want: [{ kind: 'last', target: '', path: '', whole: true }] },
    { s: '@file:report', want: [{ kind: 'file', target: 'report', path: '', whole: true }] },
    { s: '{{other}} {{ jinja }}', want: [] },
    { s: '{{steps.x}}', want: [], error: true },
    { s: '{{inputs}}', want: [], error: true },
    { s: '{{steps.x.result[a]}}', want: [], error: true },
    { s: '@file:', want: [], error: true },
  ]
  for (const c of cases) {
    it(c.s, () => {
      const r = placeholdersIn(c.s)
      expect(r.refs.map(({ kind, target, path, whole }) => ({ kind, target, path, whole }))).toEqual(c.want)
      expect(r.errors.length > 0).toBe(!!c.error)
    })
  }

  it('renaming a step rewrites references to it and only to it', () => {
    const args = { a: '{{steps.read.result}} {{ steps.read.result.x }}', b: ['{{steps.reader.result}}'], c: '{{inputs.read}}' }
    expect(rewriteStepRefs(args, 'read', 'load')).toEqual({ a: '{{steps.load.result}} {{ steps.load.result.x }}', b: ['{{steps.reader.result}}'], c: '{{inputs.read}}' })
  })
})

describe('upstreamSteps', () => {
  it('lists ancestors nearest first, not descendants or siblings', () => {
    const g: Graph = {
      nodes: [step('a', 'a', 0), step('b', 'b', 1), step('c', 'c', 2), step('d', 'd', 3), step('e', 'e', 4)],
      edges: [edge('a', 'b'), edge('b', 'c'), edge('c', 'd'), edge('a', 'e')],
    }
    expect(upstreamSteps(g, 'c').map((n) => n.id)).toEqual(['b', 'a'])
  })
})

describe('canvas text', () => {
  it('round-trips byte for byte', () => {
    const g: Graph = { nodes: [step('a', 'a', 10.4, 20.6, { file_path: 'x', n: [1, { z: true }] }), { id: 'n', type: 'note', position: { x: 1, y: 2 }, data: { text: 'note' } }], edges: [edge('a', 'a')] }
    const text = serializeCanvas(g, { x: 1, y: 2, zoom: 0.75 })
    const doc = parseCanvas(text)!
    expect(serializeCanvas(doc, doc.viewport)).toBe(text)
    expect(serializeGraph(doc)).toBe(serializeGraph(g))
  })

  it('rejects what is not a version 1 canvas', () => {
    for (const bad of [null, 'nope', '{}', { version: 2, nodes: [], edges: [] }, { version: 1, nodes: {} }]) expect(parseCanvas(bad)).toBeNull()
  })

  it('drops malformed nodes and edges but keeps the rest', () => {
    const doc = parseCanvas({ version: 1, nodes: [{ id: 'a', type: 'step', position: { x: 0, y: 0 }, data: { tool: 'Read', stepId: 'a' } }, { id: 'b', type: 'weird' }, { id: 'a', type: 'note' }], edges: [{ id: 'e', source: 'a' }] })!
    expect(doc.nodes.map((n) => n.id)).toEqual(['a'])
    expect(doc.edges).toEqual([])
  })

  it('a plan without a canvas is laid out by depth and compiles back to the same plan', () => {
    const plan = {
      steps: [
        { id: 'g', tool: 'Grep', args: { pattern: 'x' } },
        { id: 'r', tool: 'Read', args: { file_path: '{{steps.g.result}}' }, dependsOn: ['g'] },
        { tool: 'Read', args: { file_path: 'b' }, dependsOn: [0] },
        { id: 'w', tool: 'Write', description: 'save', args: { file_path: 'o', content: '{{steps.r.result}}' }, dependsOn: ['r', 'step-3'], requiresApproval: true },
      ],
    }
    const g = graphFromPlan(plan as any)
    expect(g.nodes).toHaveLength(4)
    expect(g.edges).toHaveLength(4)
    const xs = g.nodes.map((n) => n.position.x)
    expect(xs[0]).toBeLessThan(xs[1])
    expect(xs[1]).toBe(xs[2])
    expect(xs[3]).toBeGreaterThan(xs[1])
    const out = compile(g)
    expect(out.problems).toEqual([])
    expect(out.plan.steps.map((s) => [s.id, s.dependsOn ?? []])).toEqual([['g', []], ['r', ['g']], ['step-3', ['g']], ['w', ['r', 'step-3']]])
    expect(out.plan.steps[3].requiresApproval).toBe(true)
  })
})
