// The graph-to-plan compiler: turns the canvas into the AgentPlan that the
// server runs (seed 001: edges become dependsOn, steps are listed in a
// topological order), and finds, before anything is saved, what the
// server would refuse, so the canvas can point at the node that is wrong:
// cycles, edges to nothing, step ids the server reads differently,
// placeholders that name an unknown step, a step that is not upstream, or
// an undeclared input, and required arguments left empty.
//
// The rules mirror package plan (plan/validate.go, plan/template.go) so
// that a plan compiled without problems passes the server's validation
// (given the tools exist and their schemas accept the arguments).

import type { Plan, PlanStep } from '../api/types'
import { isStep, type Graph, type StepNode, STEP_ID_RE } from './flowGraph'

/** The server's bound on a saved workflow's steps (plan.MaxSteps). */
export const MAX_STEPS = 64
const MAX_ID_LEN = 128

export type ProblemCode =
  | 'empty' | 'tooMany' | 'noTool' | 'unknownTool' | 'idEmpty' | 'idChars' | 'idDigits' | 'idLong' | 'idDuplicate'
  | 'cycle' | 'afterCycle' | 'selfLoop' | 'danglingEdge' | 'noteEdge' | 'duplicateEdge'
  | 'badPlaceholder' | 'refUnknownStep' | 'refSelf' | 'refNotUpstream' | 'refLater' | 'refLastFirst' | 'refLastNotUpstream'
  | 'undeclaredInput' | 'undeclaredFile' | 'missingArg' | 'server'

export interface Problem {
  code: ProblemCode
  /** The node the problem is on (absent for the graph as a whole). */
  nodeId?: string
  edgeId?: string
  /** Where in the node's args (a JSON pointer), when it is about an argument. */
  pointer?: string
  params: Record<string, string | number>
  /** A problem the server reported (code "server"): its message as is. */
  message?: string
}

export interface CompileEnv {
  /** Declared workflow inputs (the input schema's properties). */
  inputs?: Iterable<string>
  /** Declared file inputs, for @file:<name>. Defaults to every input, as the server accepts. */
  files?: Iterable<string>
  /** The orchestratable tools by name, with their input schemas; absent: tools are not checked. */
  tools?: Map<string, unknown>
  maxSteps?: number
}

export interface Compiled {
  plan: Plan
  /** Node ids in plan order. */
  order: string[]
  problems: Problem[]
  /** The step id of each step node. */
  stepIds: Map<string, string>
}

// ---- placeholders -------------------------------------------------------------

export type PlaceholderKind = 'step' | 'last' | 'input' | 'file'

export interface Placeholder {
  kind: PlaceholderKind
  /** Step reference (id or position), input or file name; '' for last. */
  target: string
  /** The path after the target (".a[0]"), '' for the whole value. */
  path: string
  /** As written. */
  text: string
  /** JSON pointer of the string value holding it. */
  pointer: string
  /** The string value is exactly this placeholder (keeps its JSON type). */
  whole: boolean
}

export interface PlaceholderError { text: string; pointer: string; message: string }

const isTokenChar = (c: string) => !'.[]{} \t\n\r'.includes(c)

function parsePath(p: string): string | null {
  for (let i = 0; i < p.length;) {
    if (p[i] === '.') {
      let k = i + 1
      while (k < p.length && isTokenChar(p[k])) k++
      if (k === i + 1) return `empty field name in path "${p}"`
      i = k
    } else if (p[i] === '[') {
      if (p[i + 1] === '"') {
        let k = i + 2
        while (k < p.length && p[k] !== '"') k += p[k] === '\\' ? 2 : 1
        if (k >= p.length || p[k + 1] !== ']') return `unterminated ["..."] in path "${p}"`
        i = k + 2
        continue
      }
      let k = i + 1
      while (k < p.length && p[k] >= '0' && p[k] <= '9') k++
      if (k === i + 1 || p[k] !== ']') return `index must be [<digits>] in path "${p}"`
      i = k + 1
    } else {
      return `unexpected "${p.slice(i)}" in path "${p}"`
    }
  }
  return null
}

/** parseExpr parses the inside of {{ }}: null when it is not one of ours (another template language). */
function parseExpr(expr: string): { ph?: Omit<Placeholder, 'text' | 'pointer' | 'whole'>; error?: string } | null {
  const t = expr.trim()
  let n = 0
  while (n < t.length && isTokenChar(t[n])) n++
  const head = t.slice(0, n)
  let rest = t.slice(n)
  const token = () => {
    let k = 0
    while (k < rest.length && isTokenChar(rest[k])) k++
    const tok = rest.slice(0, k)
    rest = rest.slice(k)
    return tok
  }
  const result = () => {
    if (!rest.startsWith('.result')) return false
    const r = rest.slice('.result'.length)
    if (r !== '' && r[0] !== '.' && r[0] !== '[') return false
    rest = r
    return true
  }
  let kind: PlaceholderKind
  let target = ''
  switch (head) {
    case 'steps':
      kind = 'step'
      if (!rest.startsWith('.')) return { error: 'write {{steps.<position or id>.result}}' }
      rest = rest.slice(1)
      target = token()
      if (!target || !result()) return { error: 'write {{steps.<position or id>.result}}' }
      break
    case 'last':
      kind = 'last'
      if (!result()) return { error: 'write {{last.result}}' }
      break
    case 'inputs':
      kind = 'input'
      if (!rest.startsWith('.')) return { error: 'write {{inputs.<name>}}' }
      rest = rest.slice(1)
      target = token()
      if (!target) return { error: 'write {{inputs.<name>}}' }
      break
    default:
      return null
  }
  const bad = parsePath(rest)
  if (bad) return { error: bad }
  return { ph: { kind, target, path: rest } }
}

/** placeholdersIn finds the placeholders of one string value. */
export function placeholdersIn(s: string, pointer = ''): { refs: Placeholder[]; errors: PlaceholderError[] } {
  const refs: Placeholder[] = []
  const errors: PlaceholderError[] = []
  if (s.startsWith('@file:')) {
    const name = s.slice('@file:'.length)
    if (!name) errors.push({ text: s, pointer, message: 'needs a file name: @file:<name>' })
    else refs.push({ kind: 'file', target: name, path: '', text: s, pointer, whole: true })
    return { refs, errors }
  }
  let i = 0
  let last = 0
  let segments = 0
  let literal = false
  const found: Placeholder[] = []
  for (;;) {
    const open = s.indexOf('{{', i)
    if (open < 0) break
    const close = s.indexOf('}}', open + 2)
    if (close < 0) break
    const end = close + 2
    const r = parseExpr(s.slice(open + 2, close))
    if (r === null) {
      i = open + 1
      continue
    }
    if (r.error) {
      errors.push({ text: s.slice(open, end), pointer, message: r.error })
      return { refs, errors }
    }
    if (open > last) literal = true
    segments++
    found.push({ ...r.ph!, text: s.slice(open, end), pointer, whole: false })
    i = last = end
  }
  if (last < s.length && segments > 0) literal = true
  if (segments === 1 && !literal) found[0].whole = true
  refs.push(...found)
  return { refs, errors }
}

function escapePointer(k: string) {
  return k.replace(/~/g, '~0').replace(/\//g, '~1')
}

/** placeholdersOf walks a step's args for placeholders (not in object keys). */
export function placeholdersOf(args: unknown): { refs: Placeholder[]; errors: PlaceholderError[] } {
  const refs: Placeholder[] = []
  const errors: PlaceholderError[] = []
  const walk = (v: unknown, ptr: string) => {
    if (typeof v === 'string') {
      const r = placeholdersIn(v, ptr)
      refs.push(...r.refs)
      errors.push(...r.errors)
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${ptr}/${i}`))
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, `${ptr}/${escapePointer(k)}`)
    }
  }
  walk(args, '')
  return { refs, errors }
}

/**
 * rewriteStepRefs renames a step in placeholders ({{steps.old.result...}}
 * becomes {{steps.new.result...}}), so that renaming a step id on the canvas
 * keeps the references to it working.
 */
export function rewriteStepRefs(args: unknown, from: string, to: string): unknown {
  const esc = from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const re = new RegExp(`(\\{\\{\\s*steps\\.)${esc}(\\.result)`, 'g')
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(re, `$1${to}$2`)
    if (Array.isArray(v)) return v.map(walk)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  }
  return walk(args)
}

// ---- compiling ------------------------------------------------------------------

/**
 * topoOrder lists the step nodes so that every step comes after the
 * steps it depends on (Kahn's algorithm). Among steps that are ready
 * together it takes the leftmost, then the topmost, so the plan reads the
 * way the canvas does. Steps on a cycle cannot be ordered: they are
 * returned in `cyclic` (and appended to the order, so that the plan still
 * lists every step).
 */
export function topoOrder(steps: StepNode[], deps: Map<string, string[]>): { order: StepNode[]; cyclic: StepNode[] } {
  const indeg = new Map<string, number>()
  const out = new Map<string, string[]>()
  for (const s of steps) {
    indeg.set(s.id, 0)
    out.set(s.id, [])
  }
  for (const s of steps) {
    for (const d of deps.get(s.id) ?? []) {
      if (!indeg.has(d)) continue
      indeg.set(s.id, indeg.get(s.id)! + 1)
      out.get(d)!.push(s.id)
    }
  }
  const byId = new Map(steps.map((s) => [s.id, s]))
  const before = (a: StepNode, b: StepNode) =>
    a.position.x - b.position.x || a.position.y - b.position.y || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const ready = steps.filter((s) => indeg.get(s.id) === 0)
  const order: StepNode[] = []
  while (ready.length) {
    ready.sort(before)
    const s = ready.shift()!
    order.push(s)
    for (const t of out.get(s.id)!) {
      const n = indeg.get(t)! - 1
      indeg.set(t, n)
      if (n === 0) ready.push(byId.get(t)!)
    }
  }
  const cyclic = steps.filter((s) => !order.includes(s)).sort(before)
  return { order, cyclic }
}

/** findCycle returns one cycle through the given nodes (node ids, in edge direction), for the message. */
function findCycle(start: string, deps: Map<string, string[]>, within: Set<string>): string[] {
  // Walk dependencies backwards from start until a node repeats.
  const path: string[] = []
  const seen = new Map<string, number>()
  let cur: string | undefined = start
  while (cur !== undefined && !seen.has(cur)) {
    seen.set(cur, path.length)
    path.push(cur)
    cur = (deps.get(cur) ?? []).find((d) => within.has(d))
  }
  if (cur === undefined) return [start]
  return path.slice(seen.get(cur)!).reverse()
}

function stepIdProblem(id: string): ProblemCode | null {
  if (!id) return 'idEmpty'
  if (id.length > MAX_ID_LEN) return 'idLong'
  if (/^\d+$/.test(id)) return 'idDigits'
  if (!STEP_ID_RE.test(id)) return 'idChars'
  return null
}

/** requiredMissing lists the required properties of a tool's schema that args leave out. */
export function requiredMissing(schema: unknown, args: Record<string, unknown>): string[] {
  const s = schema as { required?: unknown; properties?: Record<string, unknown> } | undefined
  if (!s || !Array.isArray(s.required)) return []
  return (s.required as unknown[]).filter((k): k is string => typeof k === 'string' && (args[k] === undefined || args[k] === null))
}

/** compile turns a canvas graph into a plan and the problems that would make the server refuse it. */
export function compile(g: Graph, env: CompileEnv = {}): Compiled {
  const problems: Problem[] = []
  const add = (code: ProblemCode, params: Record<string, string | number> = {}, where: Partial<Problem> = {}) =>
    problems.push({ code, params, ...where })
  const inputs = new Set(env.inputs ?? [])
  const files = env.files ? new Set(env.files) : inputs
  const steps = g.nodes.filter(isStep)
  const nodeById = new Map(g.nodes.map((n) => [n.id, n]))
  const limit = env.maxSteps ?? MAX_STEPS

  if (steps.length === 0) add('empty')
  if (steps.length > limit) add('tooMany', { count: steps.length, limit })

  // Edges -> dependencies. Edges to or from nothing, or touching a note, are reported and ignored.
  const deps = new Map<string, string[]>(steps.map((s) => [s.id, []]))
  const seenEdge = new Set<string>()
  for (const e of g.edges) {
    const src = nodeById.get(e.source)
    const dst = nodeById.get(e.target)
    if (!src || !dst) {
      add('danglingEdge', { source: e.source, target: e.target }, { edgeId: e.id, nodeId: (src ?? dst)?.id })
      continue
    }
    if (src.type !== 'step' || dst.type !== 'step') {
      add('noteEdge', {}, { edgeId: e.id })
      continue
    }
    if (e.source === e.target) {
      add('selfLoop', {}, { edgeId: e.id, nodeId: e.source })
      continue
    }
    const key = `${e.source}\u0000${e.target}`
    if (seenEdge.has(key)) {
      add('duplicateEdge', {}, { edgeId: e.id, nodeId: e.target })
      continue
    }
    seenEdge.add(key)
    deps.get(e.target)!.push(e.source)
  }

  const { order, cyclic } = topoOrder(steps, deps)
  if (cyclic.length) {
    const within = new Set(cyclic.map((s) => s.id))
    const label = (id: string) => (nodeById.get(id) as StepNode | undefined)?.data.stepId || id
    for (const s of cyclic) {
      const cyc = findCycle(s.id, deps, within)
      // Steps downstream of a cycle cannot be ordered either; they say which cycle they wait on.
      add(cyc.includes(s.id) ? 'cycle' : 'afterCycle', { path: [...cyc, cyc[0]].map(label).join(' → ') }, { nodeId: s.id })
    }
  }
  const all = [...order, ...cyclic]

  // Step ids.
  const stepIds = new Map<string, string>()
  const firstWithId = new Map<string, string>()
  for (const s of all) {
    const id = (s.data.stepId ?? '').trim()
    stepIds.set(s.id, id)
    const bad = stepIdProblem(id)
    if (bad) add(bad, { id }, { nodeId: s.id })
    if (id) {
      if (firstWithId.has(id)) add('idDuplicate', { id }, { nodeId: s.id })
      else firstWithId.set(id, s.id)
    }
    if (!s.data.tool) add('noTool', {}, { nodeId: s.id })
    else if (env.tools && !env.tools.has(s.data.tool)) add('unknownTool', { tool: s.data.tool }, { nodeId: s.id })
  }

  // Ancestors, for references: a step may use the results of steps upstream of it.
  const ancestors = new Map<string, Set<string>>()
  const ancestorsOf = (id: string, stack = new Set<string>()): Set<string> => {
    const got = ancestors.get(id)
    if (got) return got
    const out = new Set<string>()
    stack.add(id)
    for (const d of deps.get(id) ?? []) {
      out.add(d)
      if (!stack.has(d)) for (const a of ancestorsOf(d, stack)) out.add(a)
    }
    stack.delete(id)
    ancestors.set(id, out)
    return out
  }
  const position = new Map(all.map((s, i) => [s.id, i]))

  for (const s of all) {
    const { refs, errors } = placeholdersOf(s.data.args)
    for (const e of errors) add('badPlaceholder', { text: e.text, message: e.message }, { nodeId: s.id, pointer: e.pointer })
    for (const r of refs) {
      const where = { nodeId: s.id, pointer: r.pointer }
      switch (r.kind) {
        case 'step': {
          let target: string | undefined
          if (/^\d+$/.test(r.target)) {
            const n = Number(r.target)
            target = n < all.length ? all[n].id : undefined
          } else {
            target = firstWithId.get(r.target)
          }
          if (!target) add('refUnknownStep', { ref: r.target, text: r.text }, where)
          else if (target === s.id) add('refSelf', { text: r.text }, where)
          else if (!ancestorsOf(s.id).has(target)) {
            const code = position.get(target)! > position.get(s.id)! && ancestorsOf(target).has(s.id) ? 'refLater' : 'refNotUpstream'
            add(code, { ref: stepIds.get(target) || r.target, text: r.text }, where)
          }
          break
        }
        case 'last': {
          const i = position.get(s.id)!
          if (i === 0) add('refLastFirst', { text: r.text }, where)
          else if (!ancestorsOf(s.id).has(all[i - 1].id)) add('refLastNotUpstream', { ref: stepIds.get(all[i - 1].id) ?? '', text: r.text }, where)
          break
        }
        case 'input':
          if (!inputs.has(r.target)) add('undeclaredInput', { name: r.target, text: r.text }, where)
          break
        case 'file':
          if (!files.has(r.target)) add('undeclaredFile', { name: r.target, text: r.text }, where)
          break
      }
    }
    if (env.tools && s.data.tool && env.tools.has(s.data.tool)) {
      for (const k of requiredMissing(env.tools.get(s.data.tool), s.data.args ?? {})) {
        add('missingArg', { name: k }, { nodeId: s.id, pointer: '/' + escapePointer(k) })
      }
    }
  }

  const planSteps: PlanStep[] = all.map((s) => {
    const step: PlanStep = { id: stepIds.get(s.id)!, tool: s.data.tool }
    const desc = (s.data.description || s.data.label || '').trim()
    if (desc) step.description = desc
    step.args = s.data.args ?? {}
    const ds = (deps.get(s.id) ?? []).slice().sort((a, b) => position.get(a)! - position.get(b)!).map((d) => stepIds.get(d)!)
    if (ds.length) step.dependsOn = ds
    if (s.data.requiresApproval) step.requiresApproval = true
    return step
  })
  return { plan: { steps: planSteps }, order: all.map((s) => s.id), problems, stepIds }
}

/** upstreamSteps lists the steps a node may reference: its ancestors, nearest first. */
export function upstreamSteps(g: Graph, nodeId: string): StepNode[] {
  const parents = new Map<string, string[]>()
  for (const e of g.edges) parents.set(e.target, [...(parents.get(e.target) ?? []), e.source])
  const byId = new Map(g.nodes.map((n) => [n.id, n]))
  const out: StepNode[] = []
  const seen = new Set<string>([nodeId])
  let frontier = [nodeId]
  while (frontier.length) {
    const next: string[] = []
    for (const id of frontier) {
      for (const p of parents.get(id) ?? []) {
        if (seen.has(p)) continue
        seen.add(p)
        const n = byId.get(p)
        if (n && isStep(n)) {
          out.push(n)
          next.push(p)
        }
      }
    }
    frontier = next
  }
  return out
}
