// JSON Schema to form: the node configuration panel (a tool's input
// schema) and the run dialog (a workflow's input schema) are generated
// from schemas. fieldsOf reads the part of JSON Schema that a form can
// show (strings, numbers, booleans, enums, arrays, objects); what it
// cannot (anyOf, oneOf, $ref, objects without properties) becomes a JSON
// field. The input schema editor's rows (InputDef) convert both ways.

export type FieldKind =
  | 'string' | 'text' | 'number' | 'integer' | 'boolean' | 'enum' | 'array' | 'object' | 'json' | 'file' | 'directory'

export interface Field {
  key: string
  kind: FieldKind
  title: string
  description?: string
  required: boolean
  default?: unknown
  /** enum values (kind enum). */
  options?: unknown[]
  /** Element field (kind array). */
  items?: Field
  /** Property fields (kind object). */
  properties?: Field[]
  minimum?: number
  maximum?: number
  format?: string
  /** Dynamic options named by x-weft-enum / x-fengyu-enum (a tool that lists them). */
  dynamicEnum?: string
  schema: Record<string, any>
}

/** File inputs (seed 001's format "fengyu-file"): the run dialog asks for a file. */
export const FILE_FORMATS = ['weft-file', 'fengyu-file']
export const isFileSchema = (s: any) => !!s && FILE_FORMATS.includes(s.format)
/** A shared output directory the server makes per run (x-weft-auto / x-fengyu-auto). */
export const isAutoDirSchema = (s: any) => !!s && (s['x-weft-auto'] === 'shared-directory' || s['x-fengyu-auto'] === 'shared-directory')

/** Argument names whose values are usually long text: a multi-line box. */
const LONG = /^(content|command|prompt|text|body|new_string|old_string|code|script|query|message|description|instructions?)$/i

function typeOf(s: Record<string, any>): string | undefined {
  const t = s.type
  if (Array.isArray(t)) return t.find((x) => x !== 'null')
  if (typeof t === 'string') return t
  if (Array.isArray(s.enum)) return 'enum'
  if (s.properties) return 'object'
  if (s.items) return 'array'
  return undefined
}

function humanize(key: string): string {
  const s = key.replace(/[_-]+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').trim()
  return s ? s[0].toUpperCase() + s.slice(1) : key
}

/** fieldOf reads one property's schema into a form field. */
export function fieldOf(key: string, schema: unknown, required = false): Field {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Record<string, any>
  const base = {
    key, required, schema: s,
    title: typeof s.title === 'string' && s.title ? s.title : humanize(key),
    description: typeof s.description === 'string' ? s.description : undefined,
    default: s.default,
    format: typeof s.format === 'string' ? s.format : undefined,
    dynamicEnum: (s['x-weft-enum'] ?? s['x-fengyu-enum']) as string | undefined,
  }
  if (s.anyOf || s.oneOf || s.allOf || s.$ref) return { ...base, kind: 'json' }
  if (Array.isArray(s.enum) && s.enum.length) return { ...base, kind: 'enum', options: s.enum }
  if (isFileSchema(s)) return { ...base, kind: 'file' }
  if (isAutoDirSchema(s)) return { ...base, kind: 'directory' }
  switch (typeOf(s)) {
    case 'string':
      return { ...base, kind: LONG.test(key) || (typeof s.maxLength === 'number' && s.maxLength > 200) || s.format === 'textarea' ? 'text' : 'string' }
    case 'number':
    case 'integer':
      return { ...base, kind: typeOf(s) as 'number' | 'integer', minimum: s.minimum, maximum: s.maximum }
    case 'boolean':
      return { ...base, kind: 'boolean' }
    case 'array': {
      const items = s.items && typeof s.items === 'object' && !Array.isArray(s.items) ? fieldOf('item', s.items, false) : undefined
      return items && items.kind !== 'json' ? { ...base, kind: 'array', items } : { ...base, kind: 'json' }
    }
    case 'object':
      if (s.properties && typeof s.properties === 'object' && Object.keys(s.properties).length) {
        return { ...base, kind: 'object', properties: fieldsOf(s) }
      }
      return { ...base, kind: 'json' }
    default:
      return { ...base, kind: 'json' }
  }
}

/** fieldsOf lists an object schema's properties as fields: required first, then in declaration order. */
export function fieldsOf(schema: unknown): Field[] {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Record<string, any>
  const props = s.properties && typeof s.properties === 'object' ? (s.properties as Record<string, unknown>) : {}
  const req = new Set<string>(Array.isArray(s.required) ? s.required.filter((x: unknown) => typeof x === 'string') : [])
  const fields = Object.entries(props).map(([k, v]) => fieldOf(k, v, req.has(k)))
  return [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)]
}

/** A string value that is one placeholder, whole: it keeps the JSON type of what it names. */
export function isWholePlaceholder(v: unknown): v is string {
  return typeof v === 'string' && (/^\{\{\s*(steps|inputs|last)[.\s][^{}]*\}\}$/.test(v) || /^@file:\S+$/.test(v))
}

/**
 * parseScalar turns what was typed in a field into its value: undefined
 * for empty (the argument is left out), a placeholder kept as the string,
 * numbers parsed (NaN: kept as text so the server names the problem).
 */
export function parseScalar(kind: FieldKind, raw: string): unknown {
  if (raw === '') return undefined
  if (isWholePlaceholder(raw.trim())) return raw.trim()
  switch (kind) {
    case 'number': {
      const n = Number(raw)
      return Number.isFinite(n) ? n : raw
    }
    case 'integer': {
      const n = Number(raw)
      return Number.isInteger(n) ? n : raw
    }
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw
    default:
      return raw
  }
}

/** parseJSONField reads a JSON field: undefined for empty, an error message for bad JSON. */
export function parseJSONField(raw: string): { value?: unknown; error?: string } {
  const t = raw.trim()
  if (!t) return { value: undefined }
  if (isWholePlaceholder(t)) return { value: t }
  try {
    return { value: JSON.parse(t) }
  } catch (e) {
    return { error: (e as Error).message }
  }
}

/** missingRequired lists required fields without a value (placeholders count as given). */
export function missingRequired(fields: Field[], values: Record<string, unknown>): string[] {
  return fields.filter((f) => f.required && f.kind !== 'directory' && isEmpty(values[f.key])).map((f) => f.key)
}

export function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)
}

/** typeProblem checks a value against its field's basic type, as the server does when it binds inputs. */
export function typeProblem(f: Field, v: unknown): string | null {
  if (isEmpty(v) || isWholePlaceholder(v)) return null
  switch (f.kind) {
    case 'number': return typeof v === 'number' ? null : 'number'
    case 'integer': return Number.isInteger(v) ? null : 'integer'
    case 'boolean': return typeof v === 'boolean' ? null : 'boolean'
    case 'array': return Array.isArray(v) ? null : 'array'
    case 'object': return v && typeof v === 'object' && !Array.isArray(v) ? null : 'object'
    case 'enum': return f.options!.some((o) => JSON.stringify(o) === JSON.stringify(v)) ? null : 'enum'
    default: return null
  }
}

// ---- the input schema editor ----------------------------------------------------

export type InputType = 'string' | 'text' | 'number' | 'integer' | 'boolean' | 'array' | 'object' | 'file' | 'directory'

export interface InputDef {
  name: string
  type: InputType
  title?: string
  description?: string
  required: boolean
  /** The default, as typed (JSON for non-strings). */
  default?: string
  /** Allowed values, one per line (strings and numbers). */
  options?: string
}

export const INPUT_NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/

/**
 * defsFromSchema reads an input schema into editor rows. It returns null
 * when the schema uses more than the rows can say (nested schemas,
 * patterns...), and the editor then offers the schema as JSON only.
 */
export function defsFromSchema(schema: unknown): InputDef[] | null {
  if (schema === undefined || schema === null) return []
  if (typeof schema !== 'object' || Array.isArray(schema)) return null
  const s = schema as Record<string, any>
  const known = new Set(['type', 'properties', 'required', 'additionalProperties', '$schema'])
  if (Object.keys(s).some((k) => !known.has(k))) return null
  const req = new Set<string>(Array.isArray(s.required) ? s.required : [])
  const out: InputDef[] = []
  for (const [name, p] of Object.entries((s.properties ?? {}) as Record<string, any>)) {
    if (!p || typeof p !== 'object') return null
    const keys = Object.keys(p).filter((k) => !['type', 'title', 'description', 'default', 'enum', 'format', 'x-weft-auto', 'x-fengyu-auto', 'items'].includes(k))
    if (keys.length) return null
    let type: InputType
    if (isFileSchema(p)) type = 'file'
    else if (isAutoDirSchema(p)) type = 'directory'
    else if (p.format === 'textarea' && p.type === 'string') type = 'text'
    else if (['string', 'number', 'integer', 'boolean', 'array', 'object'].includes(p.type)) type = p.type
    else return null
    if (p.items && !(type === 'array' && typeof p.items === 'object' && Object.keys(p.items).length === 1 && p.items.type === 'string')) return null
    const d: InputDef = { name, type, required: req.has(name) }
    if (p.title) d.title = String(p.title)
    if (p.description) d.description = String(p.description)
    if (p.default !== undefined) d.default = typeof p.default === 'string' ? p.default : JSON.stringify(p.default)
    if (Array.isArray(p.enum)) d.options = p.enum.map((x: unknown) => String(x)).join('\n')
    out.push(d)
  }
  return out
}

/** schemaFromDefs builds the input schema; problems name rows that cannot be saved. */
export function schemaFromDefs(defs: InputDef[]): { schema: Record<string, any>; problems: { row: number; message: string }[] } {
  const properties: Record<string, any> = {}
  const required: string[] = []
  const problems: { row: number; message: string }[] = []
  defs.forEach((d, row) => {
    const name = d.name.trim()
    if (!INPUT_NAME_RE.test(name)) {
      problems.push({ row, message: 'name' })
      return
    }
    if (properties[name]) {
      problems.push({ row, message: 'duplicate' })
      return
    }
    const p: Record<string, any> = {}
    switch (d.type) {
      case 'file': p.type = 'string'; p.format = 'weft-file'; break
      case 'directory': p.type = 'string'; p['x-weft-auto'] = 'shared-directory'; break
      case 'text': p.type = 'string'; p.format = 'textarea'; break
      case 'array': p.type = 'array'; p.items = { type: 'string' }; break
      default: p.type = d.type
    }
    if (d.title?.trim()) p.title = d.title.trim()
    if (d.description?.trim()) p.description = d.description.trim()
    const opts = (d.options ?? '').split('\n').map((x) => x.trim()).filter(Boolean)
    if (opts.length && ['string', 'number', 'integer'].includes(p.type) && d.type !== 'file' && d.type !== 'directory') {
      p.enum = p.type === 'string' ? opts : opts.map(Number)
      if (p.enum.some((x: unknown) => typeof x === 'number' && !Number.isFinite(x))) problems.push({ row, message: 'options' })
    }
    if (d.default !== undefined && d.default !== '' && d.type !== 'directory') {
      if (p.type === 'string') p.default = d.default
      else {
        try {
          p.default = JSON.parse(d.default)
        } catch {
          problems.push({ row, message: 'default' })
        }
      }
    }
    properties[name] = p
    if (d.required && d.type !== 'directory') required.push(name)
  })
  const schema: Record<string, any> = { type: 'object', properties }
  if (required.length) schema.required = required
  return { schema, problems }
}

/** inputNames lists an input schema's declared inputs. */
export function inputNames(schema: unknown): string[] {
  const p = (schema as { properties?: Record<string, unknown> } | undefined)?.properties
  return p && typeof p === 'object' ? Object.keys(p) : []
}
