// Telling float ties of the target from real differences between two greedy outputs, on real
// fixture models: one whose output head scores every token alike (every position is a tie) and
// an ordinary random one (its top two logits are well apart at the position checked).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../../../src/engine/model/loader.js';
import type { ModelSession } from '../../../src/engine/model/types.js';
import { explainDifferences, firstDifference, TIE_GAP, topTwoGap } from '../../../src/engine/verify/ties.js';
import { tempDir } from '../model/helpers.js';
import { writeFixtureModel, writeSafetensors } from '../model/fixtures.js';

const tmp = tempDir('echo-ties-');
let random: ModelSession;
let flat: ModelSession;

/** Greedy tokens of `session` after `prompt`, one full forward per token. */
async function greedy(session: ModelSession, prompt: number[], count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const context = [...prompt, ...out];
    const slot = session.allocSlot();
    const { logits } = await session.forward([{ slot, tokens: context, parents: context.map((_, j) => j - 1) }], { logitsRows: [context.length - 1] });
    session.freeSlot(slot);
    let best = 0;
    for (let v = 1; v < logits!.length; v++) if (logits![v] > logits![best]) best = v;
    out.push(best);
  }
  return out;
}

beforeAll(async () => {
  const options = { seed: 3, hiddenSize: 32, numLayers: 1, tieWordEmbeddings: false };
  writeFixtureModel(join(tmp.path, 'random'), options);
  const model = writeFixtureModel(join(tmp.path, 'flat'), options);
  // Every row of lm_head the same: the target scores all tokens alike at every position.
  const entries = [...model.tensors].map(([name, t]) => {
    const values = Float32Array.from(t.data);
    if (name === 'lm_head.weight') for (let r = 1; r < t.shape[0]; r++) values.copyWithin(r * t.shape[1], 0, t.shape[1]);
    return { name, shape: t.shape, bytes: new Uint8Array(values.buffer), dtype: 'float32' as const };
  });
  writeSafetensors(join(tmp.path, 'flat', 'model.safetensors'), entries);
  const load = (name: string) => loadModel(join(tmp.path, name), { slots: 2, maxLength: 32, threads: 1, cacheDir: join(tmp.path, 'cache') });
  [random, flat] = await Promise.all([load('random'), load('flat')]);
});
afterAll(async () => {
  await random?.release();
  await flat?.release();
  tmp.cleanup();
});

describe('float ties against real differences', () => {
  const prompts = [[1, 5, 9], [2, 4]];

  it('finds the first differing position, a missing token included', () => {
    expect(firstDifference([1, 2, 3], [1, 2, 3])).toBe(-1);
    expect(firstDifference([1, 2, 3], [1, 7, 3])).toBe(1);
    expect(firstDifference([1, 2], [1, 2, 3])).toBe(2);
  });

  it('calls a difference where every token scores alike a tie', async () => {
    const reference = [await greedy(flat, prompts[0], 4), await greedy(flat, prompts[1], 4)];
    const other = reference.map((tokens, i) => (i === 1 ? tokens.map((t, j) => (j === 2 ? t + 1 : t)) : tokens));
    const explained = await explainDifferences(flat, prompts, reference, other);
    expect(explained).toEqual({ first: { request: 1, position: 2, gap: 0, tie: true }, requests: 1 });
  });

  it('calls a difference where the target preferred the reference token a real one', async () => {
    const reference = [await greedy(random, prompts[0], 4), await greedy(random, prompts[1], 4)];
    const other = reference.map((tokens) => tokens.map((t, j) => (j === 1 ? t + 1 : t)));
    const explained = await explainDifferences(random, prompts, reference, other);
    const gap = await topTwoGap(random, [...prompts[0], reference[0][0]]);
    expect(gap).toBeGreaterThan(TIE_GAP);
    expect(explained).toEqual({ first: { request: 0, position: 1, gap, tie: false }, requests: 2 });
    expect(await explainDifferences(random, prompts, reference, reference)).toBeNull();
  });
});
