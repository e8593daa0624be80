import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findBundledModels } from '../../src/host/bundled-models.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'echo-models-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Writes a real safetensors file: 8-byte little-endian header length, JSON header, zeroed data. */
async function writeSafetensors(file: string, shapes: Record<string, number[]>) {
  let offset = 0;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  for (const [name, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  await writeFile(file, Buffer.concat([length, json, Buffer.alloc(offset)]));
}

describe('findBundledModels', () => {
  it('lists folders with a config.json, sorted, with parameters summed over shards', async () => {
    await mkdir(path.join(root, 'target'));
    await writeFile(path.join(root, 'target', 'config.json'), '{}');
    await writeSafetensors(path.join(root, 'target', 'model-00001.safetensors'), { a: [4, 8], b: [8] });
    await writeSafetensors(path.join(root, 'target', 'model-00002.safetensors'), { c: [2, 3, 5] });
    await mkdir(path.join(root, 'draft'));
    await writeFile(path.join(root, 'draft', 'config.json'), '{}');
    await mkdir(path.join(root, 'notes'));
    await writeFile(path.join(root, 'README.md'), 'not a model');

    const scan = await findBundledModels(root);
    expect(scan.problems).toEqual([]);
    expect(scan.models).toEqual([
      { name: 'draft', dir: path.join(root, 'draft') },
      { name: 'target', dir: path.join(root, 'target'), parameters: 4 * 8 + 8 + 2 * 3 * 5 },
    ]);
  });

  it('reports a broken config or weights file instead of failing the scan', async () => {
    await mkdir(path.join(root, 'broken'));
    await writeFile(path.join(root, 'broken', 'config.json'), '{oops');
    await mkdir(path.join(root, 'bad-weights'));
    await writeFile(path.join(root, 'bad-weights', 'config.json'), '{}');
    await writeFile(path.join(root, 'bad-weights', 'model.safetensors'), Buffer.from([255, 255, 255, 255, 255, 255, 255, 255]));
    const scan = await findBundledModels(root);
    expect(scan.models).toEqual([{ name: 'bad-weights', dir: path.join(root, 'bad-weights') }]);
    expect(scan.problems).toHaveLength(2);
    expect(scan.problems.join('\n')).toMatch(/broken\/config\.json/);
    expect(scan.problems.join('\n')).toMatch(/not a safetensors file/);
  });

  it('returns nothing when the models folder does not exist', async () => {
    expect(await findBundledModels(path.join(root, 'missing'))).toEqual({ models: [], problems: [] });
  });
});
