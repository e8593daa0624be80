// Weight-only quantised targets: the 4-bit block layout MatMulNBits reads, a quantised target's
// logits close to float32's (closer at 8 bits than at 4), and speculative runs on a quantised
// target emitting exactly what plain decoding of that same quantised target emits.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as ort from 'onnxruntime-node';
import { GraphBuilder, projection, quantizeBlocks, QUANT_BLOCK, valueInfo, zeroPointBytes, type QuantizedBlocks } from '../../../src/engine/model/graph-builder.js';
import { writeGraph } from '../../../src/engine/model/graph-cache.js';
import { DataType } from '../../../src/engine/model/onnx-proto.js';
import { loadModel, type OrtModelSession } from '../../../src/engine/model/index.js';
import { createPolicy } from '../../../src/engine/policy/index.js';
import type { RunSummary } from '../../../src/engine/run/runner.js';
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

/** The zero point of block `b` of row `r`: packed like the codes, [rows, ⌈blocks / 2⌉], the earlier block in the low nibble. */
function zero4(zeroPoints: Uint8Array, blocks: number, r: number, b: number): number {
  const byte = zeroPoints[r * zeroPointBytes(blocks) + Math.floor(b / 2)];
  return b % 2 === 0 ? byte & 0x0f : byte >> 4;
}

/** Every weight as the operator reads it back: (code − zero point) · scale. */
function dequantize4({ packed, scales, zeroPoints, blocks }: QuantizedBlocks, rows: number, cols: number): Float32Array {
  return Float32Array.from({ length: rows * cols }, (_, i) => {
    const [r, c] = [Math.floor(i / cols), i % cols];
    const b = Math.floor(c / QUANT_BLOCK);
    return (code4(packed, blocks, r, c) - zero4(zeroPoints!, blocks, r, b)) * scales[r * blocks + b];
  });
}

describe('quantizeBlocks, 4 bits', () => {
  test('packs known blocks exactly: asymmetric scale and zero point per block, two codes and two zero points per byte, low nibble first', () => {
    // Row 0 has three blocks, so its zero points take two bytes, the second's high nibble unused:
    //   block 0: 0.5 · ((i mod 16) − 3), i.e. −1.5 … 6 in steps of 0.5 → scale 7.5 / 15 = 0.5, zero point 3, codes 0…15;
    //   block 1: all positive, 0.2 · ((j mod 15) + 1), i.e. 0.2 … 3 → the range starts at 0: scale 3 / 15, zero point 0,
    //            codes 1…15 (symmetric, they would have used only 8…15 at a step of 3 / 7);
    //   block 2: 16 inputs, all −2, padded to 32 → range −2 … 0: scale 2 / 15, zero point 15, codes 0, padding 15 (weight 0).
    // Row 1 is all zeros (max = min): scale 1, zero point 0, codes 0.
    const cols = 80;
    const w = new Float32Array(2 * cols);
    for (let i = 0; i < 32; i++) w[i] = 0.5 * ((i % 16) - 3);
    for (let j = 0; j < 32; j++) w[32 + j] = 0.2 * ((j % 15) + 1);
    for (let k = 64; k < 80; k++) w[k] = -2;
    const q = quantizeBlocks(w, 2, cols, 4);
    const { packed, scales, zeroPoints, blocks, bits } = q;
    expect([blocks, bits, packed.length, zeroPoints!.length]).toEqual([3, 4, 2 * 3 * 16, 2 * 2]);
    expect(scales[0]).toBe(0.5);
    expect(scales[1]).toBe(Math.fround(3 / 15));
    expect(scales[2]).toBe(Math.fround(2 / 15));
    expect([scales[3], scales[4], scales[5]]).toEqual([1, 1, 1]);
    // Zero points 3, 0 | 15, unused: 0x03, 0x0f; row 1: all 0.
    expect([...zeroPoints!]).toEqual([0x03, 0x0f, 0x00, 0x00]);
    // Block 0: codes 0, 1 share the first byte as 0x10 (0x01 would be the nibbles swapped), …, 14, 15 → 0xfe.
    expect([...packed.subarray(0, 16)]).toEqual([0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe]);
    expect([...packed.subarray(16, 20)]).toEqual([0x21, 0x43, 0x65, 0x87]);
    // Block 2: code 0 for its 16 inputs, the zero point 15 in the padding.
    expect([...packed.subarray(32, 48)]).toEqual([...Array(8).fill(0x00), ...Array(8).fill(0xff)]);
    expect(packed.subarray(48).every((b) => b === 0)).toBe(true);
    // Blocks 0 and 1 come back to float32 rounding, and the constant block to within one rounding of its scale.
    const back = dequantize4(q, 2, cols);
    for (let c = 0; c < 64; c++) expect(back[c]).toBeCloseTo(w[c], 6);
    for (let c = 64; c < 80; c++) expect(back[c]).toBeCloseTo(-2, 6);
    expect(back.subarray(cols).every((x) => x === 0)).toBe(true);
  });

  test('an even number of blocks fills every zero-point byte', () => {
    const w = Float32Array.from({ length: 64 }, (_, i) => (i < 32 ? i - 8 : -(i - 32)));
    const { zeroPoints, scales } = quantizeBlocks(w, 1, 64, 4);
    // Block 0: −8 … 23, scale 31 / 15, zero point round(8 / (31 / 15)) = 4; block 1: −31 … 0, zero point 15.
    expect(scales[0]).toBe(Math.fround(31 / 15));
    expect([...zeroPoints!]).toEqual([0xf4]);
  });

  test('round-trips random rows to within half a step of their block scale, the extremes included', () => {
    const rows = 3;
    const cols = 72; // two full blocks and one of 8
    const w = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 1.3) * (1 + (i % 7)) + (i % 3));
    const q = quantizeBlocks(w, rows, cols, 4);
    expect(q.blocks).toBe(3);
    const back = dequantize4(q, rows, cols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const scale = q.scales[r * q.blocks + Math.floor(c / QUANT_BLOCK)];
        expect(Math.abs(back[r * cols + c] - w[r * cols + c])).toBeLessThanOrEqual(scale / 2 + 1e-6);
      }
    }
  });

  test('onnxruntime reads the layout as written: one MatMulNBits over three blocks per row equals x · dequantized(W)ᵀ', async () => {
    const tmp = tempDir('echo-int4-op-');
    try {
      const [N, K, M] = [24, 80, 5];
      const w = Float32Array.from({ length: N * K }, (_, i) => Math.sin(i * 0.7) * (1 + (i % 5)) + (i % 4) * 0.3);
      const x = Float32Array.from({ length: M * K }, (_, i) => Math.cos(i * 1.1));
      const g = new GraphBuilder();
      const y = projection(g, 'int4', 'w', w, N, K)('x');
      const path = join(tmp.path, 'op.onnx');
      const graph = { nodes: g.nodes, initializers: g.initializers, inputs: [valueInfo('x', DataType.FLOAT, ['M', K])], outputs: [valueInfo(y, DataType.FLOAT, ['M', N])] };
      writeGraph(graph, path, {});
      const session = await ort.InferenceSession.create(path);
      const got = (await session.run({ x: new ort.Tensor('float32', x, [M, K]) }))[y].data as Float32Array;
      await session.release();
      const wq = dequantize4(quantizeBlocks(w, N, K, 4), N, K);
      // accuracy_level 4 rounds x to 8 bits per row and block of 32, symmetric (scale maxabs / 127): do the same.
      const xq = x.slice();
      for (let m = 0; m < M; m++) {
        for (let from = m * K; from < (m + 1) * K; from += QUANT_BLOCK) {
          const block = xq.subarray(from, Math.min(from + QUANT_BLOCK, (m + 1) * K));
          const s = block.reduce((a, v) => Math.max(a, Math.abs(v)), 0) / 127;
          block.forEach((v, i) => (block[i] = Math.round(v / s) * s));
        }
      }
      let err = 0;
      let span = 0;
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let want = 0;
          for (let k = 0; k < K; k++) want += xq[m * K + k] * wq[n * K + k];
          err = Math.max(err, Math.abs(got[m * N + n] - want));
          span = Math.max(span, Math.abs(want));
        }
      }
      // Left: float summation order. A misread nibble or zero point is off by whole steps of a block's scale.
      expect(err).toBeLessThan(1e-3 * span);
    } finally {
      tmp.cleanup();
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
    // 64 prompts, so the worst case is not one prompt's luck. Relative to the logits' range:
    // the largest error of any logit (worst over prompts) and the root mean square error (mean
    // over prompts). The int4 bounds are below both of what symmetric blocks (scale maxabs / 7) give here.
    const prompts = randomPrompts(64, 21);
    const worst: Record<string, number> = { int8: 0, int4: 0 };
    let int4Rms = 0;
    for (const { promptTokens } of prompts) {
      const exact = await lastLogits(sessions.get('float32')!, promptTokens);
      let span = 0;
      let norm = 0;
      for (const x of exact) {
        span = Math.max(span, Math.abs(x));
        norm += x * x;
      }
      for (const precision of ['int8', 'int4'] as const) {
        const got = await lastLogits(sessions.get(precision)!, promptTokens);
        let err = 0;
        let sq = 0;
        for (let i = 0; i < exact.length; i++) {
          err = Math.max(err, Math.abs(got[i] - exact[i]));
          sq += (got[i] - exact[i]) ** 2;
        }
        worst[precision] = Math.max(worst[precision], err / span);
        if (precision === 'int4') int4Rms += Math.sqrt(sq / norm) / prompts.length;
      }
    }
    expect(sessions.get('int4')!.info.precision).toBe('int4');
    expect(worst.int8).toBeGreaterThan(0);
    expect(worst.int8).toBeLessThan(0.035);
    expect(worst.int4).toBeLessThan(0.28);
    expect(int4Rms).toBeLessThan(0.17);
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
