// loadPair's checks on the two folders, before any model is loaded.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadPair, pairThreads } from '../../src/engine/pair.js';
import { defaultThreads, heldWeightBytes, openModelFolder, TWO_THREADS_ABOVE_WEIGHT_BYTES } from '../../src/engine/model/loader.js';
import { writeFixtureModel } from './model/fixtures.js';
import { tempDir } from './model/helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('loadPair on folders that are not model pairs', () => {
  test('a folder without config.json is named as not a model folder before any tokenizer is read', async () => {
    const model = writeFixtureModel(join(tmp.path, 'pair-target'));
    const empty = join(tmp.path, 'not-a-model');
    mkdirSync(empty, { recursive: true });
    await expect(loadPair(empty, model.dir, { slots: 1, maxLength: 8 })).rejects.toThrow(/not-a-model\/config\.json: missing \(not a Hugging Face model folder\?\)/);
    await expect(loadPair(model.dir, join(tmp.path, 'nowhere'), { slots: 1, maxLength: 8 })).rejects.toThrow(/nowhere: folder does not exist/);
  });
});

describe('pairThreads', () => {
  test('a target whose weights fit a last-level cache runs on one thread, a larger one on two spinning threads, the draft always on one; --threads wins', () => {
    const small = pairThreads(undefined, TWO_THREADS_ABOVE_WEIGHT_BYTES);
    expect(small.target).toEqual({ threads: 1, spin: false });
    const large = pairThreads(undefined, TWO_THREADS_ABOVE_WEIGHT_BYTES + 1);
    expect(large.target).toEqual({ threads: 2, spin: true });
    for (const p of [small, large]) expect(p.draft).toEqual({ threads: 1, spin: false });
    expect(pairThreads(2, 1000).target).toEqual({ threads: 2, spin: true });
    expect(pairThreads(1, 1e9).target).toEqual({ threads: 1, spin: false });
    // A cap on the default (the studio leaves a core to its window); an explicit count still wins.
    expect(pairThreads(undefined, TWO_THREADS_ABOVE_WEIGHT_BYTES + 1, 1).target).toEqual({ threads: 1, spin: false });
    expect(pairThreads(undefined, TWO_THREADS_ABOVE_WEIGHT_BYTES + 1, 3).target).toEqual({ threads: 2, spin: true });
    expect(pairThreads(2, TWO_THREADS_ABOVE_WEIGHT_BYTES + 1, 1).target).toEqual({ threads: 2, spin: true });
  });

  test('the demo target (25.7M parameters, 103 MB as float32) runs on two threads, a fixture model on one', () => {
    const demo = openModelFolder(join('assets', 'models', 'echo-demo-target'));
    expect(heldWeightBytes(demo, 'float32')).toBeGreaterThan(100e6);
    expect(defaultThreads(heldWeightBytes(demo, 'float32'))).toBe(2);
    const fixture = openModelFolder(writeFixtureModel(join(tmp.path, 'threads-fixture')).dir);
    expect(defaultThreads(heldWeightBytes(fixture, 'float32'))).toBe(1);
  });
});
