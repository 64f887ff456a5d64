// Markdown for model output: markdown-it with raw HTML off (a model's text
// is untrusted: a <script> or <img onerror> in it must stay text), its
// default link validation (no javascript:, vbscript:, file: or data: other
// than images), links opening in a new tab without a referrer, and code
// highlighted by highlight.js (lib/highlight.ts, loaded lazily; its output
// escapes the code).

import MarkdownIt from 'markdown-it'
import { ref } from 'vue'
import { whenIdle } from './idle'

// highlight.js is not needed to draw a conversation: it loads on its own
// chunk after the first draw (a cold tab opening a long session draws
// sooner without parsing it first), and `highlighted` changes when it is
// in, so that what was drawn plain is drawn again, highlighted.
type Highlighter = (code: string, lang: string) => string | null
let highlighter: Highlighter | null = null
let loading: Promise<void> | null = null
/** Bumped when the highlighter arrives: renderers depend on it. */
export const highlighted = ref(0)

/** Loads highlight.js once (idempotent); resolves when it is in. */
export function loadHighlighter(): Promise<void> {
  loading ??= import('./highlight').then((m) => {
    highlighter = m.highlightCode
    cache.clear()
    highlighted.value++
  }).catch(() => {
    // Offline or a stale build: code stays plain; a later call retries.
    loading = null
  })
  return loading
}

/** Loads highlight.js when the page is idle (at the latest after 1 s). */
export function loadHighlighterSoon() {
  if (highlighter || loading) return
  whenIdle(() => void loadHighlighter(), 1000)
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
}

/** Code as HTML: highlighted once highlight.js is in, escaped plain text until then. */
export function highlight(code: string, lang: string): string {
  const l = lang.trim().toLowerCase()
  if (l) {
    const h = highlighter?.(code, l)
    if (h != null) return h
    loadHighlighterSoon()
  }
  return escapeHtml(code)
}

const md = new MarkdownIt({
  html: false,
  linkify: false,
  breaks: false,
  highlight: (code, lang) => `<pre class="hljs"><code>${highlight(code, lang)}</code></pre>`,
})

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options))
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet('target', '_blank')
  tokens[idx].attrSet('rel', 'noopener noreferrer nofollow')
  return defaultLinkOpen(tokens, idx, options, env, self)
}

// Rendering is cached by text: virtualized rows mount and unmount as the
// list scrolls, and finished messages never change.
const cache = new Map<string, string>()
const CACHE_MAX = 500

export function renderMarkdown(text: string, keep = true): string {
  const hit = cache.get(text)
  if (hit !== undefined) return hit
  const html = md.render(text)
  if (!keep) return html // a message still streaming: its next version differs
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
  cache.set(text, html)
  return html
}
