// A generated field with the placeholder picker: in text the placeholder
// goes in at the cursor; in a typed field it becomes the whole value; a
// step that is not upstream is connected when picked.

import { afterEach, describe, expect, it } from 'vitest'
import { createApp, h, nextTick, ref, type App } from 'vue'
import '../../views/flows/i18n'
import { i18n } from '../../i18n'
import SchemaField from './SchemaField.vue'
import { fieldOf } from '../../lib/flowSchema'

let app: App | null = null
afterEach(() => {
  app?.unmount()
  app = null
  document.body.innerHTML = ''
})

const refs = {
  inputs: [{ name: 'word', file: false }, { name: 'log', file: true }],
  upstream: [{ stepId: 'find', tool: 'Grep' }],
  others: [{ stepId: 'side', tool: 'Glob', nodeId: 'node_side' }],
}

function mount(schema: unknown, initial: unknown) {
  const value = ref<unknown>(initial)
  const connected: string[] = []
  const el = document.createElement('div')
  document.body.appendChild(el)
  app = createApp({
    render: () => h(SchemaField, {
      field: fieldOf('x', schema), modelValue: value.value, refs,
      'onUpdate:modelValue': (v: unknown) => { value.value = v },
      onConnect: (id: string) => connected.push(id),
    }),
  })
  app.use(i18n).mount(el)
  return { el, value, connected }
}

async function pick(el: HTMLElement, ref: string) {
  ;(el.querySelector('[data-test=ref-picker]') as HTMLButtonElement).click()
  await nextTick()
  ;(el.querySelector(`[data-ref="${ref}"]`) as HTMLButtonElement).click()
  await nextTick()
}

describe('SchemaField pickers', () => {
  it('inserts a placeholder at the cursor of a text field', async () => {
    const { el, value } = mount({ type: 'string' }, 'found: !')
    const input = el.querySelector('[data-test=field-input]') as HTMLInputElement
    input.setSelectionRange(7, 7)
    await pick(el, 'steps.find')
    expect(value.value).toBe('found: {{steps.find.result}}!')
  })

  it('replaces the selection', async () => {
    const { el, value } = mount({ type: 'string' }, 'look for WORD here')
    ;(el.querySelector('[data-test=field-input]') as HTMLInputElement).setSelectionRange(9, 13)
    await pick(el, 'inputs.word')
    expect(value.value).toBe('look for {{inputs.word}} here')
  })

  it('a typed field takes a whole placeholder, edited as text, and can go back to a value', async () => {
    const { el, value } = mount({ type: 'integer' }, 5)
    expect((el.querySelector('[data-test=field-input]') as HTMLInputElement).type).toBe('number')
    await pick(el, 'inputs.word')
    expect(value.value).toBe('{{inputs.word}}')
    const input = el.querySelector('[data-test=field-input]') as HTMLInputElement
    expect(input.type).toBe('text')
    ;(el.querySelector('.sf-row button.icon-btn') as HTMLButtonElement).click()
    await nextTick()
    expect(value.value).toBeUndefined()
  })

  it('offers @file: for file inputs, and connects a step that is not upstream', async () => {
    const a = mount({ type: 'string' }, '')
    await pick(a.el, 'file.log')
    expect(a.value.value).toBe('@file:log')
    app!.unmount()
    document.body.innerHTML = ''
    const b = mount({ type: 'string' }, '')
    await pick(b.el, 'steps.side')
    expect(b.value.value).toBe('{{steps.side.result}}')
    expect(b.connected).toEqual(['node_side'])
  })

  it('lists: add, edit and remove items', async () => {
    const { el, value } = mount({ type: 'array', items: { type: 'string' } }, undefined)
    ;(el.querySelector('[data-test=array-add]') as HTMLButtonElement).click()
    await nextTick()
    const item = el.querySelector('[data-field="x.0"] [data-test=field-input]') as HTMLInputElement
    item.value = 'a'
    item.dispatchEvent(new Event('input'))
    await nextTick()
    expect(value.value).toEqual(['a'])
    ;(el.querySelector('.sub-item .rm') as HTMLButtonElement).click()
    await nextTick()
    expect(value.value).toBeUndefined()
  })
})
