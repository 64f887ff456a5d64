// End-to-end tests of the web UI: Chromium (playwright-core) against a real
// `weft serve` serving the built UI, with a scripted fake model. Run from
// web/ with `npm run e2e` (after `npm run build`); .ci/run does. Set
// E2E_ONLY=<substring> to run some tests, E2E_SCREENSHOTS=1 to also write
// the screenshots of docs/ui.md, E2E_VERBOSE=1 for the server's log.

import assert from 'node:assert/strict'
import path from 'node:path'
import { writeFileSync } from 'node:fs'
import {
  buildBinaries, freePort, launchBrowser, ms, removeDir, repoDir, sessionEvents, startFake, startProxy, startWeft,
  tempDir, text, tool,
} from './harness.mjs'
import { tests } from './tests.mjs'
import { flowTests } from './flows.mjs'
import { issue19Tests } from './issue19.mjs'

const only = process.env.E2E_ONLY ?? ''
const started = Date.now()

buildBinaries()
const dir = tempDir()
const fake = await startFake()
const port = await freePort()
let weft = await startWeft({ port, dir, modelURL: fake.url, })
const proxy = await startProxy(port)
const base = `http://127.0.0.1:${proxy.port}`
const { browser, close } = await launchBrowser()
process.on('unhandledRejection', (e) => { console.error('unhandled rejection:', e); process.exit(1) })

const env = {
  base, fake, proxy, browser, dir, text, tool, ms, assert, sessionEvents,
  weftLog: () => weft.log(),
  /** Restarts weft behind the proxy (same port, same database). */
  async restartWeft(signal = 'SIGTERM') {
    await weft.stop(signal)
    weft = await startWeft({ port, dir, modelURL: fake.url, })
  },
  async stopWeft(signal = 'SIGTERM') {
    await weft.stop(signal)
  },
  async startWeftAgain() {
    weft = await startWeft({ port, dir, modelURL: fake.url, })
  },
  /** Another weft serve with extra flags, on its own port and database (dir: its HOME and files). */
  async startOtherWeft(extraArgs = (dir) => []) {
    const d = tempDir()
    const p = await freePort()
    const w = await startWeft({ port: p, dir: d, modelURL: fake.url, extraArgs: extraArgs(d) })
    return { base: `http://127.0.0.1:${p}`, dir: d, async stop() { await w.stop(); removeDir(d) } }
  },
  /** Another weft serve, with a token, on its own port and database. */
  async startTokenWeft(token) {
    const d = tempDir()
    const p = await freePort()
    const w = await startWeft({ port: p, dir: d, modelURL: fake.url, token })
    return { base: `http://127.0.0.1:${p}`, async stop() { await w.stop(); removeDir(d) } }
  },
  async newPage() {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: 'en-US' })
    const page = await ctx.newPage()
    page.setDefaultTimeout(15000)
    const errors = []
    page.on('pageerror', (e) => errors.push(String(e)))
    // Failed requests the UI handles (a refused rule, a stream cut on
    // purpose) are logged by the browser too: they are not page errors.
    page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text()) })
    page.errors = errors
    return page
  },
  async api(method, p, body) {
    const res = await fetch(base + p, {
      method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
    })
    const t = await res.text()
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${t}`)
    return t ? JSON.parse(t) : undefined
  },
  figures: {},
}

let passed = 0
let failed = 0
let skipped = 0
for (const [name, fn, opts] of [...tests, ...flowTests, ...issue19Tests]) {
  if (only && !name.includes(only)) continue
  if (opts?.skip) {
    skipped++
    console.log(`skip ${name}: ${opts.skip}`)
    continue
  }
  const t0 = Date.now()
  try {
    await fn(env)
    passed++
    console.log(`ok   ${name} (${Date.now() - t0} ms)`)
  } catch (e) {
    failed++
    console.log(`FAIL ${name} (${Date.now() - t0} ms)\n${e?.stack ?? e}`)
    if (process.env.E2E_VERBOSE) console.log(weft.log())
  }
}

if (Object.keys(env.figures).length) {
  writeFileSync(path.join(repoDir, 'web', 'e2e', 'out', 'figures.json'), JSON.stringify(env.figures, null, 2) + '\n')
  console.log('figures:', JSON.stringify(env.figures))
}

await close()
await proxy.close()
await weft.stop()
fake.stop()
removeDir(dir)
console.log(`e2e: ${passed} passed, ${failed} failed, ${skipped} skipped (${((Date.now() - started) / 1000).toFixed(1)} s)`)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
