// The 8-bit weights a draft may run on (linear layers and head): its logits stay close to the
// float32 graph's, a row's output does not depend on the rows packed with it, and its graph lives
// in the cache beside the float32 graph of the same folder instead of pruning it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { quantizeBlocks, QUANT_BLOCK as Q8_BLOCK } from '../../../src/engine/model/graph-builder.js';
import { listGraphCache } from '../../../src/engine/model/graph-cache.js';
import { loadModel, openModelFolder, type OrtModelSession } from '../../../src/engine/model/index.js';
import { writeFixtureModel } from './fixtures.js';
import { argmax, logSoftmax, prefillLogits, tempDir } from './helpers.js';

const tmp = tempDir('echo-lm-head-');
afterAll(() => tmp.cleanup());

// Hidden 80: two full blocks of 32 and a zero-padded one of 16.
const fx = writeFixtureModel(join(tmp.path, 'model'), { hiddenSize: 80, numHeads: 4, numKvHeads: 2, tieWordEmbeddings: true, seed: 3 });
const PROMPTS = [
  [283, 40, 260, 101, 32, 119, 111, 114],
  [72, 101, 108, 108, 111],
  [50, 51, 52, 53, 54, 55, 56],
];
describe('quantizeBlocks, 8 bits', () => {
  test('round-trips every weight to within half a step of its block scale, padding with the zero point', () => {
    const cols = 40; // one full block, one of 8 padded to 32
    const w = Float32Array.from({ length: 3 * cols }, (_, i) => Math.sin(i * 1.7) * (1 + (i % 5)));
    const { packed: q, scales, blocks } = quantizeBlocks(w, 3, cols, 8);
    expect(blocks).toBe(2);
    for (let r = 0; r < 3; r++) {
      for (let c = 0; c < cols; c++) {
        const b = Math.floor(c / Q8_BLOCK);
        const scale = scales[r * blocks + b];
        const back = (q[(r * blocks + b) * Q8_BLOCK + (c % Q8_BLOCK)] - 128) * scale;
        expect(Math.abs(back - w[r * cols + c])).toBeLessThanOrEqual(scale / 2 + 1e-7);
      }
      for (let c = cols - Q8_BLOCK; c < Q8_BLOCK; c++) expect(q[(r * blocks + 1) * Q8_BLOCK + c]).toBe(128);
    }
  });
});

describe('int8 weights', () => {
  test.each([
    ['llama, tied head', fx.dir],
    ['qwen2: q/k/v biases, untied head', writeFixtureModel(join(tmp.path, 'qwen2'), { architecture: 'qwen2', hiddenSize: 64, seed: 5 }).dir],
  ])('%s: logits stay within 3%% of the float32 range, and the argmax agrees except at near-ties', async (_name, dir) => {
    const cacheDir = join(tmp.path, 'cache-close');
    const exact = await loadModel(dir, { slots: 3, maxLength: 32, cacheDir });
    const int8 = await loadModel(dir, { slots: 3, maxLength: 32, cacheDir, precision: 'int8' });
    expect(int8.info.precision).toBe('int8');
    expect(exact.info.precision).toBe('float32');
    const [a, b] = [await prefillLogits(exact, PROMPTS), await prefillLogits(int8, PROMPTS)];
    let agreements = 0;
    for (let row = 0; row < a.length; row++) {
      let span = 0;
      let err = 0;
      for (let i = 0; i < a[row].length; i++) {
        span = Math.max(span, Math.abs(a[row][i]));
        err = Math.max(err, Math.abs(a[row][i] - b[row][i]));
      }
      expect(err).toBeGreaterThan(0); // it is a different head, not the float32 one again
      expect(err).toBeLessThan(0.03 * span);
      const top = argmax(a[row]);
      if (argmax(b[row]) === top) agreements++;
      else {
        // A flip is allowed only where float32's top two are closer than the quantization error.
        const sorted = [...logSoftmax(a[row])].sort((x, y) => y - x);
        expect(sorted[0] - sorted[1]).toBeLessThan(2 * err);
      }
    }
    expect(agreements).toBeGreaterThan(a.length * 0.8);
    await Promise.all([exact.release(), int8.release()]);
  });

  test("a row's top-k is the same alone and packed with other requests", async () => {
    const session = await loadModel(fx.dir, { slots: 3, maxLength: 32, cacheDir: join(tmp.path, 'cache-pack'), precision: 'int8' });
    const packed = await prefillLogits(session, PROMPTS);
    let row = 0;
    for (const p of PROMPTS) {
      const alone = await prefillLogits(session, [p]);
      for (let i = 0; i < p.length; i++, row++) {
        // Each row's activations are quantized on their own, so packing changes nothing beyond
        // float summation order in the layers below the head.
        let diff = 0;
        for (let v = 0; v < alone[i].length; v++) diff = Math.max(diff, Math.abs(alone[i][v] - packed[row][v]));
        expect(diff).toBeLessThan(1e-3);
        expect(argmax(alone[i])).toBe(argmax(packed[row]));
      }
    }
    await session.release();
  });

  test('float32 and int8 graphs of one folder are cached side by side, each recorded in its sidecar', async () => {
    const cacheDir = join(tmp.path, 'cache-both');
    const f32Path = openModelFolder(fx.dir, cacheDir).graphPath;
    const int8Path = openModelFolder(fx.dir, cacheDir, 'int8').graphPath;
    expect(int8Path).not.toBe(f32Path);
    await (await loadModel(fx.dir, { slots: 1, maxLength: 16, cacheDir })).release();
    await (await loadModel(fx.dir, { slots: 1, maxLength: 16, cacheDir, precision: 'int8' })).release();
    const entries = listGraphCache(cacheDir);
    expect(entries.map((e) => [e.path, e.precision]).sort()).toEqual([[f32Path, 'float32'], [int8Path, 'int8']].sort());
    expect(JSON.parse(readFileSync(int8Path.replace(/\.onnx$/, '.json'), 'utf8')).precision).toBe('int8');
    // Loading each again reuses its graph: neither build pruned the other.
    const notes: string[] = [];
    await (await loadModel(fx.dir, { slots: 1, maxLength: 16, cacheDir, onMessage: (l) => notes.push(l) })).release();
    await (await loadModel(fx.dir, { slots: 1, maxLength: 16, cacheDir, precision: 'int8', onMessage: (l) => notes.push(l) })).release();
    expect(notes.filter((l) => l.startsWith('reused cached graph'))).toHaveLength(2);
  });

  test('an unknown head precision is a load error', async () => {
    await expect(loadModel(fx.dir, { cacheDir: join(tmp.path, 'cache-bad'), precision: 'int2' as never })).rejects.toThrow(/precision must be float32, int8, int4, got int2/);
  });
});
