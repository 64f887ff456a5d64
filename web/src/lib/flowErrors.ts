// The server's workflow and run messages in the UI's language (seed 001:
// missing inputs, undeclared variables, name limits, publishing state are
// shown in the current language, not as raw English). The API's messages
// are stable sentences (runtime/workflows.go, plan/validate.go); the ones
// people meet are matched here and rendered from the view's messages, and
// anything else keeps the server's words after a localized headline.

import { ApiError } from '../api/http'
import { errorText, i18n } from '../i18n'

type Rule = [RegExp, string, (m: RegExpMatchArray) => Record<string, string>]

const rules: Rule[] = [
  [/^missing required input "(.+)"$/, 'flows.server.missingInput', (m) => ({ name: m[1] })],
  [/^input "(.+)" must be (.+), not (\w+)$/, 'flows.server.inputType', (m) => ({ name: m[1], want: m[2], got: m[3] })],
  [/^name is required$/, 'flows.server.nameRequired', () => ({})],
  [/^name is (\d+) characters long; the maximum is (\d+)$/, 'flows.server.nameTooLong', (m) => ({ n: m[1], max: m[2] })],
  [/^workflow "(.+)" is at revision (\d+), not (\d+)/, 'flows.server.conflict', (m) => ({ rev: m[2], mine: m[3] })],
  [/^workflow "(.+)" is not published/, 'flows.server.notPublished', () => ({})],
  [/^workflow "(.+)" (?:not found|no longer exists)/, 'flows.server.notFound', () => ({})],
  [/^inputSchema requires "(.+)" but does not declare it in properties$/, 'flows.server.requiredUndeclared', (m) => ({ name: m[1] })],
  [/^inputSchema does not compile: (.+)$/s, 'flows.server.schemaBroken', (m) => ({ error: m[1] })],
  // Plan problems (plan/validate.go), as the server words them per step.
  [/^unknown tool "(.+)"$/, 'flows.problem.unknownTool', (m) => ({ tool: m[1] })],
  [/^args(?: \S+)?: (.+): input "(.+)" is not declared$/, 'flows.problem.undeclaredInput', (m) => ({ text: m[1], name: m[2] })],
  [/^args(?: \S+)?: (.+): file "(.+)" is not granted$/, 'flows.problem.undeclaredFile', (m) => ({ text: m[1], name: m[2] })],
  [/^has (\d+) steps, more than the limit of (\d+)$/, 'flows.problem.tooMany', (m) => ({ count: m[1], limit: m[2] })],
  [/^has no steps$/, 'flows.problem.empty', () => ({})],
  [/^duplicate id "(.+)"/, 'flows.problem.idDuplicate', (m) => ({ id: m[1] })],
  [/^depends on unknown step "(.+)"$/, 'flows.server.unknownDependency', (m) => ({ id: m[1] })],
]

/** localizeMessage renders one server sentence in the UI's language, or returns it as it is. */
export function localizeMessage(msg: string): string {
  const t = i18n.global.t
  const s = msg.trim()
  for (const [re, key, params] of rules) {
    const m = s.match(re)
    if (m) return t(key, params(m))
  }
  return msg
}

/** flowErrorText is errorText for the Flows view: known server messages localized, problems and inputs listed. */
export function flowErrorText(e: unknown): string {
  if (!(e instanceof ApiError)) return errorText(e)
  const t = i18n.global.t
  const body = e.body as (ApiError['body'] & { inputProblems?: string[] }) | undefined
  const head = errorText(new ApiError(e.status, e.type, '', undefined)).replace(/: $/, '')
  const lines: string[] = []
  if (body?.missing?.length) lines.push(t('flows.server.missing', { names: body.missing.join(', ') }))
  for (const p of body?.inputProblems ?? []) {
    if (/^missing required input /.test(p) && body?.missing?.length) continue
    lines.push(localizeMessage(p))
  }
  for (const p of body?.problems ?? []) lines.push(`${p.stepId ? p.stepId + ': ' : ''}${localizeMessage(p.message)}`)
  if (!lines.length) {
    const first = e.message.split('\n')[0]
    const l = localizeMessage(first)
    lines.push(l !== first ? l : e.message)
  }
  return `${head}: ${lines.join('\n')}`
}
