// Markdown for model output: markdown-it with raw HTML off (a model's text
// is untrusted: a <script> or <img onerror> in it must stay text), its
// default link validation (no javascript:, vbscript:, file: or data: other
// than images), links opening in a new tab without a referrer, and code
// highlighted by highlight.js (core plus the languages agents mostly
// write; its output escapes the code).

import MarkdownIt from 'markdown-it'
import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import c from 'highlight.js/lib/languages/c'
import cpp from 'highlight.js/lib/languages/cpp'
import css from 'highlight.js/lib/languages/css'
import diff from 'highlight.js/lib/languages/diff'
import dockerfile from 'highlight.js/lib/languages/dockerfile'
import go from 'highlight.js/lib/languages/go'
import ini from 'highlight.js/lib/languages/ini'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import markdown from 'highlight.js/lib/languages/markdown'
import python from 'highlight.js/lib/languages/python'
import rust from 'highlight.js/lib/languages/rust'
import shell from 'highlight.js/lib/languages/shell'
import sql from 'highlight.js/lib/languages/sql'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'

const langs = { bash, c, cpp, css, diff, dockerfile, go, ini, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml }
for (const [name, def] of Object.entries(langs)) hljs.registerLanguage(name, def)
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' })
hljs.registerAliases(['js', 'mjs', 'jsx'], { languageName: 'javascript' })
hljs.registerAliases(['ts', 'tsx', 'vue'], { languageName: 'typescript' })
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' })
hljs.registerAliases(['yml'], { languageName: 'yaml' })
hljs.registerAliases(['py'], { languageName: 'python' })
hljs.registerAliases(['golang'], { languageName: 'go' })
hljs.registerAliases(['toml'], { languageName: 'ini' })

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
}

export function highlight(code: string, lang: string): string {
  const l = lang.trim().toLowerCase()
  if (l && hljs.getLanguage(l)) {
    try {
      return hljs.highlight(code, { language: l, ignoreIllegals: true }).value
    } catch {
      // fall through to plain text
    }
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
