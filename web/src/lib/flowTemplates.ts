// The templates gallery (seed 001: one-click templates, each pre-wired with
// its output references and a run form for people who only fill it in).
// Each is a plan over weft's built-in tools plus notes; the canvas is laid
// out from the plan when a template is opened. Seed 001's Excel-to-email
// template needs Excel and e-mail plugins weft does not ship, so the
// gallery has what works out of the box.

import type { Plan } from '../api/types'
import { graphFromPlan, newId, type Graph } from './flowGraph'

export interface FlowTemplate {
  id: string
  title: { en: string; zh: string }
  description: { en: string; zh: string }
  inputSchema: Record<string, unknown>
  plan: Plan
  /** The steps' descriptions in Chinese (the plan's are English). */
  zh: Record<string, string>
  /** Sticky notes: text by language, placed relative to the laid-out steps. */
  notes?: { en: string; zh: string; x: number; y: number }[]
}

export const templates: FlowTemplate[] = [
  {
    id: 'find-todos',
    zh: { find: '查找标记', report: '写入报告' },
    title: { en: 'Find TODOs and write a report', zh: '查找 TODO 并写成报告' },
    description: {
      en: 'Grep the workspace for a marker, then write every match into a Markdown report (the write waits for approval).',
      zh: '在工作区中搜索标记，再把所有匹配写入 Markdown 报告（写文件前等待审批）。',
    },
    inputSchema: {
      type: 'object',
      properties: {
        word: { type: 'string', title: 'Marker', description: 'The text or regular expression to look for', default: 'TODO' },
        report: { type: 'string', title: 'Report file', description: 'Where to write the report, relative to the workspace', default: 'todo-report.md' },
      },
      required: ['word'],
    },
    plan: {
      steps: [
        { id: 'find', tool: 'Grep', description: 'Find the marker', args: { pattern: '{{inputs.word}}', output_mode: 'content', '-n': true, head_limit: 500 } },
        {
          id: 'report', tool: 'Write', description: 'Write the report', dependsOn: ['find'], requiresApproval: true,
          args: { file_path: '{{inputs.report}}', content: '# {{inputs.word}} report\n\n```\n{{steps.find.result}}\n```\n' },
        },
      ],
    },
    notes: [{ en: 'The report step waits for your approval: it writes a file.', zh: '报告步骤会写文件，因此运行时等待你的批准。', x: 0, y: 170 }],
  },
  {
    id: 'survey-code',
    zh: { files: '列出文件', count: '统计匹配', summary: '写入摘要' },
    title: { en: 'Survey a codebase', zh: '代码库概览' },
    description: {
      en: 'List the files of a kind and count the lines matching a pattern in parallel, then write both into one summary.',
      zh: '并行列出某类文件、统计匹配某模式的行数，再把两者写进一份摘要。',
    },
    inputSchema: {
      type: 'object',
      properties: {
        glob: { type: 'string', title: 'Files', description: 'A glob such as **/*.go', default: '**/*.go' },
        pattern: { type: 'string', title: 'Pattern', description: 'A regular expression to count', default: 'func ' },
        summary: { type: 'string', title: 'Summary file', default: 'survey.md' },
      },
      required: ['glob', 'pattern'],
    },
    plan: {
      steps: [
        { id: 'files', tool: 'Glob', description: 'List the files', args: { pattern: '{{inputs.glob}}' } },
        { id: 'count', tool: 'Grep', description: 'Count the matches', args: { pattern: '{{inputs.pattern}}', glob: '{{inputs.glob}}', output_mode: 'count' } },
        {
          id: 'summary', tool: 'Write', description: 'Write the summary', dependsOn: ['files', 'count'], requiresApproval: true,
          args: { file_path: '{{inputs.summary}}', content: '# Survey of {{inputs.glob}}\n\n## Files\n\n{{steps.files.result}}\n\n## Lines matching {{inputs.pattern}}\n\n{{steps.count.result}}\n' },
        },
      ],
    },
    notes: [{ en: 'The two searches run at the same time: neither depends on the other.', zh: '两个搜索互不依赖，会并行执行。', x: 0, y: 320 }],
  },
  {
    id: 'fetch-notes',
    zh: { page: '抓取网页', notes: '保存笔记' },
    title: { en: 'Fetch a page into notes', zh: '抓取网页并记笔记' },
    description: {
      en: 'Fetch a web page as text with a question in mind, and keep it as a notes file with its source.',
      zh: '带着问题抓取网页文本，并连同来源保存为笔记文件。',
    },
    inputSchema: {
      type: 'object',
      properties: {
        url: { type: 'string', title: 'Page', description: 'The http:// or https:// address' },
        question: { type: 'string', title: 'Question', default: 'What are the main points?' },
        notes: { type: 'string', title: 'Notes file', default: 'notes.md' },
      },
      required: ['url'],
    },
    plan: {
      steps: [
        { id: 'page', tool: 'WebFetch', description: 'Fetch the page', args: { url: '{{inputs.url}}', prompt: '{{inputs.question}}' } },
        {
          id: 'notes', tool: 'Write', description: 'Keep the notes', dependsOn: ['page'], requiresApproval: true,
          args: { file_path: '{{inputs.notes}}', content: 'Source: {{inputs.url}}\n\n{{steps.page.result}}\n' },
        },
      ],
    },
  },
  {
    id: 'log-errors',
    zh: { match: '查找这些行', save: '保存结果' },
    title: { en: 'Pull errors out of a log file', zh: '从日志文件中提取错误' },
    description: {
      en: 'Pick a log file when you run it; the matching lines of the chosen level are written to a file next to your workspace.',
      zh: '运行时选择日志文件；所选级别的行会写入工作区中的文件。',
    },
    inputSchema: {
      type: 'object',
      properties: {
        log: { type: 'string', format: 'weft-file', title: 'Log file', description: 'The log to read (a path on the server)' },
        level: { type: 'string', title: 'Level', enum: ['ERROR', 'WARN', 'INFO'], default: 'ERROR' },
        out: { type: 'string', title: 'Output file', default: 'errors.txt' },
      },
      required: ['log', 'level'],
    },
    plan: {
      steps: [
        { id: 'match', tool: 'Grep', description: 'Find the lines', args: { pattern: '{{inputs.level}}', path: '@file:log', output_mode: 'content' } },
        {
          id: 'save', tool: 'Write', description: 'Save them', dependsOn: ['match'], requiresApproval: true,
          args: { file_path: '{{inputs.out}}', content: '{{steps.match.result}}\n' },
        },
      ],
    },
  },
  {
    id: 'run-tests',
    zh: { tests: '运行测试', log: '保存日志' },
    title: { en: 'Run the tests and keep the log', zh: '运行测试并保存日志' },
    description: {
      en: 'Run a test command (you approve it first), then save the end of its output as a log file.',
      zh: '运行测试命令（先经你批准），再把输出的末尾保存为日志文件。',
    },
    inputSchema: {
      type: 'object',
      properties: {
        command: { type: 'string', title: 'Test command', default: 'go test ./...' },
        log: { type: 'string', title: 'Log file', default: 'test-log.txt' },
      },
      required: ['command'],
    },
    plan: {
      steps: [
        { id: 'tests', tool: 'Bash', description: 'Run the tests', requiresApproval: true, args: { command: '{{inputs.command}} 2>&1 | tail -n 200', description: 'Run the test suite' } },
        { id: 'log', tool: 'Write', description: 'Save the log', dependsOn: ['tests'], args: { file_path: '{{inputs.log}}', content: '{{steps.tests.result}}' } },
      ],
    },
  },
]

/** templateGraph lays out a template's canvas, with its notes in the given language. */
export function templateGraph(t: FlowTemplate, lang: 'en' | 'zh'): Graph {
  const g = graphFromPlan(t.plan)
  if (lang === 'zh') {
    for (const n of g.nodes) if (n.type === 'step' && t.zh[n.data.stepId]) n.data = { ...n.data, description: t.zh[n.data.stepId] }
  }
  for (const n of t.notes ?? []) {
    g.nodes.push({ id: newId('note'), type: 'note', position: { x: 80 + n.x, y: 80 + n.y }, data: { text: n[lang] } })
  }
  return g
}

/** templateTools lists the tools a template needs, to say which a server lacks. */
export function templateTools(t: FlowTemplate): string[] {
  return [...new Set(t.plan.steps.map((s) => s.tool))]
}
