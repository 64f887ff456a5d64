import { describe, expect, it } from 'vitest'
import { alpha, categoryOf, darken, nodeColors, parseColor, toolLook } from './flowTheme'

describe('flow theme', () => {
  it("darken is MUI's: every channel times (1 - coefficient)", () => {
    expect(darken(nodeColors.agent, 0.8)).toBe('rgb(15, 42, 45)') // #4DD0E1
    expect(darken('#fee440', 0.8)).toBe('rgb(51, 46, 13)')
    expect(darken('#fff', 0)).toBe('rgb(255, 255, 255)')
    expect(darken('rgb(100, 50, 10)', 1)).toBe('rgb(0, 0, 0)')
    expect(alpha('#000000', 0.5)).toBe('rgba(0, 0, 0, 0.5)')
    expect(parseColor('nonsense')).toEqual([128, 128, 128])
  })

  const cases: [string, string, string?][] = [
    ['Read', 'read'], ['Grep', 'read'], ['Write', 'write'], ['Bash', 'shell'], ['WebFetch', 'web'], ['AskUserQuestion', 'people'],
    ['memory_search', 'memory'], ['SomethingNew', 'other'],
    ['mcp__github__list_issues', 'mcp:github', 'github'], ['mcp__my_server__do-it', 'mcp:my_server', 'my_server'],
  ]
  for (const [tool, key, server] of cases) {
    it(`${tool} is in ${key}`, () => {
      const c = categoryOf(tool)
      expect(c.key).toBe(key)
      expect(c.server).toBe(server)
      expect(toolLook(tool).color).toBe(c.color)
    })
  }
})
