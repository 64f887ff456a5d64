// The Flows canvas's look, after Flowise AgentFlow v2's dark canvas (seed
// 001): node-type colours from its design tokens, cards tinted with MUI's
// darken(color, 0.8), and the grouping of weft's tools into the palette's
// categories, each drawn in one of those node types' colours.

/** Flowise AgentFlow v2's node-type colours (tokens.colors.nodes). */
export const nodeColors = {
  condition: '#FFB938',
  start: '#7EE787',
  llm: '#64B5F6',
  agent: '#4DD0E1',
  humanInput: '#6E6EFD',
  loop: '#FFA07A',
  directReply: '#4DDBBB',
  customFunction: '#E4B7FF',
  tool: '#d4a373',
  retriever: '#b8bedd',
  conditionAgent: '#ff8fab',
  stickyNote: '#fee440',
  http: '#FF7F7F',
  iteration: '#9C89B8',
  executeFlow: '#a3b18a',
} as const

export type IconName =
  | 'search' | 'file' | 'pencil' | 'terminal' | 'world' | 'user' | 'checklist' | 'robot' | 'sparkles' | 'plug'
  | 'tools' | 'note' | 'play' | 'undo' | 'redo' | 'trash' | 'copy' | 'save' | 'upload' | 'download' | 'magnet'
  | 'magnetOff' | 'grid' | 'gridOff' | 'chat' | 'x' | 'chevronRight' | 'chevronDown' | 'braces' | 'warn' | 'check'
  | 'clock' | 'stop' | 'arrowLeft' | 'plus' | 'fit' | 'zoomIn' | 'zoomOut' | 'layout' | 'inputs' | 'send' | 'lock'
  | 'history' | 'template' | 'eye' | 'eyeOff'

/** parseColor reads #rgb, #rrggbb and rgb(r, g, b). */
export function parseColor(c: string): [number, number, number] {
  const s = c.trim()
  if (s.startsWith('#')) {
    let h = s.slice(1)
    if (h.length === 3) h = h.split('').map((x) => x + x).join('')
    const n = parseInt(h.slice(0, 6), 16)
    if (h.length >= 6 && Number.isFinite(n)) return [(n >> 16) & 255, (n >> 8) & 255, n & 255]
  }
  const m = /^rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/.exec(s)
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])]
  return [128, 128, 128]
}

/**
 * darken is MUI's darken(color, coefficient): every channel scaled by
 * (1 - coefficient). The canvas tints a node's card with
 * darken(nodeColor, 0.8), as Flowise does in dark mode.
 */
export function darken(color: string, coefficient: number): string {
  const k = 1 - Math.min(1, Math.max(0, coefficient))
  const [r, g, b] = parseColor(color)
  return `rgb(${Math.round(r * k)}, ${Math.round(g * k)}, ${Math.round(b * k)})`
}

/** alpha returns the colour with an opacity, for borders and glows. */
export function alpha(color: string, a: number): string {
  const [r, g, b] = parseColor(color)
  return `rgba(${r}, ${g}, ${b}, ${a})`
}

export interface ToolCategory {
  key: string
  /** i18n key of the group's title; MCP groups are named by their server. */
  title: string
  server?: string
  color: string
  icon: IconName
  order: number
}

const categories: Record<string, Omit<ToolCategory, 'key'>> = {
  read: { title: 'flows.groups.read', color: nodeColors.retriever, icon: 'search', order: 1 },
  write: { title: 'flows.groups.write', color: nodeColors.tool, icon: 'pencil', order: 2 },
  shell: { title: 'flows.groups.shell', color: nodeColors.customFunction, icon: 'terminal', order: 3 },
  web: { title: 'flows.groups.web', color: nodeColors.http, icon: 'world', order: 4 },
  people: { title: 'flows.groups.people', color: nodeColors.humanInput, icon: 'user', order: 5 },
  agents: { title: 'flows.groups.agents', color: nodeColors.agent, icon: 'robot', order: 6 },
  memory: { title: 'flows.groups.memory', color: nodeColors.llm, icon: 'sparkles', order: 7 },
  mcp: { title: 'flows.groups.mcp', color: nodeColors.executeFlow, icon: 'plug', order: 8 },
  other: { title: 'flows.groups.other', color: nodeColors.tool, icon: 'tools', order: 9 },
}

const byName: Record<string, string> = {
  Read: 'read', Glob: 'read', Grep: 'read', LS: 'read', NotebookRead: 'read',
  Write: 'write', Edit: 'write', MultiEdit: 'write', NotebookEdit: 'write',
  Bash: 'shell', BashOutput: 'shell', KillShell: 'shell', KillBash: 'shell',
  WebFetch: 'web', WebSearch: 'web', web_fetch: 'web', web_search: 'web',
  AskUserQuestion: 'people', TodoWrite: 'people',
  Task: 'agents', Agent: 'agents',
}

/** Per-tool icons where the group's icon says too little. */
const toolIcons: Record<string, IconName> = {
  Read: 'file', Write: 'pencil', Edit: 'pencil', Glob: 'search', Grep: 'search', TodoWrite: 'checklist',
  AskUserQuestion: 'user', WebFetch: 'world', Bash: 'terminal',
}

/** categoryOf places a tool in the palette: by name, MCP tools by server. */
export function categoryOf(tool: string): ToolCategory {
  const mcp = /^mcp__([^_]+(?:_[^_]+)*?)__/.exec(tool)
  if (mcp) return { key: 'mcp:' + mcp[1], ...categories.mcp, server: mcp[1] }
  let key = byName[tool]
  if (!key && /^memory_/.test(tool)) key = 'memory'
  if (!key && /^(plugin|ext)[_:]/.test(tool)) key = 'other'
  key = key ?? 'other'
  return { key, ...categories[key] }
}

/** The colour and icon a step node of this tool is drawn with. */
export function toolLook(tool: string): { color: string; icon: IconName } {
  const c = categoryOf(tool)
  return { color: c.color, icon: toolIcons[tool] ?? c.icon }
}

/** A sticky note's colour. */
export const noteColor = nodeColors.stickyNote
