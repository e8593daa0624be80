// The memory a folder takes at each precision, from its headers alone, and a load that cannot fit
// refused before anything is built, naming the precision that would fit. The large folder is an
// 8B Llama shape whose safetensors hold a header and no weights (sparse-folder.ts).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultMaxLength, folderMemory, loadModel, openModelFolder } from '../../../src/engine/model/loader.js';
import { machineMemoryBytes, memoryFitProblem, PREPACK_SHARE, PROCESS_BYTES, peakBytes } from '../../../src/engine/model/memory-estimate.js';
import { ModelLoadError } from '../../../src/engine/model/errors.js';
import { listGraphCache } from '../../../src/engine/model/graph-cache.js';
import { loadPair } from '../../../src/engine/pair.js';
import { writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';
import { llamaConfig, writeSparseModel, type SparseModel } from './sparse-folder.js';

const GiB = 2 ** 30;
const tmp = tempDir('echo-memory-');
afterAll(() => tmp.cleanup());

// Llama 3 8B's shape: every inner dimension a whole number of 32-input blocks.
const H = 4096;
const I = 14336;
const V = 128256;
const LAYERS = 32;
const KV_DIM = 8 * 128;
let big: SparseModel;
let draftDir: string;

beforeAll(() => {
  draftDir = writeFixtureModel(join(tmp.path, 'draft'), { seed: 4, hiddenSize: 32, numLayers: 1 }).dir;
  big = writeSparseModel(
    join(tmp.path, 'llama-8b'),
    llamaConfig({ hidden_size: H, intermediate_size: I, num_hidden_layers: LAYERS, num_attention_heads: 32, num_key_value_heads: 8, vocab_size: V, max_position_embeddings: 8192 }),
    draftDir,
  );
});

describe('the memory a folder takes', () => {
  test('weights as onnxruntime holds them at float32, int8 and int4, KV for the slots asked, and the first load’s build', () => {
    const folder = openModelFolder(big.dir, join(tmp.path, 'cache'));
    const [f32, int8, int4] = folderMemory(folder, 4, 1000);
    expect([f32.precision, int8.precision, int4.precision]).toEqual(['float32', 'int8', 'int4']);
    // Linear layers (q, k, v, o, gate, up, down) and the untied head are quantised; the embedding and the norms stay float32.
    const linear = LAYERS * (2 * H * H + 2 * KV_DIM * H + 3 * I * H) + V * H;
    const float32Only = V * H + LAYERS * 2 * H + H;
    expect(folder.info.parameters).toBe(linear + float32Only);
    expect(f32.weightBytes).toBe(4 * (linear + float32Only));
    expect(int8.weightBytes).toBe(4 * float32Only + (linear / 32) * (32 + 4)); // a byte per weight, a float32 scale per 32
    expect(int4.weightBytes).toBe(4 * float32Only + (linear / 32) * (16 + 4 + 0.5)); // two weights per byte, a 4-bit zero point per block
    // KV: 1000 rows round up to 1000 (whole blocks of 8); float32 keys and values of every layer.
    const kv = LAYERS * 2 * 4 * 1000 * KV_DIM * 4;
    for (const e of [f32, int8, int4]) {
      expect(e.kvBytes).toBe(kv);
      expect(e.runningBytes).toBeCloseTo(PROCESS_BYTES + e.weightBytes * (1 + PREPACK_SHARE) + kv, 0);
      // Streamed build: a few float32 copies of the largest matrix (the embedding, or the fused gate/up), far below the running model.
      expect(e.buildPeakBytes).toBe(PROCESS_BYTES + 3 * 4 * Math.max(V * H, 2 * I * H));
      expect(e.buildPeakBytes).toBeLessThan(e.runningBytes);
    }
    // In round numbers: 29.9 GiB of float32 weights, 9.8 in int8, 6.4 in int4 (the float32 embedding is 2 GiB of each).
    expect(f32.weightBytes / GiB).toBeCloseTo(29.9, 1);
    expect(int8.weightBytes / GiB).toBeCloseTo(9.8, 1);
    expect(int4.weightBytes / GiB).toBeCloseTo(6.4, 1);
  });

  test('a tied head costs nothing more in float32 and a quantised copy otherwise', () => {
    const tied = writeSparseModel(join(tmp.path, 'tied'), llamaConfig({ hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 1024, max_position_embeddings: 512, tie_word_embeddings: true }));
    const folder = openModelFolder(tied.dir, join(tmp.path, 'cache'));
    expect(folder.untiedHead).toBe(false);
    const [f32, int8] = folderMemory(folder, 1, 64);
    expect(f32.weightBytes).toBe(4 * folder.info.parameters);
    const linear = 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256);
    expect(int8.weightBytes).toBe(4 * (folder.info.parameters - linear) + ((linear + 1024 * 256) / 32) * 36);
    // Under 64 MiB of float32 weights the graph is built whole in memory and encoded: about three copies.
    expect(f32.buildPeakBytes).toBe(PROCESS_BYTES + 3 * f32.weightBytes);
    expect(defaultMaxLength(folder.config)).toBe(512);
  });

  test('int4 counts a zero point per block, two to a byte, a row with an odd number of blocks rounding up', () => {
    // Hidden 96: 3 blocks per row of q/k/v/o/gate/up and the head; intermediate 160: 5 per row of down.
    const odd = writeSparseModel(join(tmp.path, 'odd'), llamaConfig({ hidden_size: 96, intermediate_size: 160, num_hidden_layers: 1, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 512, max_position_embeddings: 256, tie_word_embeddings: true }));
    const folder = openModelFolder(odd.dir, join(tmp.path, 'cache'));
    const int4 = folderMemory(folder, 1, 64)[2];
    const kvDim = 2 * 24;
    // Rows of 3 blocks (2 zero-point bytes) and of 5 (3 bytes); each block 16 bytes of codes and a 4-byte scale.
    const rows3 = 96 + 2 * kvDim + 96 + 2 * 160 + 512;
    const rows5 = 96;
    const linear = rows3 * 96 + rows5 * 160;
    expect(int4.weightBytes).toBe(4 * (folder.info.parameters - linear + 512 * 96) + rows3 * (3 * 20 + 2) + rows5 * (5 * 20 + 3));
  });
});

describe('a load that cannot fit is refused before anything is built', () => {
  const options = (memoryBytes: number) => ({ slots: 4, maxLength: 1000, cacheDir: join(tmp.path, 'cache-load'), memoryBytes });

  test('naming the precision that would fit: int8 on 20 GiB, int4 on 12 GiB, none on 4 GiB', async () => {
    const refusal = async (memoryBytes: number, precision?: 'int8'): Promise<string> => {
      const err = await loadModel(big.dir, { ...options(memoryBytes), ...(precision ? { precision } : {}) }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ModelLoadError);
      const message = (err as Error).message;
      expect(message).not.toContain('\n');
      return message;
    };
    expect(await refusal(20 * GiB)).toMatch(/llama-8b: 4 KV slots of 1000 rows: needs about 40\.0 GiB \(model at float32: weights 29\.9 GiB \+ KV 1000 MiB;.*\), more than the 17\.0 GiB this machine allows \(85 % of 20\.0 GiB\): the model in int8 would fit, about 13\.9 GiB$/);
    expect(await refusal(12 * GiB)).toMatch(/more than the 10\.2 GiB .*: the model in int4 would fit, about 9\.5 GiB$/);
    expect(await refusal(12 * GiB, 'int8')).toMatch(/model at int8: .*the model in int4 would fit/);
    expect(await refusal(4 * GiB)).toMatch(/no precision fits; lower the batch or the context, or use a machine with more memory$/);
    // No graph was built for it: the refusal came first.
    expect(listGraphCache(join(tmp.path, 'cache-load'))).toEqual([]);
  });

  test('a pair is refused as a whole, naming the target precision flag that would make it fit', async () => {
    const pair = loadPair(draftDir, big.dir, { slots: 4, maxLength: 1000, cacheDir: join(tmp.path, 'cache-pair'), memoryBytes: 20 * GiB });
    await expect(pair).rejects.toThrow(/^4 KV slots of 1000 rows: the pair needs about 40\.\d GiB \(target at float32: weights 29\.9 GiB \+ KV 1000 MiB; draft at int8: weights 1 MiB \+ KV 1 MiB;.*: the target in int8 would fit, about 1\d\.\d GiB \(--target-precision int8\)$/);
    expect(listGraphCache(join(tmp.path, 'cache-pair'))).toEqual([]);
  });

  test('memoryFitProblem sums the models and tries the first model’s smaller weights first', () => {
    const est = (bytes: number) => ['float32', 'int8', 'int4'].map((precision, i) => ({ precision: precision as 'float32', weightBytes: bytes / 4 ** i, kvBytes: 0, runningBytes: bytes / 4 ** i, buildPeakBytes: 0 }));
    const target = { name: 'target', precision: 'float32' as const, estimates: est(8 * GiB), precisionOption: '--target-precision' };
    const draft = { name: 'draft', precision: 'float32' as const, estimates: est(2 * GiB), precisionOption: '--draft-precision' };
    expect(memoryFitProblem([target, draft], 20 * GiB)).toBeNull(); // 10 GiB of 17
    expect(memoryFitProblem([target, draft], 10 * GiB)).toMatch(/the target in int8 would fit, about 4\.0 GiB \(--target-precision int8\)$/);
    expect(peakBytes(target.estimates[1])).toBe(2 * GiB);
  });

  test('the machine’s memory is read from ECHO_STUDIO_MEMORY when set, in bytes, MiB or GiB', () => {
    expect(machineMemoryBytes({ ECHO_STUDIO_MEMORY: '16GiB' })).toBe(16 * GiB);
    expect(machineMemoryBytes({ ECHO_STUDIO_MEMORY: '512 MiB' })).toBe(512 * 2 ** 20);
    expect(machineMemoryBytes({ ECHO_STUDIO_MEMORY: '1000' })).toBe(1000);
    expect(machineMemoryBytes({})).toBeGreaterThan(0);
    expect(() => machineMemoryBytes({ ECHO_STUDIO_MEMORY: 'lots' })).toThrow(/ECHO_STUDIO_MEMORY takes bytes or a size such as 16GiB or 512MiB, got "lots"/);
  });
});
