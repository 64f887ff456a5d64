/**
 * Runs fn when the page is idle, at the latest after timeoutMs: for work a
 * first draw should not wait behind (the sessions list beside a cold tab's
 * conversation, the server probe, the code highlighter).
 */
export function whenIdle(fn: () => void, timeoutMs: number) {
  const w = globalThis as { requestIdleCallback?: (cb: () => void, o?: { timeout: number }) => number }
  if (w.requestIdleCallback) w.requestIdleCallback(() => fn(), { timeout: timeoutMs })
  else setTimeout(fn, Math.min(200, timeoutMs))
}
