import { describe, expect, it } from 'vitest'
import '../views/flows/i18n'
import { i18n } from '../i18n'
import { ApiError } from '../api/http'
import { flowErrorText, localizeMessage } from './flowErrors'

describe('server messages in the UI language', () => {
  const cases: { msg: string; en: string; zh: string }[] = [
    { msg: 'missing required input "word"', en: 'The input word is required.', zh: '输入 word 为必填。' },
    { msg: 'input "n" must be integer, not string', en: 'The input n must be integer, not string.', zh: '输入 n 必须是 integer，而不是 string。' },
    { msg: 'name is 201 characters long; the maximum is 200', en: 'The name is 201 characters long; at most 200 are allowed.', zh: '名称长 201 个字符，最多允许 200 个。' },
    { msg: 'workflow "wf_1" is not published: publish it to run it in the background', en: 'The flow is not published: publish it first.', zh: '流程尚未发布：请先发布。' },
    { msg: 'args /pattern: {{inputs.w}}: input "w" is not declared', en: '{{inputs.w}}: the flow has no input w. Declare it under Inputs.', zh: '{{inputs.w}}：流程没有输入 w。请在「输入」中声明。' },
    { msg: 'unknown tool "Nope"', en: 'The server has no tool Nope.', zh: '服务器上没有工具 Nope。' },
    { msg: 'something else entirely', en: 'something else entirely', zh: 'something else entirely' },
  ]
  for (const c of cases) {
    it(c.msg, () => {
      i18n.global.locale.value = 'en'
      expect(localizeMessage(c.msg)).toBe(c.en)
      i18n.global.locale.value = 'zh'
      expect(localizeMessage(c.msg)).toBe(c.zh)
      i18n.global.locale.value = 'en'
    })
  }

  it('a refused run lists the missing inputs once, localized', () => {
    i18n.global.locale.value = 'zh'
    const e = new ApiError(400, 'invalid_request_error', 'inputs: missing required input "word"', {
      error: { type: 'invalid_request_error', message: 'x' }, missing: ['word'], inputProblems: ['missing required input "word"', 'input "n" must be integer, not string'],
    } as any)
    expect(flowErrorText(e)).toBe('无效的请求: 请填写必填输入：word。\n输入 n 必须是 integer，而不是 string。'.replace('无效的请求', i18n.global.t('errors.invalid_request_error')))
    i18n.global.locale.value = 'en'
  })

  it('plan problems keep their step', () => {
    const e = new ApiError(400, 'invalid_request_error', 'the plan is invalid:\n...', {
      error: { type: 'invalid_request_error', message: 'x' }, problems: [{ step: 0, stepId: 'a', message: 'unknown tool "Nope"' }],
    })
    expect(flowErrorText(e)).toBe('Invalid request: a: The server has no tool Nope.')
  })
})
