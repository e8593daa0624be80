// Property: any packed batch of random trees over slots with random committed pasts, drafted over
// one or two forwards and then compacted, gives every node the reference logits of its own prefix;
// with an attention window (sinks and a recent window), the reference's logits under that window.
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadModel, type OrtModelSession } from '../../../src/engine/model/index.js';
import type { AttentionWindow } from '../../../src/engine/model/types.js';
import { writeFixtureModel, type FixtureModel } from './fixtures.js';
import { maxRowDiff, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const tmp = tempDir();
let fx: FixtureModel;
let session: OrtModelSession;
/** Sinks of 3 rows and a window of 10: pasts up to 30 rows leave a gap of several 8-row blocks. */
const WINDOW: AttentionWindow = { sink: 3, recent: 10 };
/** A window shorter than the trees, over short pasts: tree nodes see sinks and lose ancestors. */
const NARROW: AttentionWindow = { sink: 2, recent: 3 };
let windowed: OrtModelSession;
let narrow: OrtModelSession;
beforeAll(async () => {
  fx = writeFixtureModel(join(tmp.path, 'm'), { architecture: 'llama', hiddenSize: 32, numHeads: 4, numKvHeads: 2, seed: 5 });
  session = await loadModel(fx.dir, { slots: 3, maxLength: 48, cacheDir: join(tmp.path, 'cache') });
  windowed = await loadModel(fx.dir, { slots: 3, maxLength: 48, cacheDir: join(tmp.path, 'cache'), window: WINDOW });
  narrow = await loadModel(fx.dir, { slots: 3, maxLength: 48, cacheDir: join(tmp.path, 'cache'), window: NARROW });
});
afterAll(async () => {
  await session.release();
  await windowed.release();
  await narrow.release();
  tmp.cleanup();
});

const token = fc.integer({ min: 0, max: 290 });
/** A tree as parent links: node i's parent is -1 or an earlier node. */
const treeArb = fc
  .array(fc.tuple(token, fc.nat()), { minLength: 1, maxLength: 7 })
  .map((nodes) => nodes.map(([tok, r], i) => ({ token: tok, parent: i === 0 ? -1 : (r % (i + 1)) - 1 })));
const requestArb = (maxPast: number) => fc.record({ past: fc.array(token, { minLength: 0, maxLength: maxPast }), tree: treeArb, split: fc.nat() });

test('random packed trees match the reference, before and after compaction', async () => {
  await checkRandomTrees(session, undefined, 9, 25);
});

test('with attention sinks and a recent window, random packed trees match the windowed reference', async () => {
  await checkRandomTrees(windowed, WINDOW, 30, 25);
  await checkRandomTrees(narrow, NARROW, 4, 25);
});

test('the window changes the logits once the past outgrows it (the windowed test is not the plain one)', async () => {
  const past = Array.from({ length: 24 }, (_, i) => (i * 37) % 290);
  const plain = referenceForward(fx, past);
  const cut = referenceForward(fx, past, WINDOW);
  expect(maxRowDiff(Float32Array.from(cut[23]), 0, plain[23])).toBeGreaterThan(1e-3);
  const slot = windowed.allocSlot();
  try {
    const out = await windowed.forward([{ slot, tokens: past, parents: past.map((_, i) => i - 1) }], { logitsRows: [23] });
    expect(maxRowDiff(out.logits!, 0, cut[23])).toBeLessThan(1e-4);
  } finally {
    windowed.freeSlot(slot);
  }
});

async function checkRandomTrees(session: OrtModelSession, window: AttentionWindow | undefined, maxPast: number, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(requestArb(maxPast), { minLength: 1, maxLength: 3 }), async (requests) => {
      const slots = requests.map(() => session.allocSlot());
      try {
        for (let b = 0; b < requests.length; b++) {
          const past = requests[b].past;
          await session.forward([{ slot: slots[b], tokens: past, parents: past.map((_, i) => i - 1) }], {});
          session.commit(slots[b], past.map((_, i) => i));
        }
        // Two forwards: the first k nodes of each tree, then the rest (parents may point back).
        const cut = requests.map((r) => r.split % (r.tree.length + 1));
        const results: Float32Array[][] = requests.map(() => []);
        for (const part of [0, 1]) {
          const entries = requests.map((r, b) => {
            const nodes = part === 0 ? r.tree.slice(0, cut[b]) : r.tree.slice(cut[b]);
            return { slot: slots[b], tokens: nodes.map((n) => n.token), parents: nodes.map((n) => n.parent) };
          });
          const total = entries.reduce((s, e) => s + e.tokens.length, 0);
          const out = await session.forward(entries, { logitsRows: Array.from({ length: total }, (_, i) => i) });
          let row = 0;
          entries.forEach((e, b) => {
            for (let t = 0; t < e.tokens.length; t++, row++) {
              results[b].push(out.logits!.slice(row * fx.vocabSize, (row + 1) * fx.vocabSize));
            }
          });
        }
        const pathTo = (tree: { token: number; parent: number }[], i: number): number[] => {
          const nodes: number[] = [];
          for (let a = i; a >= 0; a = tree[a].parent) nodes.unshift(a);
          return nodes;
        };
        for (let b = 0; b < requests.length; b++) {
          const { past, tree } = requests[b];
          tree.forEach((_, i) => {
            const ref = referenceForward(fx, [...past, ...pathTo(tree, i).map((a) => tree[a].token)], window);
            expect(maxRowDiff(results[b][i], 0, ref[ref.length - 1])).toBeLessThan(1e-4);
          });
          // Keep the path to the last node, then decode one more token.
          const kept = pathTo(tree, tree.length - 1);
          session.commit(slots[b], kept);
          expect(session.committedLength(slots[b])).toBe(past.length + kept.length);
        }
        const after = await session.forward(slots.map((slot) => ({ slot, tokens: [42], parents: [-1] })), { logitsRows: slots.map((_, b) => b) });
        for (let b = 0; b < requests.length; b++) {
          const { past, tree } = requests[b];
          const seq = [...past, ...pathTo(tree, tree.length - 1).map((a) => tree[a].token), 42];
          const ref = referenceForward(fx, seq, window);
          expect(maxRowDiff(after.logits!, b, ref[ref.length - 1])).toBeLessThan(1e-4);
        }
      } finally {
        for (const s of slots) session.freeSlot(s);
      }
    }),
    { numRuns, seed: 20261129 },
  );
}
