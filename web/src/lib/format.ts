// Formatting for the chat view, done by hand on purpose: the first use of
// the locale formatters (Number.prototype.toLocaleString, Date's, Intl.*)
// loads the locale's data and cost 40-60 ms on a cold tab's critical path
// here (docs/benchmarks.md, "A session of 5,000 events"), for figures that
// read the same in both of the UI's languages.

/** An integer with its thousands grouped by commas: 1234567 -> "1,234,567". */
export function thousands(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  const s = String(Math.trunc(Math.abs(n)))
  let out = ''
  for (let i = 0; i < s.length; i++) {
    if (i && (s.length - i) % 3 === 0) out += ','
    out += s[i]
  }
  return (n < 0 && Math.trunc(n) !== 0 ? '-' : '') + out
}

/** A timestamp as local "YYYY-MM-DD HH:MM", "" when it does not parse. */
export function localTime(iso: string): string {
  const d = new Date(iso)
  if (isNaN(+d)) return ''
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`
}
