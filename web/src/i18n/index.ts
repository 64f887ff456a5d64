import { createI18n } from 'vue-i18n'
import en from './en'
import zh from './zh'

export type Locale = 'en' | 'zh'
const KEY = 'weft.locale'

function initial(): Locale {
  try {
    const saved = localStorage.getItem(KEY)
    if (saved === 'en' || saved === 'zh') return saved
  } catch {
    // no storage
  }
  return typeof navigator !== 'undefined' && navigator.language?.toLowerCase().startsWith('zh') ? 'zh' : 'en'
}

export const i18n = createI18n({
  legacy: false,
  locale: initial(),
  fallbackLocale: 'en',
  messages: { en, zh },
  missingWarn: false,
  fallbackWarn: false,
})

export function setLocale(l: Locale) {
  i18n.global.locale.value = l
  document.documentElement.lang = l
  try {
    localStorage.setItem(KEY, l)
  } catch {
    // no storage
  }
}

/**
 * errorText renders an API error in the UI's language: a localized
 * headline for its type (seed 001: errors shown in the UI's language),
 * followed by the server's own message, which names the exact problem.
 */
export function errorText(e: unknown): string {
  const t = i18n.global.t
  const err = e as { type?: string; status?: number; message?: string; body?: { problems?: { stepId?: string; message: string }[]; missing?: string[] } }
  if (!err || typeof err !== 'object') return String(e)
  const key = `errors.${err.type ?? 'network'}`
  const head = i18n.global.te(key) ? t(key) : err.status ? t('errors.http', { status: err.status }) : t('errors.network')
  let msg = err.message ?? ''
  if (err.body?.missing?.length) msg += ` (${t('errors.missing')}: ${err.body.missing.join(', ')})`
  if (err.body?.problems?.length) msg += '\n' + err.body.problems.map((p) => `• ${p.stepId ? p.stepId + ': ' : ''}${p.message}`).join('\n')
  return msg ? `${head}: ${msg}` : head
}
