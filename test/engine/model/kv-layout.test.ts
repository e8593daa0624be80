// The KV buffer layout: one buffer per layer holding every slot's keys, then every slot's values
// (kv-store.ts), gathered by past_index blocks [key blocks, value blocks] (session.ts). Growing the
// slots moves the value half; a request in flight must read the same past after it.
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadModel, type OrtModelSession } from '../../../src/engine/model/index.js';
import { keyAndValueBlocks } from '../../../src/engine/model/session.js';
import { writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';

const tmp = tempDir('echo-kv-layout-');
afterAll(() => tmp.cleanup());

test('past_index gives each group its key blocks, then the same blocks of the value half', () => {
  const keys = Int32Array.from([3, 4, 0, 9, 10, 11]);
  expect([...keyAndValueBlocks(keys, 2, 3, 100)]).toEqual([3, 4, 0, 103, 104, 100, 9, 10, 11, 109, 110, 111]);
});

/**
 * Prefills `first` on one slot and decodes two tokens; between them another request takes a
 * second slot (after `between` runs). Returns the logits of the first request's last decode step.
 */
async function decodeAround(session: OrtModelSession, first: number[], second: number[], between: () => Promise<void>): Promise<Float32Array> {
  const a = session.allocSlot();
  await session.forward([{ slot: a, tokens: first, parents: first.map((_, i) => i - 1) }], {});
  session.commit(a, first.map((_, i) => i));
  const step = await session.forward([{ slot: a, tokens: [77], parents: [-1] }], { argmaxRows: [0] });
  session.commit(a, [0]);
  await between();
  const b = session.allocSlot();
  await session.forward([{ slot: b, tokens: second, parents: second.map((_, i) => i - 1) }], {});
  session.commit(b, second.map((_, i) => i));
  const out = await session.forward([{ slot: a, tokens: [step.argmax![0]], parents: [-1] }], { logitsRows: [0] });
  return out.logits!.slice();
}

test('a request in flight when the slots grow reads the same keys and values as without growing', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'model'), { architecture: 'llama' });
  const first = [283, 40, 260, 101, 32, 119, 111, 114, 50, 51, 52];
  const second = [90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102];
  const grown = await loadModel(fx.dir, { slots: 1, maxLength: 32, threads: 1, cacheDir: join(tmp.path, 'cache') });
  const fixed = await loadModel(fx.dir, { slots: 3, maxLength: 32, threads: 1, cacheDir: join(tmp.path, 'cache') });
  try {
    const afterGrowing = await decodeAround(grown, first, second, () => grown.growSlots(3));
    expect(grown.capacity).toBe(3);
    const withoutGrowing = await decodeAround(fixed, first, second, async () => {});
    expect(afterGrowing.findIndex((x, i) => x !== withoutGrowing[i]), 'first logit that differs').toBe(-1);
  } finally {
    await grown.release();
    await fixed.release();
  }
});
