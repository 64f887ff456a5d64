// A typed client of weft's REST API. It is the UI's only way to the server:
// the UI uses the public API and nothing else.

import type {
  AuditEntry, ErrorBody, HookInfo, McpServerInfo, Permissions, PluginInfo, Plan, RunDetail, RunPage, RunRequest,
  Schedule, Session, SessionPage, Task, ToolInfo, Workflow,
} from './types'

/** An error answer of the API ({"error":{type,message}}) or a failed request. */
export class ApiError extends Error {
  readonly status: number
  readonly type: string
  readonly body?: ErrorBody
  readonly retryAfter?: number
  constructor(status: number, type: string, message: string, body?: ErrorBody, retryAfter?: number) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.type = type
    this.body = body
    this.retryAfter = retryAfter
  }
}

export interface ClientOptions {
  /** Origin and path prefix of the API; "" for the page's own origin. */
  baseURL?: string
  /** The bearer token, read at each request (null: none). */
  token?: () => string | null
  /** Called on 401 and 403 answers caused by the token (the UI then asks for one). */
  onAuthError?: (err: ApiError) => void
  fetch?: typeof fetch
}

export type Query = Record<string, string | number | boolean | undefined | null>

export function withQuery(path: string, q?: Query): string {
  if (!q) return path
  const u = new URLSearchParams()
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null || v === '') continue
    u.set(k, String(v))
  }
  const s = u.toString()
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path
}

/** Parses an error answer into an ApiError. */
export async function toApiError(res: Response): Promise<ApiError> {
  let body: ErrorBody | undefined
  let type = 'http_error'
  let message = `${res.status} ${res.statusText}`
  try {
    const text = await res.text()
    const parsed = JSON.parse(text)
    if (parsed && parsed.error) {
      body = parsed
      type = parsed.error.type || type
      message = parsed.error.message || message
    }
  } catch {
    // not JSON: keep the status line
  }
  const ra = Number(res.headers.get('Retry-After'))
  return new ApiError(res.status, type, message, body, Number.isFinite(ra) && ra > 0 ? ra : undefined)
}

export class Client {
  readonly baseURL: string
  private readonly opts: ClientOptions
  private readonly f: typeof fetch

  constructor(opts: ClientOptions = {}) {
    this.opts = opts
    this.baseURL = opts.baseURL ?? ''
    this.f = opts.fetch ?? ((...a) => fetch(...a))
  }

  headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { Accept: 'application/json' }
    // The server refuses JSON bodies not declared as JSON (415).
    if (json) h['Content-Type'] = 'application/json'
    const t = this.opts.token?.()
    if (t) h.Authorization = `Bearer ${t}`
    return h
  }

  url(path: string): string {
    return this.baseURL + path
  }

  /** Sends a request and returns the raw response when it is a success. */
  async raw(method: string, path: string, body?: unknown, init?: RequestInit): Promise<Response> {
    const hasBody = body !== undefined
    const res = await this.f(this.url(path), {
      method,
      headers: { ...this.headers(hasBody), ...(init?.headers as Record<string, string> | undefined) },
      body: hasBody ? JSON.stringify(body) : undefined,
      signal: init?.signal,
      credentials: 'omit',
      cache: 'no-store',
    })
    if (!res.ok) {
      const err = await toApiError(res)
      if (res.status === 401 || (res.status === 403 && err.message.includes('token'))) this.opts.onAuthError?.(err)
      throw err
    }
    return res
  }

  async request<T>(method: string, path: string, body?: unknown, init?: RequestInit): Promise<T> {
    const res = await this.raw(method, path, body, init)
    const text = await res.text()
    return (text ? JSON.parse(text) : undefined) as T
  }

  get<T>(path: string, q?: Query) { return this.request<T>('GET', withQuery(path, q)) }
  post<T>(path: string, body?: unknown) { return this.request<T>('POST', path, body) }
  put<T>(path: string, body?: unknown) { return this.request<T>('PUT', path, body) }
  patch<T>(path: string, body?: unknown) { return this.request<T>('PATCH', path, body) }
  del<T>(path: string) { return this.request<T>('DELETE', path) }

  // ---- sessions --------------------------------------------------------------
  health() { return this.get<{ status: string; version: string }>('/v1/health') }
  listSessions(q?: { limit?: number; cursor?: string }) { return this.get<SessionPage>('/v1/sessions', q) }
  getSession(id: string) { return this.get<Session>(`/v1/sessions/${enc(id)}`) }
  createSession(id?: string) {
    return this.post<{ session_id: string; created_at: string }>('/v1/sessions', id ? { session_id: id } : {})
  }
  deleteSession(id: string) { return this.del<{ status: string }>(`/v1/sessions/${enc(id)}`) }
  renameSession(id: string, title: string) { return this.patch<Session>(`/v1/sessions/${enc(id)}`, { title }) }
  cancelSession(id: string) { return this.post<{ status: string }>(`/v1/sessions/${enc(id)}/cancel`) }

  /**
   * Sends a message. The answer is the turn's stream; the UI follows the
   * session's event stream instead, so it only waits for the answer's
   * status (errors come before the stream starts) and lets the body go:
   * the turn runs on whether or not anyone reads it.
   */
  async sendMessage(id: string, prompt: string, opts: { model?: string; thinking?: string } = {}) {
    const ctl = new AbortController()
    const res = await this.raw('POST', `/v1/sessions/${enc(id)}/messages`, { prompt, ...opts }, { signal: ctl.signal })
    ctl.abort()
    void res.body?.cancel().catch(() => {})
  }

  answerPermission(session: string, requestId: string, allow: boolean, reason?: string) {
    return this.post<{ status: string }>(`/v1/sessions/${enc(session)}/permissions/${enc(requestId)}`, { allow, reason: reason ?? '' })
  }
  getSessionPermissions(id: string) {
    return this.get<{ session_id: string; permissions: Permissions; server: Permissions }>(`/v1/sessions/${enc(id)}/permissions`)
  }
  putSessionPermissions(id: string, p: Permissions) {
    return this.put<{ permissions: Permissions }>(`/v1/sessions/${enc(id)}/permissions`, p)
  }
  getServerPermissions() { return this.get<{ permissions: Permissions }>('/v1/settings/permissions') }
  putServerPermissions(p: Permissions) { return this.put<{ permissions: Permissions }>('/v1/settings/permissions', p) }
  listMcpServers() { return this.get<{ servers: McpServerInfo[] }>('/v1/mcp/servers') }
  listHooks() { return this.get<{ hooks: HookInfo[]; count: number }>('/v1/hooks') }
  listPlugins() { return this.get<{ plugins: PluginInfo[]; count: number }>('/v1/plugin-hooks') }
  trustPlugin(id: string, trust: boolean) {
    return this.request<{ id: string; trusted: boolean }>(trust ? 'POST' : 'DELETE', `/v1/plugin-hooks/${enc(id)}/trust`)
  }
  audit(q: { session_id?: string; since?: string; limit?: number; after_id?: number }) {
    return this.get<{ entries: AuditEntry[]; count: number }>('/v1/audit', q)
  }
  tools() { return this.get<{ tools: ToolInfo[]; count: number }>('/v1/tools') }

  // ---- runs ------------------------------------------------------------------
  createRun(req: RunRequest) { return this.post<{ runId: string; status: string }>('/v1/runs', req) }
  batchRuns(runs: RunRequest[], capabilityMode?: string) {
    return this.post<{ batchId: string; runIds: string[] }>('/v1/runs/batch', capabilityMode ? { runs, capabilityMode } : { runs })
  }
  listRuns(q?: { q?: string; status?: string; limit?: number; cursor?: string }) { return this.get<RunPage>('/v1/runs', q) }
  getRun(id: string) { return this.get<RunDetail>(`/v1/runs/${enc(id)}`) }
  approveRun(id: string, body?: Plan | { stepId: string }) { return this.post<unknown>(`/v1/runs/${enc(id)}/approve`, body) }
  cancelRun(id: string) { return this.post<{ status: string }>(`/v1/runs/${enc(id)}/cancel`) }
  resumeRun(id: string) { return this.post<{ runId: string; status: string }>(`/v1/runs/${enc(id)}/resume`) }
  forkRun(id: string) { return this.post<{ runId: string; status: string; parentId: string }>(`/v1/runs/${enc(id)}/fork`) }
  rewindRun(id: string, keepSteps: number) {
    return this.post<{ runId: string; status: string }>(`/v1/runs/${enc(id)}/rewind`, { keepSteps })
  }
  answerRunPermission(id: string, requestId: string, allow: boolean, reason?: string) {
    return this.post<{ status: string }>(`/v1/runs/${enc(id)}/permissions/${enc(requestId)}`, { allow, reason: reason ?? '' })
  }
  agentTools() { return this.get<ToolInfo[]>('/v1/agent/tools') }

  // ---- workflows ---------------------------------------------------------------
  listWorkflows(published?: boolean) {
    return this.get<{ workflows: Workflow[]; count: number }>('/v1/workflows', published ? { published: true } : undefined)
  }

  // ---- tasks and schedules -----------------------------------------------------
  listTasks() { return this.get<{ tasks: Task[]; count: number }>('/v1/tasks') }
  getTask(id: string) { return this.get<Task>(`/v1/tasks/${enc(id)}`) }
  killTask(id: string) { return this.post<Task>(`/v1/tasks/${enc(id)}/kill`) }
  listSchedules() { return this.get<{ schedules: Schedule[]; count: number }>('/v1/schedules') }
  createSchedule(body: { workflowId: string; inputs?: unknown; intervalSeconds: number; recurring?: boolean; runImmediately?: boolean }) {
    return this.post<Schedule>('/v1/schedules', body)
  }
  deleteSchedule(id: string) { return this.del<unknown>(`/v1/schedules/${enc(id)}`) }
  setScheduleActive(id: string, active: boolean) { return this.patch<Schedule>(`/v1/schedules/${enc(id)}`, { active }) }
}

export function enc(s: string): string {
  return encodeURIComponent(s)
}
