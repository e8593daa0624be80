import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTraceHeader, describeModel } from '../../../src/engine/trace/header.js';
import { syntheticConfig } from '../metrics/synthetic-run.js';
import { RUN_OPTIONS, tempDir } from './fixtures.js';

// SHA-256 test vectors (FIPS 180-2): "abc" and the empty string.
const SHA_ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
const SHA_EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function modelDir(files: Record<string, string>): string {
  const dir = path.join(tempDir(), 'model');
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
  return dir;
}

describe('trace header', () => {
  it('identifies a model by config.json and every weight shard, hashed', async () => {
    const dir = modelDir({
      'config.json': 'abc',
      'model-00002-of-00002.safetensors': '',
      'model-00001-of-00002.safetensors': 'abc',
      'tokenizer.json': '{}',
    });
    expect(await describeModel(dir)).toEqual({
      dir,
      files: [
        { name: 'config.json', bytes: 3, sha256: SHA_ABC },
        { name: 'model-00001-of-00002.safetensors', bytes: 3, sha256: SHA_ABC },
        { name: 'model-00002-of-00002.safetensors', bytes: 0, sha256: SHA_EMPTY },
      ],
    });
  });

  it('says what is missing from a model folder', async () => {
    await expect(describeModel(path.join(tempDir(), 'nope'))).rejects.toThrow(/model folder not found or unreadable/);
    await expect(describeModel(modelDir({ 'model.onnx': 'x' }))).rejects.toThrow(/has no config\.json/);
    await expect(describeModel(modelDir({ 'config.json': '{}' }))).rejects.toThrow(/has no weights/);
  });

  it('builds a valid header with hardware and the run config', async () => {
    const draftDir = modelDir({ 'config.json': '{}', 'model.onnx': 'd' });
    const targetDir = modelDir({ 'config.json': '{}', 'model.safetensors': 't' });
    const header = await buildTraceHeader({
      config: syntheticConfig(RUN_OPTIONS),
      draftDir,
      targetDir,
      provider: 'cpu',
      writer: 'echo-studio 0.1.0',
      profile: { domain: 'demo', taus: { '0': 0.2 } },
      createdAt: new Date(0),
    });
    expect(header).toMatchObject({ type: 'header', schemaVersion: 3, createdAt: '1970-01-01T00:00:00.000Z', recordCandidates: false });
    expect(header.models.draft.files.map((f) => f.name)).toEqual(['config.json', 'model.onnx']);
    expect(header.hardware.cores).toBeGreaterThan(0);
    expect(header.hardware.provider).toBe('cpu');
    expect(header.profile).toEqual({ domain: 'demo', taus: { '0': 0.2 } });
  });
});
