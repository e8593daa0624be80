// Bad model folders: each is one line naming the file and the problem (ModelLoadError).
import { copyFileSync, mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadModel, ModelLoadError, readModelInfo } from '../../../src/engine/model/index.js';
import { writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (options = {}) => writeFixtureModel(join(tmp.path, `m${n++}`), options).dir;
const cacheDir = join(tmp.path, 'cache');

async function loadError(dir: string): Promise<ModelLoadError> {
  try {
    await loadModel(dir, { cacheDir, maxLength: 32, slots: 1 });
  } catch (err) {
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as Error).message).not.toContain('\n');
    return err as ModelLoadError;
  }
  throw new Error('expected the load to fail');
}

const editConfig = (dir: string, edit: (c: Record<string, unknown>) => void): void => {
  const path = join(dir, 'config.json');
  const c = JSON.parse(readFileSync(path, 'utf8'));
  edit(c);
  writeFileSync(path, JSON.stringify(c));
};

test('a folder that does not exist', async () => {
  expect((await loadError(join(tmp.path, 'nope'))).message).toMatch(/nope: folder does not exist/);
});

test('a folder without config.json', async () => {
  const dir = join(tmp.path, 'empty');
  mkdirSync(dir);
  expect((await loadError(dir)).message).toMatch(/config\.json: missing/);
});

test('config.json that is not JSON', async () => {
  const dir = fresh();
  writeFileSync(join(dir, 'config.json'), '{"hidden_size": 4,');
  expect((await loadError(dir)).message).toMatch(/config\.json: not valid JSON/);
});

test('an unknown architecture', async () => {
  const dir = fresh();
  editConfig(dir, (c) => {
    c.architectures = ['GPT2LMHeadModel'];
    c.model_type = 'gpt2';
  });
  expect((await loadError(dir)).message).toMatch(/config\.json: unknown architecture GPT2LMHeadModel/);
});

test('an unsupported RoPE scaling', async () => {
  const dir = fresh();
  editConfig(dir, (c) => (c.rope_scaling = { rope_type: 'yarn', factor: 4 }));
  expect((await loadError(dir)).message).toMatch(/config\.json: rope type "yarn" is not supported/);
});

test('missing safetensors', async () => {
  const dir = fresh();
  rmSync(join(dir, 'model.safetensors'));
  expect((await loadError(dir)).message).toMatch(/model\.safetensors: missing/);
});

test('a missing shard named by the index', async () => {
  const dir = fresh({ shards: 2 });
  rmSync(join(dir, 'model-00002-of-00002.safetensors'));
  expect((await loadError(dir)).message).toMatch(/model-00002-of-00002\.safetensors: missing \(named by model\.safetensors\.index\.json\)/);
});

test('a shard named outside the model folder (".." or an absolute path) is refused, though the file exists there', async () => {
  const dir = fresh({ shards: 2 });
  const shard = 'model-00002-of-00002.safetensors';
  const outside = join(tmp.path, 'elsewhere');
  mkdirSync(outside);
  copyFileSync(join(dir, shard), join(outside, shard));
  rmSync(join(dir, shard));
  const indexPath = join(dir, 'model.safetensors.index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8'));
  const pointAt = (name: string) => {
    for (const key of Object.keys(index.weight_map)) if (index.weight_map[key] === shard || index.weight_map[key].includes('elsewhere')) index.weight_map[key] = name;
    writeFileSync(indexPath, JSON.stringify(index));
  };
  pointAt(`../elsewhere/${shard}`);
  expect((await loadError(dir)).message).toMatch(/model\.safetensors\.index\.json: shard "\.\.\/elsewhere\/model-00002-of-00002\.safetensors" leads out of the model's folder/);
  expect(() => readModelInfo(dir)).toThrow(/leads out of the model's folder/);
  pointAt(join(outside, shard));
  expect((await loadError(dir)).message).toMatch(/model\.safetensors\.index\.json: shard ".*elsewhere.*" is an absolute path; shards must be inside the model's folder/);
  // Back inside the folder, the same shard loads.
  copyFileSync(join(outside, shard), join(dir, shard));
  pointAt(shard);
  expect(readModelInfo(dir).numLayers).toBeGreaterThan(0);
});

test('truncated safetensors', async () => {
  const dir = fresh();
  const path = join(dir, 'model.safetensors');
  truncateSync(path, statSync(path).size - 100);
  expect((await loadError(dir)).message).toMatch(/model\.safetensors: truncated: tensor lm_head\.weight ends at byte \d+ but the file has \d+ bytes/);
  truncateSync(path, 5);
  expect(() => readModelInfo(dir)).toThrow(/model\.safetensors: truncated: 5 bytes/);
});

/** Rewrites a safetensors file's header through `edit` (offsets relative to the data, as stored), keeping its data. */
function editHeader(path: string, edit: (header: Record<string, { data_offsets: [number, number] }>) => void): void {
  const bytes = readFileSync(path);
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString('utf8'));
  edit(header);
  const text = Buffer.from(JSON.stringify(header).padEnd(length, ' '));
  expect(text.length).toBe(length); // same header length: only the offsets change
  writeFileSync(path, Buffer.concat([bytes.subarray(0, 8), text, bytes.subarray(8 + length)]));
}

/** The tensors of a header in the order of their data. */
const byOffset = (header: Record<string, { data_offsets: [number, number] }>) =>
  Object.entries(header).filter(([name]) => name !== '__metadata__').sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0]);

test.each([
  [
    'one tensor shifted 1,000 bytes into its neighbours',
    (h: Record<string, { data_offsets: [number, number] }>) => {
      const [, t] = byOffset(h)[1];
      t.data_offsets = [t.data_offsets[0] + 1000, t.data_offsets[1] + 1000];
    },
    /model\.safetensors: tensor \S+ overlaps \S+: its data_offsets start at \d+, before \S+ ends at \d+/,
  ],
  [
    'a gap between two tensors',
    (h: Record<string, { data_offsets: [number, number] }>) => {
      // Every tensor after the first 4 bytes later (the file grows by 4 below, so all still fit).
      for (const [, t] of byOffset(h).slice(1)) t.data_offsets = [t.data_offsets[0] + 4, t.data_offsets[1] + 4];
    },
    /model\.safetensors: tensor \S+ leaves a gap of 4 bytes: its data_offsets start at \d+, but \S+ ends at \d+/,
  ],
  [
    'offsets out of order',
    (h: Record<string, { data_offsets: [number, number] }>) => {
      const [, t] = byOffset(h)[0];
      t.data_offsets = [t.data_offsets[1], t.data_offsets[0]];
    },
    /model\.safetensors: tensor \S+ has data_offsets \[\d+, 0\], not two byte offsets in order/,
  ],
])('safetensors with %s: every command refuses it, naming the tensor', async (_what, edit, message) => {
  const dir = fresh();
  const path = join(dir, 'model.safetensors');
  editHeader(path, edit);
  writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.alloc(4)]), { flag: 'w' });
  expect(() => readModelInfo(dir)).toThrow(message);
  expect((await loadError(dir)).message).toMatch(message);
});

test('bytes after the last tensor are refused', async () => {
  const dir = fresh();
  const path = join(dir, 'model.safetensors');
  writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.alloc(16)]));
  expect(() => readModelInfo(dir)).toThrow(/model\.safetensors: 16 bytes follow the last tensor \(\S+\); safetensors data ends with its last tensor/);
});

test('a tensor whose shape does not match config.json', async () => {
  const dir = fresh();
  editConfig(dir, (c) => (c.intermediate_size = 80));
  expect((await loadError(dir)).message).toMatch(/model\.safetensors: model\.layers\.0\.mlp\.gate_proj\.weight has shape \[96, 48\], config\.json implies \[80, 48\]/);
});

test('a missing tensor', async () => {
  const dir = fresh();
  editConfig(dir, (c) => (c.num_hidden_layers = 3));
  expect((await loadError(dir)).message).toMatch(/model\.safetensors: missing tensor model\.layers\.2\.input_layernorm\.weight/);
});

test('heads that do not divide', async () => {
  const dir = fresh();
  editConfig(dir, (c) => (c.num_key_value_heads = 3));
  expect((await loadError(dir)).message).toMatch(/config\.json: num_attention_heads \(4\) is not a multiple of num_key_value_heads \(3\)/);
});
