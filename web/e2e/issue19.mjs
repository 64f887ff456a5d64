// End-to-end scenarios of issue 19's leftovers (run by run.mjs): the MCP
// servers in Settings, and the chat's rendering of token warnings and
// compactions.

import path from 'node:path'
import { writeFileSync } from 'node:fs'
import { repoDir } from './harness.mjs'

const shots = process.env.E2E_SCREENSHOTS ? path.join(repoDir, 'docs', 'ui') : ''
async function shot(page, name) {
  if (!shots) return
  await page.waitForTimeout(150)
  await page.screenshot({ path: path.join(shots, `${name}.png`) })
}

export const issue19Tests = [
  ['settings: the MCP servers weft is a client of, their state and tools, secrets masked', async (env) => {
    const { assert } = env
    const secret = 'e2e-mcp-secret-0123456789'
    const srv = await env.startOtherWeft((dir) => {
      const cfg = path.join(dir, 'mcp-e2e.json')
      writeFileSync(cfg, JSON.stringify({
        mcpServers: {
          docs: { type: 'http', url: `${env.fake.mcpURL}?apiKey=${secret}`, headers: { Authorization: `Bearer ${secret}` } },
          // Nothing listens on port 9 of loopback (discard): it fails.
          down: { type: 'http', url: 'http://127.0.0.1:9/mcp' },
          broken: { type: 'carrier-pigeon' },
        },
      }))
      return ['--mcp-config', cfg]
    })
    try {
      const api = await (await fetch(`${srv.base}/v1/mcp/servers`)).json()
      const states = Object.fromEntries(api.servers.map((s) => [s.name, s.state]))
      assert.deepEqual(states, { docs: 'connected', down: 'failed', broken: 'disabled' })
      assert.deepEqual(api.servers.find((s) => s.name === 'docs').tool_names, ['mcp__docs__lookup', 'mcp__docs__status'])
      assert.ok(!JSON.stringify(api).includes(secret), 'the API shows a secret')

      const page = await env.newPage()
      await page.goto(`${srv.base}/settings`)
      const docs = page.locator('[data-test=mcp-server][data-mcp=docs]')
      await docs.waitFor()
      assert.equal(await docs.getAttribute('data-state'), 'connected')
      assert.match(await docs.locator('[data-test=mcp-target]').innerText(), /apiKey=\*\*\*/)
      await docs.locator('[data-test=mcp-tools]').click()
      assert.deepEqual(await docs.locator('[data-test=mcp-tool-names] li').allInnerTexts(), ['mcp__docs__lookup', 'mcp__docs__status'])
      const down = page.locator('[data-test=mcp-server][data-mcp=down]')
      assert.equal(await down.getAttribute('data-state'), 'failed')
      assert.ok((await down.locator('[data-test=mcp-error]').innerText()).length > 0)
      const broken = page.locator('[data-test=mcp-server][data-mcp=broken]')
      assert.equal(await broken.getAttribute('data-state'), 'disabled')
      assert.match(await broken.locator('[data-test=mcp-reason]').innerText(), /configuration/)
      assert.ok(!(await page.content()).includes(secret), 'the page shows a secret')
      await page.locator('[data-test=mcp-servers]').scrollIntoViewIfNeeded()
      await shot(page, 'settings-mcp')
      assert.deepEqual(page.errors, [])
      await page.context().close()
    } finally {
      await srv.stop()
    }

    // A server with no MCP configuration lists none, and says so.
    const page = await env.newPage()
    await page.goto(`${env.base}/settings`)
    await page.locator('[data-test=mcp-none]').waitFor()
    await page.context().close()
  }],

  ['chat: a token warning as a banner and a badge with the percentage, a compaction as a divider', async (env) => {
    const { assert } = env
    const { session_id: id } = await env.api('POST', '/v1/sessions', {})
    // Four short turns (something to compact), then one whose prompt the
    // provider counts at 170,000 tokens: past 80 % of the usable window.
    for (const [i, usage] of [120, 120, 120, 120, 170000].entries()) {
      await env.fake.push(env.text([`answer ${i}`], { Usage: { input_tokens: usage, output_tokens: 30 } }))
      const res = await fetch(`${env.base}/v1/sessions/${id}/messages`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: `question ${i}` }),
      })
      await res.text()
    }
    const page = await env.newPage()
    await page.goto(`${env.base}/chat/${id}`)
    const warning = page.locator('[data-test=token-warning]').first()
    await warning.waitFor()
    const percent = Number(await warning.getAttribute('data-percent'))
    assert.ok(percent >= 80, `percent ${percent}`)
    assert.match(await warning.innerText(), new RegExp(`${percent}%`))
    const badge = page.locator('[data-test=context-badge]')
    assert.match(await badge.innerText(), /\d+%/)

    // A compaction (by hand: POST .../compact) while the tab follows.
    await env.fake.push(env.text(['## Goal\nSUMMARY']))
    const compacted = await env.api('POST', `/v1/sessions/${id}/compact`, {})
    assert.equal(compacted.compactions.length, 1)
    const c = compacted.compactions[0]
    const divider = page.locator('[data-test=compaction]')
    await divider.waitFor()
    assert.equal(await divider.getAttribute('data-level'), c.level)
    const txt = await divider.innerText()
    assert.ok(txt.includes(c.level) && txt.includes(c.tokens_before.toLocaleString('en-US')) && txt.includes(c.tokens_after.toLocaleString('en-US')), txt)
    await shot(page, 'chat-compaction')
    assert.deepEqual(page.errors, [])
    await page.context().close()
  }],
  ['chat: follow-up suggestions as chips after a turn; a click fills the message box, the next message replaces them', async (env) => {
    const { assert } = env
    // Suggestions are off by default in weft serve: a server of its own.
    const srv = await env.startOtherWeft(() => ['--suggestions'])
    try {
      const { session_id: id } = await (await fetch(`${srv.base}/v1/sessions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}',
      })).json()
      const page = await env.newPage()
      await page.goto(`${srv.base}/chat/${id}`)
      await page.locator('[data-test=composer]').waitFor()
      // The turn's answer, then the suggestions call's: a list with a
      // marker, a duplicate and a blank line, which the server cleans.
      await env.fake.push(env.text(['The tests pass.']))
      await env.fake.push(env.text(['- Run the linter too\n\nShow me the diff\nRun the linter too']))
      await page.fill('[data-test=composer]', 'run the tests')
      await page.click('[data-test=send]')
      const chips = page.locator('[data-test=suggestion]')
      await chips.first().waitFor()
      assert.deepEqual(await chips.allInnerTexts(), ['Run the linter too', 'Show me the diff'])
      await shot(page, 'chat-suggestions')
      // A click fills the box; it does not send.
      await chips.nth(1).click()
      assert.equal(await page.inputValue('[data-test=composer]'), 'Show me the diff')
      assert.equal(await page.locator('[data-test=user-message]').count(), 1)
      // Sent, the old suggestions go; the next turn's come.
      await env.fake.push(env.text(['Here is the diff.']))
      await env.fake.push(env.text(['Commit it']))
      await page.click('[data-test=send]')
      await page.locator('[data-test=user-message]', { hasText: 'Show me the diff' }).waitFor()
      await page.locator('[data-test=suggestion]', { hasText: 'Commit it' }).waitFor()
      assert.deepEqual(await chips.allInnerTexts(), ['Commit it'])
      // Another tab on the session sees the same chips (they are an event).
      const other = await env.newPage()
      await other.goto(`${srv.base}/chat/${id}`)
      await other.locator('[data-test=suggestion]', { hasText: 'Commit it' }).waitFor()
      assert.deepEqual(page.errors, [])
      assert.deepEqual(other.errors, [])
      await other.context().close()
      await page.context().close()
    } finally {
      await srv.stop()
    }
  }],
]
