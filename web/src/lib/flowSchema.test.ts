import { describe, expect, it } from 'vitest'
import {
  defsFromSchema, fieldOf, fieldsOf, isWholePlaceholder, missingRequired, parseJSONField, parseScalar, schemaFromDefs, typeProblem,
  type InputDef,
} from './flowSchema'

describe('fieldsOf', () => {
  const grep = {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'where' },
      pattern: { type: 'string', minLength: 1 },
      output_mode: { type: 'string', enum: ['content', 'files_with_matches', 'count'] },
      '-n': { type: 'boolean' },
      head_limit: { type: 'integer', minimum: 0 },
      ratio: { type: ['number', 'null'] },
      globs: { type: 'array', items: { type: 'string' } },
      todos: { type: 'array', items: { type: 'object', properties: { content: { type: 'string' }, status: { type: 'string', enum: ['pending', 'done'] } }, required: ['content'] } },
      opts: { type: 'object', properties: { deep: { type: 'boolean' } } },
      free: { type: 'object' },
      either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
      content: { type: 'string' },
      report: { type: 'string', format: 'weft-file' },
      legacy: { type: 'string', format: 'fengyu-file' },
      out: { type: 'string', 'x-fengyu-auto': 'shared-directory' },
    },
    required: ['pattern', 'todos'],
  }

  it('maps every schema type to a field kind, required first', () => {
    const fs = fieldsOf(grep)
    expect(fs.map((f) => [f.key, f.kind, f.required])).toEqual([
      ['pattern', 'string', true],
      ['todos', 'array', true],
      ['path', 'string', false],
      ['output_mode', 'enum', false],
      ['-n', 'boolean', false],
      ['head_limit', 'integer', false],
      ['ratio', 'number', false],
      ['globs', 'array', false],
      ['opts', 'object', false],
      ['free', 'json', false],
      ['either', 'json', false],
      ['content', 'text', false],
      ['report', 'file', false],
      ['legacy', 'file', false],
      ['out', 'directory', false],
    ])
  })

  it('reads nested arrays and objects into sub-fields', () => {
    const todos = fieldsOf(grep).find((f) => f.key === 'todos')!
    expect(todos.items!.kind).toBe('object')
    expect(todos.items!.properties!.map((f) => [f.key, f.kind, f.required])).toEqual([['content', 'text', true], ['status', 'enum', false]])
    expect(fieldsOf(grep).find((f) => f.key === 'output_mode')!.options).toEqual(['content', 'files_with_matches', 'count'])
    expect(fieldsOf(grep).find((f) => f.key === 'path')!.description).toBe('where')
  })

  it('titles come from the schema or the key', () => {
    expect(fieldOf('file_path', { type: 'string' }).title).toBe('File path')
    expect(fieldOf('x', { type: 'string', title: 'The X' }).title).toBe('The X')
  })

  it('survives schemas that are not objects', () => {
    expect(fieldsOf(undefined)).toEqual([])
    expect(fieldsOf({ type: 'object', properties: null })).toEqual([])
    expect(fieldOf('x', null).kind).toBe('json')
  })
})

describe('values', () => {
  const cases: { kind: any; raw: string; want: unknown }[] = [
    { kind: 'string', raw: '', want: undefined },
    { kind: 'string', raw: 'hi', want: 'hi' },
    { kind: 'integer', raw: '42', want: 42 },
    { kind: 'integer', raw: '4.5', want: '4.5' },
    { kind: 'number', raw: '4.5', want: 4.5 },
    { kind: 'number', raw: 'abc', want: 'abc' },
    { kind: 'integer', raw: '{{inputs.n}}', want: '{{inputs.n}}' },
    { kind: 'boolean', raw: 'true', want: true },
    { kind: 'boolean', raw: '{{ steps.a.result.ok }}', want: '{{ steps.a.result.ok }}' },
  ]
  for (const c of cases) it(`${c.kind} ${JSON.stringify(c.raw)}`, () => expect(parseScalar(c.kind, c.raw)).toEqual(c.want))

  it('JSON fields', () => {
    expect(parseJSONField('')).toEqual({ value: undefined })
    expect(parseJSONField('{"a":[1]}')).toEqual({ value: { a: [1] } })
    expect(parseJSONField('{{steps.x.result}}')).toEqual({ value: '{{steps.x.result}}' })
    expect(parseJSONField('{a').error).toBeTruthy()
  })

  it('whole placeholders', () => {
    expect(isWholePlaceholder('{{inputs.x}}')).toBe(true)
    expect(isWholePlaceholder('@file:data')).toBe(true)
    expect(isWholePlaceholder('a {{inputs.x}}')).toBe(false)
    expect(isWholePlaceholder(3)).toBe(false)
  })

  it('required fields gate: placeholders count, empty lists do not, auto directories are never asked for', () => {
    const fs = fieldsOf({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'array', items: { type: 'string' } }, c: { type: 'integer' }, d: { type: 'string', 'x-weft-auto': 'shared-directory' } },
      required: ['a', 'b', 'c', 'd'],
    })
    expect(missingRequired(fs, {})).toEqual(['a', 'b', 'c'])
    expect(missingRequired(fs, { a: 'x', b: [], c: '{{inputs.n}}' })).toEqual(['b'])
    expect(missingRequired(fs, { a: 'x', b: ['y'], c: 0 })).toEqual([])
  })

  it('basic type checks, as the server binds inputs', () => {
    const f = (s: object) => fieldOf('x', s)
    expect(typeProblem(f({ type: 'integer' }), 3)).toBeNull()
    expect(typeProblem(f({ type: 'integer' }), '3')).toBe('integer')
    expect(typeProblem(f({ type: 'boolean' }), '{{inputs.b}}')).toBeNull()
    expect(typeProblem(f({ enum: ['a', 'b'] }), 'c')).toBe('enum')
  })
})

describe('input schema editor', () => {
  it('rows to schema and back', () => {
    const defs: InputDef[] = [
      { name: 'word', type: 'string', required: true, description: 'what to look for', default: 'TODO' },
      { name: 'limit', type: 'integer', required: false, default: '10' },
      { name: 'mode', type: 'string', required: false, options: 'fast\nthorough' },
      { name: 'data', type: 'file', required: true },
      { name: 'out', type: 'directory', required: true },
      { name: 'notes', type: 'text', required: false },
      { name: 'tags', type: 'array', required: false },
    ]
    const { schema, problems } = schemaFromDefs(defs)
    expect(problems).toEqual([])
    expect(schema).toEqual({
      type: 'object',
      properties: {
        word: { type: 'string', description: 'what to look for', default: 'TODO' },
        limit: { type: 'integer', default: 10 },
        mode: { type: 'string', enum: ['fast', 'thorough'] },
        data: { type: 'string', format: 'weft-file' },
        out: { type: 'string', 'x-weft-auto': 'shared-directory' },
        notes: { type: 'string', format: 'textarea' },
        tags: { type: 'array', items: { type: 'string' } },
      },
      required: ['word', 'data'],
    })
    const back = defsFromSchema(schema)!
    expect(back.map((d) => [d.name, d.type, d.required])).toEqual(defs.map((d) => [d.name, d.type, d.type === 'directory' ? false : d.required]))
    expect(schemaFromDefs(back).schema).toEqual(schema)
  })

  it('names rows that cannot be saved', () => {
    const { problems } = schemaFromDefs([
      { name: '1bad', type: 'string', required: false },
      { name: 'ok', type: 'string', required: false },
      { name: 'ok', type: 'string', required: false },
      { name: 'n', type: 'integer', required: false, default: 'ten' },
    ])
    expect(problems).toEqual([{ row: 0, message: 'name' }, { row: 2, message: 'duplicate' }, { row: 3, message: 'default' }])
  })

  it('a schema the rows cannot say is JSON only', () => {
    expect(defsFromSchema({ type: 'object', properties: { a: { type: 'string', pattern: '^x' } } })).toBeNull()
    expect(defsFromSchema({ type: 'object', properties: {}, oneOf: [] })).toBeNull()
    expect(defsFromSchema(undefined)).toEqual([])
  })
})
