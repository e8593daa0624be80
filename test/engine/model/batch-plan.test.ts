// The batch plan of a forward, worked out by hand: positions, gather/key/scatter/past indices and
// the tree mask for a chain, a branching tree, a second forward over earlier scratch nodes,
// requests of different lengths (with padding queries), an attention window with a gap, and GQA.
import { describe, expect, test } from 'vitest';
import { PAST_BLOCK } from '../../../src/engine/model/graph-builder.js';
import { pastPlan, planBatch, planHeadRows, type PlanEntry } from '../../../src/engine/model/batch-plan.js';

/** One mask row as text: `1` where the query sees the key column, `.` where it is hidden. */
function maskRows(mask: Float32Array, width: number): string[] {
  const rows: string[] = [];
  for (let r = 0; r < mask.length / width; r++) {
    rows.push(Array.from(mask.subarray(r * width, (r + 1) * width), (v) => (v === 0 ? '1' : '.')).join(''));
  }
  return rows;
}

/** A mask row from the columns it shows. */
function row(width: number, visible: number[]): string {
  return Array.from({ length: width }, (_, c) => (visible.includes(c) ? '1' : '.')).join('');
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

function entry(slot: number, committed: number, tokens: number[], parents: number[], scratch: { parents: number[]; depths: number[] } = { parents: [], depths: [] }): PlanEntry {
  return { slot, tokens, parents, committed, scratchParents: scratch.parents, scratchDepths: scratch.depths };
}

const layout = { slotStride: 16, window: null, queryHeadsPerKv: 1 };

test('the page size the cases below are worked out for', () => {
  expect(PAST_BLOCK).toBe(8);
});

describe('one request', () => {
  test('a chain of three after three committed tokens', () => {
    const plan = planBatch([entry(0, 3, [10, 11, 12], [-1, 0, 1])], layout);
    expect(plan).toMatchObject({ tokens: 3, longest: 3, chunk: 3, groups: 1, pastBlocks: 1, width: 11, paddingWaste: 0 });
    expect([...plan.inputIds]).toEqual([10, 11, 12]);
    expect([...plan.positions]).toEqual([3, 4, 5]);
    expect([...plan.gatherIndex]).toEqual([0, 1, 2]);
    expect([...plan.keyIndex]).toEqual([0, 1, 2]);
    expect([...plan.scatterIndex]).toEqual([0, 1, 2]);
    expect([...plan.pastIndex]).toEqual([0]);
    // Past columns 0–7 (rows 0–2 committed), then the new tokens at columns 8–10.
    expect(maskRows(plan.mask, plan.width)).toEqual([
      row(11, [0, 1, 2, 8]),
      row(11, [0, 1, 2, 8, 9]),
      row(11, [0, 1, 2, 8, 9, 10]),
    ]);
    expect(plan.depths).toEqual([[0, 1, 2]]);
  });

  test('a tree with branches: siblings share a position and never see each other', () => {
    //   root ─ a(0) ┬ b(1) ─ d(3)
    //               └ c(2)
    //   root ─ e(4)
    const plan = planBatch([entry(1, 2, [20, 21, 22, 23, 24], [-1, 0, 0, 1, -1])], layout);
    expect([...plan.positions]).toEqual([2, 3, 3, 4, 2]);
    expect(plan.depths).toEqual([[0, 1, 1, 2, 0]]);
    // Slot 1 starts at row 16 of the buffers, block 2.
    expect([...plan.pastIndex]).toEqual([2]);
    const w = plan.width;
    expect(w).toBe(8 + 5);
    expect(maskRows(plan.mask, w)).toEqual([
      row(w, [0, 1, 8]),
      row(w, [0, 1, 8, 9]),
      row(w, [0, 1, 8, 10]),
      row(w, [0, 1, 8, 9, 11]),
      row(w, [0, 1, 12]),
    ]);
  });

  test('a second forward before the commit sees the earlier scratch nodes in the past, after the committed rows', () => {
    // Scratch from the first forward: node 0 (depth 0) and its child node 1 (depth 1); the new
    // token hangs under node 1, the next under node 0.
    const plan = planBatch([entry(0, 4, [30, 31], [1, 0], { parents: [-1, 0], depths: [0, 1] })], layout);
    expect([...plan.positions]).toEqual([4 + 2, 4 + 1]);
    expect(plan.depths).toEqual([[2, 1]]);
    // Committed rows 0–3, scratch nodes at rows 4 and 5; new tokens at columns 8 and 9.
    expect(maskRows(plan.mask, plan.width)).toEqual([
      row(10, [0, 1, 2, 3, 4, 5, 8]),
      row(10, [0, 1, 2, 3, 4, 9]),
    ]);
  });

  test('a prefill with nothing committed still gathers one (hidden) block', () => {
    const plan = planBatch([entry(0, 0, [1, 2], [-1, 0])], layout);
    expect(plan.pastBlocks).toBe(1);
    expect(maskRows(plan.mask, plan.width)).toEqual([row(10, [8]), row(10, [8, 9])]);
  });
});

describe('several requests', () => {
  // A: slot 1, one token after 5 committed. B: slot 0, a chain of three after 9 committed (two blocks).
  const entries = [entry(1, 5, [7], [-1]), entry(0, 9, [40, 41, 42], [-1, 0, 1])];

  test('are packed in order and attended in groups padded to the longest', () => {
    const plan = planBatch(entries, layout);
    // chunk 3: 2 groups × (8 + 3) = 22 beats chunk 2 (3 × 10) and chunk 1 (4 × 9).
    expect(plan).toMatchObject({ tokens: 4, longest: 3, chunk: 3, groups: 2, pastBlocks: 2, width: 16 + 3 });
    expect(plan.paddingWaste).toBeCloseTo(2 / 6);
    expect([...plan.inputIds]).toEqual([7, 40, 41, 42]);
    expect([...plan.positions]).toEqual([5, 9, 10, 11]);
    // Group 0 is A with two padding queries pointing at A's row; group 1 is B.
    expect([...plan.gatherIndex]).toEqual([0, 0, 0, 1, 2, 3]);
    expect([...plan.scatterIndex]).toEqual([0, 3, 4, 5]);
    expect([...plan.keyIndex]).toEqual([0, 0, 0, 1, 2, 3]);
    // A (slot 1, blocks 2–3) has one block of past: its second column block repeats a real one.
    expect([...plan.pastIndex]).toEqual([2, 2, 0, 1]);
    const w = plan.width;
    expect(maskRows(plan.mask, w)).toEqual([
      row(w, [...range(0, 5), 16]),
      // Padding queries see every key (their output is never read back).
      row(w, range(0, w)),
      row(w, range(0, w)),
      row(w, [...range(0, 9), 16]),
      row(w, [...range(0, 9), 16, 17]),
      row(w, [...range(0, 9), 16, 17, 18]),
    ]);
    expect(plan.depths).toEqual([[0], [0, 1, 2]]);
  });

  test('with grouped-query attention each group\'s rows repeat once per query head of a KV head', () => {
    const single = planBatch(entries, layout);
    const grouped = planBatch(entries, { ...layout, queryHeadsPerKv: 2 });
    const rows = maskRows(single.mask, single.width);
    expect(maskRows(grouped.mask, grouped.width)).toEqual([...rows.slice(0, 3), ...rows.slice(0, 3), ...rows.slice(3), ...rows.slice(3)]);
  });

  test('a deep tree among one-token requests is split into chunks that each see the whole tree', () => {
    const ones = range(0, 6).map((slot) => entry(slot, 1, [slot + 1], [-1]));
    const plan = planBatch([...ones, entry(6, 1, [7, 8, 9, 10], [-1, 0, 1, 2])], { ...layout, slotStride: 8 });
    // Σ groups × (8 + chunk): chunk 2 (8 × 10 = 80) beats 4 (7 × 12), 3 (8 × 11) and 1 (10 × 9).
    expect(plan).toMatchObject({ chunk: 2, groups: 8, longest: 4, width: 8 + 4 });
    // The tree's tokens are packed rows 6–9, queried by groups 6 and 7.
    expect([...plan.gatherIndex.subarray(12)]).toEqual([6, 7, 8, 9]);
    expect([...plan.scatterIndex]).toEqual([0, 2, 4, 6, 8, 10, 12, 13, 14, 15]);
    // Both chunks of the tree gather all four of its keys.
    expect([...plan.keyIndex.subarray(24)]).toEqual([6, 7, 8, 9, 6, 7, 8, 9]);
    expect([...plan.pastIndex]).toEqual([0, 1, 2, 3, 4, 5, 6, 6]);
    expect([...plan.positions.subarray(6)]).toEqual([1, 2, 3, 4]);
    const w = plan.width;
    expect(maskRows(plan.mask, w).slice(12)).toEqual([row(w, [0, 8]), row(w, [0, 8, 9]), row(w, [0, 8, 9, 10]), row(w, [0, 8, 9, 10, 11])]);
  });
});

describe('an attention window', () => {
  test('gathers the sink blocks and the recent ones, skipping the gap, and masks by position', () => {
    const window = { sink: 1, recent: 8 };
    // 30 committed rows, blocks 0–3; the query at position 30 sees row 0 (sink) and rows 23–29.
    expect(pastPlan(30, 0, window)).toEqual({ blocks: 3, sinkBlocks: 1, gapBlocks: 1 });
    const plan = planBatch([entry(0, 30, [5], [-1])], { ...layout, slotStride: 32, window });
    expect(plan.pastBlocks).toBe(3);
    expect([...plan.pastIndex]).toEqual([0, 2, 3]);
    // Block 2 (rows 16–23) lands at columns 8–15, so row 23 is column 15; rows 24–29 columns 16–21.
    // The second row is a padding query (one query head per KV head keeps a group at two rows): it sees every key.
    expect(maskRows(plan.mask, plan.width)).toEqual([row(25, [0, ...range(15, 22), 24]), row(25, range(0, 25))]);
  });

  test('gives a one-token group a padding query when each KV head has one query head, and none with two', () => {
    const single = planBatch([entry(0, 3, [5], [-1])], layout);
    expect([single.chunk, single.groups, [...single.gatherIndex]]).toEqual([2, 1, [0, 0]]);
    expect(single.paddingWaste).toBe(0.5);
    const grouped = planBatch([entry(0, 3, [5], [-1])], { ...layout, queryHeadsPerKv: 2 });
    expect([grouped.chunk, grouped.groups]).toEqual([1, 1]);
  });

  test('hides a tree ancestor that has slid out of the window', () => {
    const window = { sink: 0, recent: 2 };
    const plan = planBatch([entry(0, 0, [1, 2, 3], [-1, 0, 1])], { ...layout, window });
    expect(maskRows(plan.mask, plan.width)).toEqual([row(11, [8]), row(11, [8, 9]), row(11, [9, 10])]);
  });
});

test('head rows: logits, then top-k, then argmax; top-k never gets zero rows', () => {
  const asked = planHeadRows([2], [0, 1], [3], 4);
  expect([...asked.rows]).toEqual([2, 0, 1, 3]);
  expect(asked.split).toEqual([1, 2, 1]);
  expect(asked.k).toBe(4);
  const none = planHeadRows([], [], [1, 2], 4);
  expect([...none.rows]).toEqual([0, 1, 2]);
  expect(none.split).toEqual([0, 1, 2]);
  expect(none.k).toBe(1);
});
