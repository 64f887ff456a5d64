import { describe, expect, it } from 'vitest'
import { localTime, thousands } from './format'

describe('thousands', () => {
  it('groups thousands like en-US toLocaleString, without it', () => {
    for (const n of [0, 7, 999, 1000, 12345, 999999, 1000000, 1234567890, -1, -1234, -999999, 42.9, Number.MAX_SAFE_INTEGER]) {
      expect(thousands(n), String(n)).toBe(Math.trunc(n).toLocaleString('en-US'))
    }
  })
  it('keeps what is not a number readable', () => {
    expect(thousands(NaN)).toBe('NaN')
    expect(thousands(Infinity)).toBe('Infinity')
  })
})

describe('localTime', () => {
  it('shows local date and minutes', () => {
    const d = new Date(2026, 0, 5, 7, 3, 59)
    expect(localTime(d.toISOString())).toBe('2026-01-05 07:03')
  })
  it('is empty for a bad date', () => {
    expect(localTime('not a date')).toBe('')
    expect(localTime('')).toBe('')
  })
})
