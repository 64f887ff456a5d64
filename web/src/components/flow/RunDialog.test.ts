// The run dialog as a person uses it: a form generated from the input
// schema, Run gated on the required inputs, and what it sends (typed
// inputs, file grants for file inputs, nothing for shared directories).

import { afterEach, describe, expect, it } from 'vitest'
import { createApp, nextTick, type App } from 'vue'
import '../../views/flows/i18n'
import { i18n } from '../../i18n'
import RunDialog from './RunDialog.vue'

let app: App | null = null
afterEach(() => {
  app?.unmount()
  app = null
  document.body.innerHTML = ''
  sessionStorage.clear()
})

function mount(schema: unknown) {
  const runs: unknown[] = []
  const el = document.createElement('div')
  document.body.appendChild(el)
  app = createApp(RunDialog, { schema, name: 'Test', storageKey: 'k', onRun: (r: unknown) => runs.push(r) })
  app.use(i18n).mount(el)
  return { el, runs }
}

async function type(el: HTMLElement, field: string, value: string) {
  const input = el.querySelector(`[data-field="${field}"] [data-test=field-input]`) as HTMLInputElement | HTMLSelectElement
  if (input instanceof HTMLSelectElement) {
    input.value = value
    input.dispatchEvent(new Event('change'))
  } else {
    input.value = value
    input.dispatchEvent(new Event('input'))
  }
  await nextTick()
}

const schema = {
  type: 'object',
  properties: {
    word: { type: 'string' },
    limit: { type: 'integer', default: 10 },
    mode: { type: 'string', enum: ['fast', 'slow'] },
    log: { type: 'string', format: 'weft-file' },
    out: { type: 'string', 'x-weft-auto': 'shared-directory' },
    strict: { type: 'boolean' },
  },
  required: ['word', 'log', 'out'],
}

describe('RunDialog', () => {
  it('lists the missing required inputs and keeps Run disabled until they are given', async () => {
    const { el, runs } = mount(schema)
    const run = el.querySelector('[data-test=run-start]') as HTMLButtonElement
    expect(run.disabled).toBe(true)
    expect(el.querySelector('[data-test=run-missing]')!.textContent).toContain('word, log')
    expect(el.querySelector('[data-test=run-missing]')!.textContent).not.toContain('out')
    await type(el, 'word', 'TODO')
    expect(run.disabled).toBe(true)
    await type(el, 'log', '/var/log/app.log')
    expect(run.disabled).toBe(false)
    expect(el.querySelector('[data-test=run-missing]')).toBeNull()
    await type(el, 'limit', '25')
    await type(el, 'mode', '"slow"')
    await type(el, 'strict', 'true')
    run.click()
    await nextTick()
    expect(runs).toEqual([{
      inputs: { word: 'TODO', limit: 25, mode: 'slow', log: '/var/log/app.log', strict: true },
      files: [{ name: 'log', nativePath: '/var/log/app.log' }],
      config: undefined,
    }])
  })

  it('a value of the wrong type blocks the run and says so', async () => {
    const { el } = mount({ type: 'object', properties: { n: { type: 'integer' } } })
    await type(el, 'n', '2.5')
    expect((el.querySelector('[data-test=run-start]') as HTMLButtonElement).disabled).toBe(true)
    expect(el.querySelector('[data-test=field-problem]')!.textContent).toContain('integer')
  })

  it('asks for review when told to, and remembers the inputs for the next run', async () => {
    const a = mount({ type: 'object', properties: { word: { type: 'string' } } })
    await type(a.el, 'word', 'FIXME')
    ;(a.el.querySelector('[data-test=run-review]') as HTMLInputElement).click()
    await nextTick()
    a.el.querySelector('form')!.dispatchEvent(new Event('submit'))
    await nextTick()
    expect(a.runs).toEqual([{ inputs: { word: 'FIXME' }, files: [], config: { requireApproval: true } }])
    app!.unmount()
    document.body.innerHTML = ''
    const b = mount({ type: 'object', properties: { word: { type: 'string' } } })
    expect((b.el.querySelector('[data-field=word] [data-test=field-input]') as HTMLInputElement).value).toBe('FIXME')
  })
})
