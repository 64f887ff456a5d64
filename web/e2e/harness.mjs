// The end-to-end harness: a real `weft serve` (built from this checkout)
// whose model is llmtest's loopback fake of the Anthropic wire protocol,
// scripted by the test (e2e/fakemodel), behind a TCP proxy that a test can
// cut (a dropped connection) while the server behind it restarts on the
// same port; and Debian's Chromium driven by playwright-core.

import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const repoDir = path.resolve(webDir, '..')
export const outDir = path.join(webDir, 'e2e', 'out')

/**
 * Builds weft and the fake model into e2e/out. E2E_WEFT_BIN runs another
 * weft binary instead (a before/after comparison of the bench).
 */
const weftBin = process.env.E2E_WEFT_BIN || path.join(outDir, 'weft')
// Children are killed when the runner exits, however it exits.
const children = new Set()
process.on('exit', () => { for (const c of children) c.kill('SIGKILL') })
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => process.exit(130))
function track(proc) {
  children.add(proc)
  proc.once('exit', () => children.delete(proc))
  return proc
}

export function buildBinaries() {
  mkdirSync(outDir, { recursive: true })
  const env = { ...process.env, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() }
  if (!process.env.E2E_WEFT_BIN) execFileSync('go', ['build', '-o', path.join(outDir, 'weft'), './cmd/weft'], { cwd: repoDir, stdio: 'inherit', env })
  execFileSync('go', ['build', '-o', path.join(outDir, 'fakemodel'), './web/e2e/fakemodel'], { cwd: repoDir, stdio: 'inherit', env })
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

/** Starts the scripted fake model. push(scripts) queues its answers. */
export async function startFake() {
  const proc = track(spawn(path.join(outDir, 'fakemodel'), [], { stdio: ['pipe', 'pipe', 'inherit'] }))
  const line = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout })
    rl.once('line', resolve)
    proc.once('exit', (code) => reject(new Error(`fakemodel exited ${code}`)))
  })
  const urls = JSON.parse(line)
  return {
    url: urls.model,
    mcpURL: urls.mcp,
    async push(...scripts) {
      const res = await fetch(urls.control + '/push', { method: 'POST', body: JSON.stringify(scripts) })
      if (!res.ok) throw new Error(`push: ${res.status} ${await res.text()}`)
    },
    async requests() {
      return (await fetch(urls.control + '/requests')).json()
    },
    stop() {
      proc.stdin.end()
      proc.kill('SIGTERM')
    },
  }
}

// Script helpers: the JSON form of llmtest.Script.
export const text = (chunks, extra = {}) => ({ Blocks: [{ Type: 'text', Chunks: chunks }], Usage: { input_tokens: 120, output_tokens: 30 }, ...extra })
export const tool = (id, name, input, extra = {}) => ({
  Blocks: [{ Type: 'tool_use', ID: id, Name: name, Chunks: [JSON.stringify(input)] }], Usage: { input_tokens: 100, output_tokens: 20 }, ...extra,
})
export const ms = (n) => n * 1e6 // time.Duration is nanoseconds

/**
 * Starts `weft serve` on a fixed port (so that a restart comes back on the
 * same one) with a database and workspace in dir.
 */
export async function startWeft({ port, dir, modelURL, token, extraArgs = [] }) {
  const args = [
    'serve', '--addr', `127.0.0.1:${port}`, '--db', path.join(dir, 'weft.db'), '--workspace', path.join(dir, 'ws'),
    '--model', 'anthropic:claude-sonnet-4-5', '--base-url', modelURL, '--api-key', 'fake-key',
    '--rate-limit', '0', '--audit-log', 'off', '--log-level', 'warn',
    // The fake model answers from a script, call by call: the turn-end
    // pipeline's own model calls (memory extraction, consolidation) would
    // take answers the tests scripted for their turns.
    '--no-extract-memory', '--no-dream', ...extraArgs,
  ]
  if (token) args.push('--bearer-token', token)
  mkdirSync(path.join(dir, 'ws'), { recursive: true })
  const proc = track(spawn(weftBin, args, {
    stdio: ['ignore', 'inherit', 'pipe'],
    env: { ...process.env, HOME: dir, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '' },
  }))
  let log = ''
  await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stderr })
    rl.on('line', (l) => {
      log += l + '\n'
      if (process.env.E2E_VERBOSE) console.error('  weft|', l)
      if (l.includes('listening on')) resolve()
    })
    proc.once('exit', (code) => reject(new Error(`weft serve exited ${code}:\n${log}`)))
  })
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  return {
    proc,
    log: () => log,
    /** Graceful stop (SIGTERM, what a restart does), or kill -9. */
    async stop(signal = 'SIGTERM') {
      proc.kill(signal)
      await exited
    },
  }
}

/**
 * A TCP proxy in front of weft: the browser talks to it, so a test can cut
 * every open connection (dropAll) or restart weft behind a stable origin.
 */
export async function startProxy(targetPort) {
  const sockets = new Set()
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1')
    sockets.add(client)
    sockets.add(upstream)
    const done = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', done).on('close', done)
    upstream.on('error', done).on('close', done)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    dropAll() {
      const n = sockets.size
      for (const s of sockets) s.destroy()
      sockets.clear()
      return n
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

export function tempDir(prefix = 'weft-e2e-') {
  return mkdtempSync(path.join(os.tmpdir(), prefix))
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true })
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core')
  // launch() gives the browser a fresh temporary profile of its own.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  })
  return { browser, close: () => browser.close() }
}

/** Reads a session's events through the API, as a second client would. */
export async function sessionEvents(base, id, token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {}
  const s = await (await fetch(`${base}/v1/sessions/${id}`, { headers })).json()
  const ctl = new AbortController()
  const res = await fetch(`${base}/v1/sessions/${id}/events?after=0`, { headers, signal: ctl.signal })
  const reader = res.body.getReader()
  const dec = new TextDecoder()
  let buf = ''
  const events = []
  while (events.length === 0 || events.at(-1).seq < s.last_seq) {
    const { value, done } = await reader.read()
    if (done) break
    buf += dec.decode(value, { stream: true })
    let i
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i)
      buf = buf.slice(i + 2)
      const f = {}
      for (const line of frame.split('\n')) {
        const j = line.indexOf(': ')
        if (j > 0) f[line.slice(0, j)] = line.slice(j + 2)
      }
      if (f.id) events.push({ seq: Number(f.id), type: f.event, data: JSON.parse(f.data) })
    }
  }
  ctl.abort()
  return events
}
