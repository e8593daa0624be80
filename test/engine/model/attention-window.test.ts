// A model's own sliding window (Mistral) and a window given at load: what the session's mask lets a
// query see matches the reference forward under the same rule, and what it cannot do is refused.
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadModel } from '../../../src/engine/model/index.js';
import { pastPlan } from '../../../src/engine/model/batch-plan.js';
import { writeFixtureModel } from './fixtures.js';
import { maxRowDiff, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const tokens = Array.from({ length: 21 }, (_, i) => (i * 53 + 7) % 290);

test("a Mistral model's sliding window holds past maxLength: each token sees itself and the 4 before it", async () => {
  const fx = writeFixtureModel(join(tmp.path, 'mistral'), { architecture: 'mistral', hiddenSize: 32, slidingWindow: 5, seed: 9 });
  const session = await loadModel(fx.dir, { slots: 1, maxLength: 40, cacheDir: join(tmp.path, 'cache') });
  try {
    expect(session.window).toEqual({ sink: 0, recent: 5 });
    const slot = session.allocSlot();
    // A 20-token prefill, committed, then the last token decoded over that past.
    const prefix = tokens.slice(0, 20);
    await session.forward([{ slot, tokens: prefix, parents: prefix.map((_, i) => i - 1) }], {});
    session.commit(slot, prefix.map((_, i) => i));
    const out = await session.forward([{ slot, tokens: [tokens[20]], parents: [-1] }], { logitsRows: [0] });
    const windowed = referenceForward(fx, tokens, { sink: 0, recent: 5 });
    const whole = referenceForward(fx, tokens);
    expect(maxRowDiff(out.logits!, 0, windowed[20])).toBeLessThan(1e-4);
    expect(maxRowDiff(out.logits!, 0, whole[20])).toBeGreaterThan(1e-3);
  } finally {
    await session.release();
  }
});

test('a window set between requests applies to the next ones, and cannot change under a request in flight', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'switch'), { hiddenSize: 32, seed: 4 });
  const session = await loadModel(fx.dir, { slots: 1, maxLength: 40, cacheDir: join(tmp.path, 'cache') });
  try {
    for (const window of [{ sink: 2, recent: 3 }, null, { sink: 0, recent: 8 }]) {
      session.setWindow(window);
      expect(session.window).toEqual(window);
      const slot = session.allocSlot();
      const prefix = tokens.slice(0, 20);
      await session.forward([{ slot, tokens: prefix, parents: prefix.map((_, i) => i - 1) }], {});
      session.commit(slot, prefix.map((_, i) => i));
      // Past the first layer a stored row depends on the window it was computed under.
      expect(() => session.setWindow(null)).toThrow(/1 slot\(s\) in use/);
      const out = await session.forward([{ slot, tokens: [tokens[20]], parents: [-1] }], { logitsRows: [0] });
      session.freeSlot(slot);
      expect(maxRowDiff(out.logits!, 0, referenceForward(fx, tokens, window ?? undefined)[20])).toBeLessThan(1e-4);
    }
    expect(() => session.setWindow({ sink: -1, recent: 4 })).toThrow(/sink must be an integer ≥ 0/);
  } finally {
    await session.release();
  }
});

test("Qwen2's per-layer sliding windows are refused past the window, and a bad window at load is named", async () => {
  const fx = writeFixtureModel(join(tmp.path, 'qwen2'), { architecture: 'qwen2', hiddenSize: 32, useSlidingWindow: true, slidingWindow: 16 });
  await expect(loadModel(fx.dir, { slots: 1, maxLength: 40, cacheDir: join(tmp.path, 'cache') })).rejects.toThrow(/per-layer sliding windows are not implemented, load with maxLength <= 16/);
  const llama = writeFixtureModel(join(tmp.path, 'llama'), { hiddenSize: 32 });
  await expect(loadModel(llama.dir, { slots: 1, maxLength: 40, cacheDir: join(tmp.path, 'cache'), window: { sink: 2, recent: 0 } })).rejects.toThrow(/recent an integer ≥ 1, got 2 and 0/);
});

test('a past is gathered as its sink blocks and the blocks its window reaches, the gap skipped', () => {
  // 8-row blocks. 100 committed rows, 3 scratch: the window of 20 reaches back to row 81 (block 10).
  expect(pastPlan(100, 3, { sink: 4, recent: 20 })).toEqual({ blocks: 1 + 13 - 10, sinkBlocks: 1, gapBlocks: 9 });
  // No window, or a window that reaches the sinks: every block.
  expect(pastPlan(100, 3, null)).toEqual({ blocks: 13, sinkBlocks: 13, gapBlocks: 0 });
  expect(pastPlan(20, 0, { sink: 4, recent: 16 })).toEqual({ blocks: 3, sinkBlocks: 3, gapBlocks: 0 });
});
