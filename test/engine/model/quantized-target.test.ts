// Weight-only quantised targets: the 4-bit block layout MatMulNBits reads, a quantised target's
// logits close to float32's (closer at 8 bits than at 4), and speculative runs on a quantised
// target emitting exactly what plain decoding of that same quantised target emits.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { quantizeBlocks, QUANT_BLOCK } from '../../../src/engine/model/graph-builder.js';
import { loadModel, type OrtModelSession } from '../../../src/engine/model/index.js';
import { createPolicy } from '../../../src/engine/policy/index.js';
import type { RunSummary } from '../../../src/engine/runner.js';
import type { WeightPrecision } from '../../../src/shared/config.js';
import { expectSameAsAr } from '../fixtures/lossless.js';
import { randomPrompts, runGreedy, type FixturePair } from '../fixtures/pair.js';
import { writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';

/** The code of input `c` of row `r`, read as the operator's spec lays 4-bit blocks out: earlier input in the low nibble. */
function code4(packed: Uint8Array, blocks: number, r: number, c: number): number {
  const byte = packed[(r * blocks + Math.floor(c / QUANT_BLOCK)) * (QUANT_BLOCK / 2) + Math.floor((c % QUANT_BLOCK) / 2)];
  return c % 2 === 0 ? byte & 0x0f : byte >> 4;
}

describe('quantizeBlocks, 4 bits', () => {
  test('packs a known block exactly: two codes per byte, the earlier input in the low nibble, zero point 8', () => {
    // Block 0: −3.5, −3, …, 3.5 (steps of the scale 0.5, codes 1…15) then 0.5 · (i − 15); the
    // second block holds 8 inputs and is padded with the zero point.
    const cols = 40;
    const w = Float32Array.from({ length: cols }, (_, i) => (i < 15 ? 0.5 * (i - 7) : i < 32 ? 0.25 * (i - 24) : i - 36));
    const { packed, scales, blocks, bits } = quantizeBlocks(w, 1, cols, 4);
    expect([blocks, bits, packed.length]).toEqual([2, 4, 2 * 16]);
    // Block 0's largest magnitude is 3.5 → scale 3.5 / 7; block 1's is 4 (i = 32) → 4 / 7.
    expect(scales[0]).toBeCloseTo(0.5, 7);
    expect(scales[1]).toBeCloseTo(4 / 7, 7);
    // −3.5 → code 1 and −3 → code 2 share the first byte: 0x21 (0x12 would be the nibbles swapped).
    expect(packed[0]).toBe(0x21);
    expect(packed[1]).toBe(0x43);
    // Block 1 after its 8 inputs: zero weights, code 8 in both nibbles.
    for (let j = 4; j < 16; j++) expect(packed[16 + j]).toBe(0x88);
    // Every weight of block 0 that is a whole number of steps comes back exactly.
    for (let c = 0; c < 15; c++) expect((code4(packed, blocks, 0, c) - 8) * scales[0]).toBe(w[c]);
  });

  test('round-trips random rows to within half a step of their block scale', () => {
    const rows = 3;
    const cols = 72; // two full blocks and one of 8
    const w = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 1.3) * (1 + (i % 7)));
    const { packed, scales, blocks } = quantizeBlocks(w, rows, cols, 4);
    expect(blocks).toBe(3);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const scale = scales[r * blocks + Math.floor(c / QUANT_BLOCK)];
        const code = code4(packed, blocks, r, c);
        expect(code).toBeGreaterThanOrEqual(1);
        expect(code).toBeLessThanOrEqual(15);
        expect(Math.abs((code - 8) * scale - w[r * cols + c])).toBeLessThanOrEqual(scale / 2 + 1e-6);
      }
    }
  });
});

describe('a quantised target', () => {
  const tmp = tempDir('echo-quant-target-');
  const dir = join(tmp.path, 'model');
  const cacheDir = join(tmp.path, 'cache');
  const workload = randomPrompts(8, 21);
  const sessions = new Map<WeightPrecision, OrtModelSession>();
  let draft: OrtModelSession;

  beforeAll(async () => {
    writeFixtureModel(dir, { seed: 11, hiddenSize: 64, numLayers: 2 });
    for (const precision of ['float32', 'int8', 'int4'] as const) {
      sessions.set(precision, await loadModel(dir, { slots: 5, maxLength: 320, cacheDir, threads: 1, precision }));
    }
    // The draft is the same weights in float32: it agrees with a quantised target often, not always.
    draft = await loadModel(dir, { slots: 5, maxLength: 320, cacheDir, threads: 1 });
  });
  afterAll(async () => {
    await Promise.all([...sessions.values(), draft].filter(Boolean).map((s) => s.release()));
    tmp.cleanup();
  });

  async function lastLogits(session: OrtModelSession, prompt: number[]): Promise<Float32Array> {
    const slot = session.allocSlot();
    try {
      const out = await session.forward([{ slot, tokens: prompt, parents: prompt.map((_, i) => i - 1) }], { logitsRows: [prompt.length - 1] });
      return out.logits!.slice();
    } finally {
      session.freeSlot(slot);
    }
  }

  test('its logits stay within a bound of float32’s, tighter at 8 bits than at 4', async () => {
    const worst: Record<string, number> = { int8: 0, int4: 0 };
    for (const { promptTokens } of workload) {
      const exact = await lastLogits(sessions.get('float32')!, promptTokens);
      let span = 0;
      for (const x of exact) span = Math.max(span, Math.abs(x));
      for (const precision of ['int8', 'int4'] as const) {
        const got = await lastLogits(sessions.get(precision)!, promptTokens);
        let err = 0;
        for (let i = 0; i < exact.length; i++) err = Math.max(err, Math.abs(got[i] - exact[i]));
        worst[precision] = Math.max(worst[precision], err / span);
      }
    }
    expect(sessions.get('int4')!.info.precision).toBe('int4');
    expect(worst.int8).toBeGreaterThan(0);
    expect(worst.int8).toBeLessThan(0.03);
    expect(worst.int4).toBeLessThan(0.3);
    expect(worst.int4).toBeGreaterThan(2 * worst.int8);
  });

  describe.each(['int8', 'int4'] as const)('%s target', (precision) => {
    let pair: FixturePair;
    let reference: RunSummary;
    beforeAll(async () => {
      pair = { target: sessions.get(precision)!, draft, targetDir: dir, draftDir: dir, release: async () => {} };
      reference = await runGreedy(pair, createPolicy('ar', { batch: 4, kmax: 4 }), { batch: 4, kmax: 4, maxNewTokens: 16 }, workload);
    });

    test.each(['echo', 'chain', 'static'])('%s emits exactly the tokens of ar on the same quantised target', async (policy) => {
      const shape = { batch: 4, kmax: 40, maxNewTokens: 16 };
      let accepted = 0;
      const run = await runGreedy(pair, createPolicy(policy, shape), shape, workload, (e) => {
        for (const r of e.requests) accepted += r.accepted.length;
      });
      await expectSameAsAr(`${policy} on an ${precision} target`, run, reference, workload, pair.target);
      // The float32 draft is accepted often: verification on the quantised target decided tokens.
      expect(accepted).toBeGreaterThan(0);
    });
  });
});
