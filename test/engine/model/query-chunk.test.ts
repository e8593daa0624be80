// How many queries an attention group takes: whole entries unless one long entry among short
// ones would pad every group to its length.
import { expect, test } from 'vitest';
import { GROUP_COST_IN_QUERY_ROWS, queryChunk } from '../../../src/engine/model/batch-plan.js';

test('one entry, or entries of one length, are attended whole', () => {
  expect(queryChunk([1])).toBe(1);
  expect(queryChunk([64])).toBe(64);
  expect(queryChunk([2048])).toBe(2048);
  expect(queryChunk(new Array(16).fill(4))).toBe(4);
});

test('a deep tree among one-token entries is split, so the others are not padded to its depth', () => {
  const lengths = [...new Array(62).fill(1), 8, 6];
  const chunk = queryChunk(lengths);
  expect(chunk).toBe(1);
  // The padded query rows the split saves outweigh the extra groups' keys.
  const cost = (c: number) => lengths.reduce((g, len) => g + Math.ceil(len / c), 0) * (GROUP_COST_IN_QUERY_ROWS + c);
  expect(cost(chunk)).toBeLessThan(cost(8));
});

test('the chunk minimises groups × (group cost + chunk) over every chunk size', () => {
  const cases = [[15, 3, 8, 1, 6, 2, 10, 4], [60, 2, 2, 2], [...new Array(24).fill(1), 2, 2, 3, 3, 4, 5, 6, 7], [3, 9, 27]];
  for (const lengths of cases) {
    const chunk = queryChunk(lengths);
    const longest = Math.max(...lengths);
    expect(chunk).toBeGreaterThanOrEqual(1);
    expect(chunk).toBeLessThanOrEqual(longest);
    const cost = (c: number) => lengths.reduce((g, len) => g + Math.ceil(len / c), 0) * (GROUP_COST_IN_QUERY_ROWS + c);
    for (let c = 1; c <= longest; c++) expect(cost(chunk)).toBeLessThanOrEqual(cost(c));
  }
});
