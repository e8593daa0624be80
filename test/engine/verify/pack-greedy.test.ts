// Flatten & Pack and greedy verification on hand-made trees.
import { describe, expect, it } from 'vitest';
import { DraftTree } from '../../../src/engine/tree.js';
import { verifyGreedy } from '../../../src/engine/verify/greedy.js';
import { packSuperTree } from '../../../src/engine/verify/pack.js';

/** Root token 100; root candidates 10, 11, 12; node 1 (token 10) candidates 20, 21. */
function tree(id: string): DraftTree {
  const t = new DraftTree(id, 100);
  t.setCandidates(0, 0, Int32Array.from([10, 11, 12]), Float32Array.from([-0.1, -2, -3]));
  t.addTopChildren(0, 3); // nodes 1, 2, 3
  t.setCandidates(1, 1, Int32Array.from([20, 21]), Float32Array.from([-0.5, -1]));
  t.addTopChildren(1, 2); // nodes 4 (20), 5 (21)
  return t;
}

describe('packSuperTree', () => {
  it('packs each request as [root, verified nodes in id order] with parents as entry rows', () => {
    const a = tree('a');
    for (const id of [1, 3, 5]) a.verify(id);
    const b = tree('b'); // root only
    const packed = packSuperTree([a, b], [7, 2]);
    expect(packed.tokens).toBe(5);
    expect(packed.entries.map((e) => e.slot)).toEqual([7, 2]);
    expect(Array.from(packed.entries[0].tokens)).toEqual([100, 10, 12, 21]);
    expect(Array.from(packed.entries[0].parents)).toEqual([-1, 0, 0, 1]);
    expect(Array.from(packed.entries[1].tokens)).toEqual([100]);
    expect(packed.requests[1].offset).toBe(4);
    expect(Array.from(packed.requests[0].rowOfNode)).toEqual([0, 1, -1, 2, -1, 3]);
  });

  it('refuses to verify a node before its parent', () => {
    const a = tree('a');
    expect(() => a.verify(4)).toThrow('node 4 of a verified before its parent 1');
    expect(() => a.verify(14)).toThrow('cannot verify node 14 of a');
  });
});

describe('verifyGreedy', () => {
  const a = tree('a');
  for (const id of [1, 2, 3, 4, 5]) a.verify(id);
  const packed = packSuperTree([a], [0]).requests[0];
  // Rows: 0 root, 1 node1(10), 2 node2(11), 3 node3(12), 4 node4(20), 5 node5(21).
  it('follows the child equal to the target argmax and takes the argmax after it as bonus', () => {
    expect(verifyGreedy(packed, [10, 21, 0, 0, 0, 77])).toEqual({ accepted: [1, 5], bonus: 77 });
  });
  it('tries every sibling, not just the first', () => {
    expect(verifyGreedy(packed, [12, 0, 0, 55, 0, 0])).toEqual({ accepted: [3], bonus: 55 });
  });
  it('emits the root argmax as bonus when no child matches', () => {
    expect(verifyGreedy(packed, [99, 0, 0, 0, 0, 0])).toEqual({ accepted: [], bonus: 99 });
  });
});
