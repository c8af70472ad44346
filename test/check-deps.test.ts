import { expect, test } from 'bun:test'
import { compare } from '../scripts/check-deps.ts'

test.each([
  ['1.4.28', '1.4.28', 0],
  ['1.4.30', '1.4.28', 1],
  ['1.4.9', '1.4.28', -1],
  ['3.24.6', '3.9.8', 1],
  ['10.6.0', '7.0.11', 1],
  ['0.32.5', '0.32.6', -1],
  ['1.4.28-beta.1', '1.4.28', 0],
])('%s against the floor %s compares as %d', (installed, floor, sign) => {
  expect(Math.sign(compare(installed, floor))).toBe(sign)
})
