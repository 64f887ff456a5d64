// Wire types of weft's public HTTP API (README "weft serve", docs/runs.md).
// The session API writes snake_case, runs/workflows/tasks camelCase.

export interface ErrorBody {
  error: { type: string; message: string }
  problems?: PlanProblem[]
  inputProblems?: unknown[]
  missing?: string[]
}

// ---- sessions -------------------------------------------------------------

export interface Session {
  session_id: string
  created_at: string
  updated_at: string
  message_count: number
  last_seq: number
  /** The name users gave the session ("" when none). */
  title?: string
  /** The workflow the session runs as run_current_flow (the Flows dock). */
  workflow_tool?: { workflow_id: string; tool_name: string }
}

export interface SessionPage {
  sessions: Session[]
  next_cursor?: string
  has_more: boolean
}

/** One stored event as a stream frame carries it: id (seq), event (type), data. */
export interface StreamEvent<T = any> {
  seq: number
  type: string
  data: T
}

export interface TextData { text: string }
export interface TurnStartData { turn_number: number; model: string }
export interface ToolUseData { id: string; tool_name: string; input: unknown }
export interface ToolProgressData { id: string; tool_name: string; detail: string }
export interface ToolResultData {
  id: string
  tool_name: string
  output: string
  is_error: boolean
  denied?: boolean
  duration_ms: number
  data?: Record<string, unknown>
}
export interface NotifyData { id: string; tool_name: string; payload: unknown }
export interface RetryData { turn_number: number; attempt: number; delay_ms: number; status: string; error: string }
export interface TurnEndData {
  turn_number: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
  stop_reason: string
}
export interface DoneData {
  total_input_tokens: number
  total_output_tokens: number
  total_tokens: number
  cost_usd: number
  turn_count: number
  stop_reason: string
  text?: string
}
/** compaction (agent.CompactionData): one level of compaction changed what the model is sent. */
export interface CompactionData {
  level: string
  trigger: string
  tokens_before: number
  tokens_after: number
  messages_before: number
  messages_after: number
  model?: string
  note?: string
}
/** token_warning (agent.TokenWarningData): the conversation passed a share (threshold) of its usable window (limit). */
export interface TokenWarningData { used_tokens: number; window: number; limit: number; threshold: number }
/** suggestions: follow-up prompts offered after a turn's done. */
export interface SuggestionsData { suggestions: string[] }
export interface ErrorData { error: string; status?: string; hint?: string }
export interface MessageData { message_seq: number; reason?: string }
export interface PermissionRequestData {
  id: string
  tool_name: string
  input: unknown
  message: string
  tool_use_id: string
  reason?: string
}
export interface CheckpointData { id: string; tool_call_id: string; tool_name: string; input: unknown; message: string }

// ---- permissions, plugins, audit ------------------------------------------

export interface Permissions {
  allow: string[] | null
  ask: string[] | null
  deny: string[] | null
  defaultMode?: string
  additionalDirectories?: string[]
}

export interface PluginInfo { id: string; trusted: boolean; hooks: number }

/** A configured hook (GET /v1/hooks): secrets are redacted by the server. */
/** One MCP server weft is a client of (GET /v1/mcp/servers). */
export interface McpServerInfo {
  name: string
  scope?: string
  source?: string
  transport: string
  command?: string
  args?: string[]
  url?: string
  env?: string[]
  headers?: string[]
  state: 'connected' | 'connecting' | 'failed' | 'disabled'
  detail?: string
  reason?: string
  error?: string
  tools: number
  tool_names: string[]
}

export interface HookInfo {
  name: string
  event: string
  matcher?: string
  type: 'command' | 'http' | 'func'
  command?: string
  url?: string
  timeout_ms: number
  async?: boolean
  plugin?: string
  trusted: boolean
  dir?: string
  env?: string[]
  headers?: string[]
}

export interface AuditEntry {
  id: number
  session_id: string
  turn_number: number
  timestamp: string
  tool_name: string
  operation: string
  resource?: string
  actor_id?: string
  outcome: string
  reason?: string
  extra?: Record<string, string>
}

export interface ToolInfo { name: string; description: string; input_schema?: unknown; inputSchema?: unknown }

// ---- runs -------------------------------------------------------------------

export interface PlanStep {
  id: string
  description?: string
  tool: string
  args?: unknown
  dependsOn?: string[]
  requiresApproval?: boolean
}
export interface Plan { steps: PlanStep[] }
export interface PlanProblem { step: number; stepId?: string; message: string }

export interface RunConfig {
  model?: string
  autoApprove?: boolean
  requireApproval?: boolean
  permissionMode?: string
  capabilityMode?: string
  maxParallel?: number
}

export interface RunRequest {
  goal?: string
  config?: RunConfig
  workflow?: Plan
  inputs?: Record<string, unknown>
}

export interface Run {
  runId: string
  goal: string
  status: string
  plan?: Plan
  config?: RunConfig
  workflowId?: string
  parentId?: string
  batchId?: string
  summary?: string
  error?: string
  createdAt: string
  updatedAt: string
  lastSeq: number
}

export interface StepResult {
  stepId: string
  index: number
  status: string
  result?: unknown
  error?: string
  startedAt?: string
  finishedAt?: string
}

export interface RunDetail extends Run {
  steps: StepResult[]
  result?: unknown
  audit?: AuditEntry[]
  awaiting?: { plan?: boolean; steps?: string[]; permissions?: string[] }
}

export interface RunPage { runs: Run[]; nextCursor?: string; hasMore: boolean }

// ---- workflows, tasks, schedules ------------------------------------------

export interface Workflow {
  id: string
  name: string
  description?: string
  inputSchema?: unknown
  plan: Plan
  canvas?: unknown
  published: boolean
  revision: number
  toolName?: string
  createdAt: string
  updatedAt: string
}

export interface Task {
  taskId: string
  kind: string
  workflowId?: string
  runId?: string
  description?: string
  status: string
  result?: unknown
  error?: string
  createdAt: string
  finishedAt?: string
}

export interface Schedule {
  id: string
  workflowId: string
  inputs?: unknown
  intervalSeconds: number
  recurring: boolean
  active: boolean
  nextRunAt: string
  expiresAt: string
  createdAt: string
  lastRunAt?: string
  runCount: number
  lastTaskId?: string
  lastError?: string
  lastErrorAt?: string
}
