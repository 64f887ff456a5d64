// The Flows view's calls to weft's public API (docs/runs.md: saved
// workflows, workflow runs, the orchestratable tools), on the app's one
// client. The canvas is sent as a JSON value and the API keeps its bytes;
// serializeCanvas writes canonical JSON, which JSON.stringify reproduces
// exactly, so what is stored is the text serializeCanvas made.

import { api } from '../api'
import { enc } from '../api/http'
import type { Plan, RunConfig, Session, ToolInfo, Workflow } from '../api/types'

export interface WorkflowSave {
  name?: string
  description?: string
  inputSchema?: unknown
  plan?: Plan
  /** The canvas text (serializeCanvas): sent as the JSON value it is. */
  canvas?: string
  published?: boolean
  /** The revision the edit is based on: the server answers 409 when another save came first. */
  revision?: number
}

export interface FileGrant { name: string; nativePath?: string; refs?: unknown; createSharedDirectory?: boolean }

function body(w: WorkflowSave): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(w)) {
    if (v === undefined) continue
    out[k] = k === 'canvas' ? JSON.parse(v as string) : v
  }
  return out
}

export const flowApi = {
  list: () => api().get<{ workflows: Workflow[]; count: number }>('/v1/workflows'),
  get: (id: string) => api().get<Workflow>(`/v1/workflows/${enc(id)}`),
  create: (w: WorkflowSave) => api().post<Workflow>('/v1/workflows', body(w)),
  update: (id: string, w: WorkflowSave) => api().put<Workflow>(`/v1/workflows/${enc(id)}`, body(w)),
  remove: (id: string) => api().del<{ status: string }>(`/v1/workflows/${enc(id)}`),
  copy: (id: string, name?: string) => api().post<Workflow>(`/v1/workflows/${enc(id)}/copy`, name ? { name } : {}),
  publish: (id: string, published: boolean, revision?: number) =>
    api().post<Workflow>(`/v1/workflows/${enc(id)}/${published ? 'publish' : 'unpublish'}`, revision ? { revision } : {}),
  run: (id: string, req: { inputs: Record<string, unknown>; files?: FileGrant[]; config?: RunConfig }) =>
    api().post<{ runId: string; status: string }>(`/v1/workflows/${enc(id)}/run`, req),
  tools: async (): Promise<ToolInfo[]> => {
    const list = await api().agentTools()
    return Array.isArray(list) ? list : []
  },
  /** Recent runs of one workflow (the API lists runs newest first; it has no workflow filter). */
  runsOf: async (id: string) => {
    const page = await api().listRuns({ limit: 100 })
    return page.runs.filter((r) => r.workflowId === id)
  },
}

// ---- the chat dock (API addition proposed in docs/ui.md, "API additions needed") ----

/**
 * createFlowSession opens a chat session in which the model has the
 * workflow as the tool run_current_flow (the stored revision at call time:
 * draft or published). Servers without the addition refuse the unknown
 * field with 400.
 */
export function createFlowSession(workflowId: string) {
  return api().post<{ session_id: string; created_at: string; workflow_tool?: { workflow_id: string; tool_name: string } }>(
    '/v1/sessions', { workflow_tool: { workflow_id: workflowId } },
  )
}

/** The sessions bound to a workflow (the dock's conversations with it), most recently updated first. */
export function sessionsForFlow(sessions: readonly Session[], workflowId: string): Session[] {
  return sessions
    .filter((s) => s.workflow_tool?.workflow_id === workflowId)
    .sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0))
}

/**
 * listFlowSessions pages through the server's sessions (at most `pages`
 * pages of 100) for those bound to the workflow: the API lists sessions
 * but does not filter them by binding.
 */
export async function listFlowSessions(workflowId: string, pages = 5): Promise<Session[]> {
  const all: Session[] = []
  let cursor: string | undefined
  for (let i = 0; i < pages; i++) {
    const page = await api().listSessions({ limit: 100, cursor })
    all.push(...page.sessions)
    if (!page.has_more || !page.next_cursor) break
    cursor = page.next_cursor
  }
  return sessionsForFlow(all, workflowId)
}
