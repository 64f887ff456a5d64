// What the canvas's node and edge components need from the builder besides
// their own data: problems, run states, tool info and the edits they can
// ask for. Provided once by the builder, so node data stays the document's
// own (what is saved) and nothing view-only leaks into the canvas JSON.

import type { InjectionKey } from 'vue'
import type { ToolInfo } from '../api/types'
import type { Problem } from './flowCompile'
import type { StepRun } from './flowRun'

export interface FlowUi {
  /** Problems by node id, from the compiler (and the server's refusals). */
  problems: Map<string, Problem[]>
  /** Edges the compiler found wrong (duplicates, self loops). */
  badEdges: Set<string>
  /** The shown run's step states by node id. */
  run: Map<string, StepRun>
  tools: Map<string, ToolInfo>
  /** Node ids whose result panel is open. */
  openResults: Set<string>
  problemText: (p: Problem) => string
  colorOf: (nodeId: string) => string
  removeNode: (id: string) => void
  duplicateNode: (id: string) => void
  removeEdge: (id: string) => void
  noteInput: (id: string, text: string) => void
  toggleResult: (id: string) => void
}

export const flowUiKey: InjectionKey<FlowUi> = Symbol('flowUi')
