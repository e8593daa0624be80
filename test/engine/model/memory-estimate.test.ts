// The memory a folder takes at each precision, from its headers alone, and a load that cannot fit
// refused before anything is built, naming the precision that would fit. The large folder is an
// 8B Llama shape whose safetensors hold a header and no weights (sparse-folder.ts).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultMaxLength, folderMemory, loadModel, openModelFolder } from '../../../src/engine/model/loader.js';
import { MAX_PROJECTION_BYTES } from '../../../src/engine/model/graph-builder.js';
import { machineMemoryBytes, memoryFitProblem, PROCESS_BYTES, peakBytes } from '../../../src/engine/model/memory-estimate.js';
import { ModelLoadError } from '../../../src/engine/model/errors.js';
import { Refusal } from '../../../src/engine/refusal.js';
import { listGraphCache } from '../../../src/engine/model/graph-cache.js';
import { loadPair } from '../../../src/engine/run/pair.js';
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
    // Linear layers (q, k, v, o, gate, up, down) and the untied head are quantised; the norms stay
    // float32 and the embedding as the folder stores it (bfloat16).
    const linear = LAYERS * (2 * H * H + 2 * KV_DIM * H + 3 * I * H) + V * H;
    const unquantised = 2 * V * H + 4 * (LAYERS * 2 * H + H);
    expect(folder.halfEmbedding).toBe(true);
    expect(folder.info.parameters).toBe(linear + V * H + LAYERS * 2 * H + H);
    expect(f32.weightBytes).toBe(4 * linear + unquantised);
    expect(int8.weightBytes).toBe(unquantised + (linear / 32) * (32 + 4)); // a byte per weight, a float32 scale per 32
    expect(int4.weightBytes).toBe(unquantised + (linear / 32) * (16 + 4 + 0.5)); // two weights per byte, a 4-bit zero point per block
    // KV: 1000 rows round up to 1000 (whole blocks of 8); float32 keys and values of every layer.
    const kv = LAYERS * 2 * 4 * 1000 * KV_DIM * 4;
    for (const e of [f32, int8, int4]) {
      expect(e.kvBytes).toBe(kv);
      // One projection part (at most 64 MiB) is held twice while onnxruntime prepacks it.
      expect(e.runningBytes).toBeCloseTo(PROCESS_BYTES + e.weightBytes + MAX_PROJECTION_BYTES + kv, 0);
      // Streamed build: a few float32 copies of the largest matrix (the embedding, or the fused gate/up), far below the running model.
      expect(e.buildPeakBytes).toBe(PROCESS_BYTES + 3 * 4 * Math.max(V * H, 2 * I * H));
      expect(e.buildPeakBytes).toBeLessThan(e.runningBytes);
    }
    // In round numbers: 28.9 GiB of float32 weights, 8.8 in int8, 5.5 in int4 (the bfloat16 embedding is 1 GiB of each).
    expect(f32.weightBytes / GiB).toBeCloseTo(28.9, 1);
    expect(int8.weightBytes / GiB).toBeCloseTo(8.8, 1);
    expect(int4.weightBytes / GiB).toBeCloseTo(5.5, 1);
  });

  test('a tied float32 head shares a float32 embedding table; a 16-bit table or a quantised head means a head of its own', () => {
    const config = llamaConfig({ hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 1024, max_position_embeddings: 512, tie_word_embeddings: true });
    const linear = 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256);
    const embedding = 1024 * 256;

    const float32Folder = openModelFolder(writeSparseModel(join(tmp.path, 'tied-f32'), config, undefined, 'F32').dir, join(tmp.path, 'cache'));
    expect([float32Folder.untiedHead, float32Folder.halfEmbedding]).toEqual([false, false]);
    const [f32, int8] = folderMemory(float32Folder, 1, 64);
    expect(f32.weightBytes).toBe(4 * float32Folder.info.parameters);
    expect(int8.weightBytes).toBe(4 * (float32Folder.info.parameters - linear) + ((linear + embedding) / 32) * 36);
    // Under 64 MiB of float32 weights the graph is built whole in memory and encoded: about three copies.
    expect(f32.buildPeakBytes).toBe(PROCESS_BYTES + 3 * f32.weightBytes);
    expect(defaultMaxLength(float32Folder.config)).toBe(512);

    const halfFolder = openModelFolder(writeSparseModel(join(tmp.path, 'tied-bf16'), config).dir, join(tmp.path, 'cache'));
    expect([halfFolder.untiedHead, halfFolder.halfEmbedding]).toEqual([false, true]);
    const [halfF32, halfInt8] = folderMemory(halfFolder, 1, 64);
    // The table at 2 bytes a value and the head a float32 matrix of its own.
    expect(halfF32.weightBytes).toBe(4 * halfFolder.info.parameters + 2 * embedding);
    expect(halfInt8.weightBytes).toBe(int8.weightBytes - 2 * embedding);
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
    // The norms in float32 and the bfloat16 embedding at 2 bytes a value.
    const unquantised = 4 * (folder.info.parameters - linear + 512 * 96) - 2 * 512 * 96;
    expect(int4.weightBytes).toBe(unquantised + rows3 * (3 * 20 + 2) + rows5 * (5 * 20 + 3));
  });
});

describe('a load that cannot fit is refused before anything is built', () => {
  const options = (memoryBytes: number) => ({ slots: 4, maxLength: 1000, cacheDir: join(tmp.path, 'cache-load'), memoryBytes });

  test('naming the precision that would fit: int8 on 20 GiB, int4 on 11 GiB, none on 4 GiB', async () => {
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
    expect(await refusal(20 * GiB)).toMatch(/llama-8b: 4 KV slots of 1000 rows: needs about 30\.1 GiB \(model at float32: weights 28\.9 GiB \+ KV 1000 MiB;.*\), more than the 17\.0 GiB this machine allows \(85 % of 20\.0 GiB\): the model in int8 would fit, about 10\.0 GiB$/);
    expect(await refusal(11 * GiB)).toMatch(/more than the 9\.3 GiB .*: the model in int4 would fit, about 6\.6 GiB$/);
    expect(await refusal(11 * GiB, 'int8')).toMatch(/model at int8: .*the model in int4 would fit/);
    expect(await refusal(4 * GiB)).toMatch(/no precision fits; lower the batch or the context, or use a machine with more memory$/);
    // No graph was built for it: the refusal came first.
    expect(listGraphCache(join(tmp.path, 'cache-load'))).toEqual([]);
  });

  test('a pair is refused as a whole, naming the target precision flag that would make it fit', async () => {
    const pair = loadPair(draftDir, big.dir, { slots: 4, maxLength: 1000, cacheDir: join(tmp.path, 'cache-pair'), memoryBytes: 20 * GiB });
    await expect(pair).rejects.toThrow(/^4 KV slots of 1000 rows: the pair needs about 30\.\d GiB \(target at float32: weights 28\.9 GiB \+ KV 1000 MiB; draft at int8: weights 1 MiB \+ KV 1 MiB;.*: the target in int8 would fit, about 1\d\.\d GiB \(--target-precision int8\)$/);
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
    // A user's setting, refused in one line (no stack in the studio's log).
    expect(() => machineMemoryBytes({ ECHO_STUDIO_MEMORY: 'lots' })).toThrow(Refusal);
  });
});
