// `echo-studio model info` says what a folder takes at each precision before anything loads, and
// which precisions fit this machine (here told 260 MiB through ECHO_STUDIO_MEMORY), from a folder
// whose safetensors hold a header and no weights.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { register } from '../../../src/cli/commands/model.js';
import { MAX_PROJECTION_BYTES } from '../../../src/engine/model/graph-builder.js';
import { PROCESS_BYTES } from '../../../src/engine/model/memory-estimate.js';
import { tempDir } from '../../engine/model/helpers.js';
import { llamaConfig, writeSparseModel } from '../../engine/model/sparse-folder.js';
import { runCli } from '../helpers.js';

const MiB = 2 ** 20;
const tmp = tempDir('echo-model-memory-');
const saved = { memory: process.env.ECHO_STUDIO_MEMORY, cache: process.env.ECHO_STUDIO_CACHE };
let dir: string;

beforeAll(() => {
  process.env.ECHO_STUDIO_MEMORY = '260MiB';
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  // 19.9M parameters: 76 MiB in float32, past the 64 MiB above which a graph's weights stream to disk.
  dir = writeSparseModel(
    join(tmp.path, 'model'),
    llamaConfig({ hidden_size: 512, intermediate_size: 2048, num_hidden_layers: 4, num_attention_heads: 8, num_key_value_heads: 4, vocab_size: 4096, max_position_embeddings: 2048 }),
  ).dir;
});
afterAll(() => {
  for (const [key, value] of [['ECHO_STUDIO_MEMORY', saved.memory], ['ECHO_STUDIO_CACHE', saved.cache]] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  tmp.cleanup();
});

const run = async (args: string[]): Promise<string> => (await runCli(register, ['model', 'info', dir, ...args])).stdout;

test('model info --json gives each precision’s weights, KV, running and build peak, and whether it fits', async () => {
  const r = JSON.parse(await run(['--slots', '1', '--max-length', '256', '--json']));
  expect(r.memory).toMatchObject({ slots: 1, maxLength: 256, machineBytes: 260 * MiB, usableBytes: 0.85 * 260 * MiB });
  const linear = 4 * (2 * 512 * 512 + 2 * 256 * 512 + 3 * 2048 * 512) + 4096 * 512;
  const float32Only = 4096 * 512 + 4 * 2 * 512 + 512;
  expect(r.parameters).toBe(linear + float32Only);
  const kv = 4 * 2 * 256 * 256 * 4; // layers × (K, V) × rows × kv width × 4 bytes
  // The bfloat16 embedding stays 16-bit in the lookup table: 2 bytes a value instead of 4.
  const float32Held = 4 * float32Only - 2 * 4096 * 512;
  const weights = { float32: 4 * linear + float32Held, int8: float32Held + (linear / 32) * 36, int4: float32Held + (linear / 32) * 20.5 }; // int4: a 4-bit zero point per block too
  expect(r.memory.precisions.map((e: { precision: string }) => e.precision)).toEqual(['float32', 'int8', 'int4']);
  for (const e of r.memory.precisions) {
    const w = weights[e.precision as keyof typeof weights];
    expect(e.weightBytes).toBe(w);
    expect(e.kvBytes).toBe(kv);
    // One projection part held twice while onnxruntime prepacks it.
    expect(e.runningBytes).toBeCloseTo(PROCESS_BYTES + w + Math.min(w, MAX_PROJECTION_BYTES) + kv, 0);
    // Streamed build: three float32 copies of the largest matrix (the 4096 × 512 embedding, or the fused 4096 × 512 gate/up).
    expect(e.buildPeakBytes).toBe(PROCESS_BYTES + 3 * 4 * 4096 * 512);
  }
  // About 288 MiB running in float32 against 221 MiB allowed; 198 in int8, 181 in int4.
  expect(r.memory.precisions.map((e: { fits: boolean }) => e.fits)).toEqual([false, true, true]);
  // Nothing was loaded or built.
  expect(r.graphCached).toBe(false);
});

test('model info prints one line per precision, saying whether it fits', async () => {
  const lines = (await run(['--slots', '1', '--max-length', '256'])).split('\n');
  expect(lines).toContain('memory        for 1 KV slots of 256 rows (--slots, --max-length); a load may use 221 MiB here (85 % of 260 MiB)');
  expect(lines).toContain("  float32     weights 72 MiB + KV 2 MiB: about 288 MiB running, 174 MiB at the first load's graph build · does not fit");
  expect(lines.find((l) => l.startsWith('  int8 '))).toMatch(/weights 23 MiB \+ KV 2 MiB: about 198 MiB running, 174 MiB at the first load's graph build · fits$/);
  expect(lines.find((l) => l.startsWith('  int4 '))).toMatch(/· fits$/);
  // The default size: 8 slots of min(2048, the model's positions) rows.
  const r = JSON.parse(await run(['--json']));
  expect([r.memory.slots, r.memory.maxLength]).toEqual([8, 2048]);
  await expect(run(['--slots', '0'])).rejects.toThrow(/expected a positive integer/);
});
