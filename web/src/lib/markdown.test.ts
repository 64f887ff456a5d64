import { describe, expect, it } from 'vitest'
import { highlight, highlighted, loadHighlighter, renderMarkdown } from './markdown'

describe('markdown with a lazily loaded highlighter', () => {
  it('draws code plain (escaped) first, highlighted once highlight.js is in, and never lets markup through', async () => {
    const text = '# T\n\n```go\nfunc main() { fmt.Println("<b>hi</b>") }\n```\n\n<script>alert(1)</script>'
    const plain = renderMarkdown(text)
    expect(plain).toContain('<pre class="hljs"><code>func main() { fmt.Println(&quot;&lt;b&gt;hi&lt;/b&gt;&quot;) }')
    expect(plain).not.toContain('hljs-keyword')
    expect(plain).not.toContain('<script>')
    const before = highlighted.value
    await loadHighlighter()
    expect(highlighted.value).toBe(before + 1)
    // The cache of plain renderings was dropped: the same text now highlights.
    const rich = renderMarkdown(text)
    expect(rich).toContain('<span class="hljs-keyword">func</span>')
    expect(rich).toContain('&lt;b&gt;hi&lt;/b&gt;')
    expect(rich).not.toContain('<script>')
    // Unknown languages stay plain text.
    expect(highlight('<x>', 'no-such-lang')).toBe('&lt;x&gt;')
    await loadHighlighter() // idempotent
    expect(highlighted.value).toBe(before + 1)
  })
})
