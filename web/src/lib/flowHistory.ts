// Undo and redo for the flow canvas (seed 001: every structural edit can be
// undone and redone, at most 50 steps). The history keeps snapshots of the
// document taken before each edit: restoring one is exact whatever the edit
// was, and a snapshot of a 64-node canvas is a few kilobytes.

export const HISTORY_LIMIT = 50

/** How long edits with the same key merge into one step (typing in one field). */
export const COALESCE_MS = 1200

export class History<T> {
  private past: T[] = []
  private future: T[] = []
  private lastKey: string | null = null
  private lastAt = 0
  readonly limit: number

  constructor(limit = HISTORY_LIMIT) {
    this.limit = limit
  }

  /**
   * record saves the state before an edit. An edit with the same key as
   * the previous one, within COALESCE_MS of it, joins that step (the state
   * before the first of them is what undo returns to). A new edit clears
   * what could be redone.
   */
  record(before: T, key?: string, now = Date.now()): void {
    if (key && key === this.lastKey && now - this.lastAt <= COALESCE_MS && this.past.length) {
      this.lastAt = now
      this.future = []
      return
    }
    this.past.push(before)
    if (this.past.length > this.limit) this.past.splice(0, this.past.length - this.limit)
    this.future = []
    this.lastKey = key ?? null
    this.lastAt = now
  }

  /** undo returns the state to go back to (and keeps current for redo), or undefined. */
  undo(current: T): T | undefined {
    const prev = this.past.pop()
    if (prev === undefined) return undefined
    this.future.push(current)
    this.lastKey = null
    return prev
  }

  /** redo returns the state to go forward to (and keeps current for undo), or undefined. */
  redo(current: T): T | undefined {
    const next = this.future.pop()
    if (next === undefined) return undefined
    this.past.push(current)
    this.lastKey = null
    return next
  }

  /** Ends the current coalescing run: the next edit is a step of its own. */
  seal(): void {
    this.lastKey = null
  }

  clear(): void {
    this.past = []
    this.future = []
    this.lastKey = null
  }

  get canUndo(): boolean { return this.past.length > 0 }
  get canRedo(): boolean { return this.future.length > 0 }
  get undoDepth(): number { return this.past.length }
  get redoDepth(): number { return this.future.length }
}
