// Telling float ties of the target from real differences between two greedy outputs, on real
// fixture models: one whose output head scores every token alike (every position is a tie), an
// ordinary random one (its top two logits are well apart at the position checked), and one whose
// head scores two tokens alike (a tie exactly where one of them is the target's best, and clear
// preferences elsewhere: both kinds of difference across the requests of one target).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../../../src/engine/model/loader.js';
import type { ModelSession } from '../../../src/engine/model/types.js';
import { explainDifferences, firstDifference, TIE_GAP, topTwoGap } from '../../../src/engine/verify/ties.js';
import { tempDir } from '../model/helpers.js';
import { writeFixtureModel, writeSafetensors, type FixtureModel } from '../model/fixtures.js';

const tmp = tempDir('echo-ties-');
let random: ModelSession;
let flat: ModelSession;
let twin: ModelSession;

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

const prompts = [[1, 5, 9], [2, 4]];

/** The random fixture with its own lm_head, rows `to` set to row `from` (that token's scores). */
function writeHeadVariant(name: string, model: FixtureModel, from: number, to: readonly number[]): void {
  writeFixtureModel(join(tmp.path, name), options);
  const entries = [...model.tensors].map(([tensor, t]) => {
    const values = Float32Array.from(t.data);
    if (tensor === 'lm_head.weight') for (const r of to) values.copyWithin(r * t.shape[1], from * t.shape[1], (from + 1) * t.shape[1]);
    return { name: tensor, shape: t.shape, bytes: new Uint8Array(values.buffer), dtype: 'float32' as const };
  });
  writeSafetensors(join(tmp.path, name, 'model.safetensors'), entries);
}

const options = { seed: 3, hiddenSize: 32, numLayers: 1, tieWordEmbeddings: false };
const load = (name: string) => loadModel(join(tmp.path, name), { slots: 2, maxLength: 32, threads: 1, cacheDir: join(tmp.path, 'cache') });
/** Token A, the random target's choice after the first prompt and its first output token, and its twin B. */
let twins: [number, number];

beforeAll(async () => {
  const model = writeFixtureModel(join(tmp.path, 'random'), options);
  random = await load('random');
  // Every row of lm_head the same: the target scores all tokens alike at every position.
  writeHeadVariant('flat', model, 0, Array.from({ length: model.vocabSize - 1 }, (_, r) => r + 1));
  // Token B scored as token A: a tie wherever A is the target's best, elsewhere the same choices as before.
  const a = (await greedy(random, prompts[0], 2))[1];
  twins = [a, (a + 1) % model.vocabSize];
  writeHeadVariant('twin', model, twins[0], [twins[1]]);
  [flat, twin] = await Promise.all([load('flat'), load('twin')]);
});
afterAll(async () => {
  await random?.release();
  await flat?.release();
  await twin?.release();
  tmp.cleanup();
});

describe('float ties against real differences', () => {

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

  it('reports a real difference ahead of a tie that an earlier request met', async () => {
    const reference = [await greedy(twin, prompts[0], 4), await greedy(twin, prompts[1], 4)];
    const gaps = async (i: number) => {
      const found: number[] = [];
      for (let p = 0; p < reference[i].length; p++) found.push(await topTwoGap(twin, [...prompts[i], ...reference[i].slice(0, p)]));
      return found;
    };
    // The first request's output meets the twins' tie; the second's first token was a clear choice.
    const tiePosition = (await gaps(0)).findIndex((gap) => gap < TIE_GAP);
    expect(tiePosition).toBeGreaterThanOrEqual(0);
    expect(twins).toContain(reference[0][tiePosition]);
    const [realGap] = await gaps(1);
    expect(realGap).toBeGreaterThan(TIE_GAP);
    // Each request parts at that position: the first taking the other twin, the second another token.
    const other = [
      reference[0].map((t, p) => (p === tiePosition ? (t === twins[0] ? twins[1] : twins[0]) : t)),
      reference[1].map((t, p) => (p === 0 ? (t + 1) % twin.info.vocabSize : t)),
    ];
    const explained = await explainDifferences(twin, prompts, reference, other);
    expect(explained).toEqual({ first: { request: 1, position: 0, gap: realGap, tie: false }, requests: 2 });
    // With only the tie left, the tie is what is reported.
    const onlyTie = await explainDifferences(twin, prompts, reference, [other[0], reference[1]]);
    expect(onlyTie).toMatchObject({ first: { request: 0, position: tiePosition, tie: true }, requests: 1 });
  });
});
