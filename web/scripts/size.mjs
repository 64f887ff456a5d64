// Prints the gzipped size (level 9, as weft serves them) of the built
// assets, and of the first load: index.html plus every file it references,
// plus the chunks the landing route (Chat) imports, transitively.
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist')
const gz = (f) => gzipSync(readFileSync(path.join(dist, f)), { level: 9 }).length
const files = ['index.html', ...readdirSync(path.join(dist, 'assets')).map((f) => 'assets/' + f)]

// Static imports of a chunk (import ... from "./x.js" and import "./x.js").
const imports = (f) => [...readFileSync(path.join(dist, f), 'utf8').matchAll(/(?:from|import)\s*["']\.\/([\w.-]+\.(?:js|css))["']/g)].map((m) => 'assets/' + m[1])
const first = new Set(['index.html'])
const html = readFileSync(path.join(dist, 'index.html'), 'utf8')
for (const m of html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)) first.add(m[1])
const route = process.argv[2] ?? 'ChatView'
for (const f of files) if (path.basename(f).startsWith(route + '-')) first.add(f)
const queue = [...first].filter((f) => f.endsWith('.js'))
while (queue.length) {
  for (const dep of imports(queue.pop())) if (!first.has(dep)) { first.add(dep); queue.push(dep) }
}

// A chunk's CSS is loaded with it (Vite's preload), named like it.
for (const f of [...first]) {
  const stem = path.basename(f).replace(/-[\w]+\.js$/, '-')
  if (f.endsWith('.js')) for (const c of files) if (c.endsWith('.css') && path.basename(c).startsWith(stem)) first.add(c)
}

let total = 0
for (const f of files.sort()) total += gz(f)
let firstLoad = 0
for (const f of first) firstLoad += gz(f)
const kb = (n) => (n / 1024).toFixed(1) + ' KB'
for (const f of files) console.log(`${first.has(f) ? '*' : ' '} ${f.padEnd(44)} ${kb(readFileSync(path.join(dist, f)).length).padStart(10)} ${kb(gz(f)).padStart(10)} gz`)
console.log(`first load (${route}, * above): ${kb(firstLoad)} gzipped; all assets: ${kb(total)} gzipped`)
console.log(JSON.stringify({ firstLoadGzipBytes: firstLoad, allAssetsGzipBytes: total }))
