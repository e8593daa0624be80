// loadPair's checks on the two folders, before any model is loaded.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { checkPairMemory, loadPair, MAX_SLOTS, pairSlotLimit, pairThreads } from '../../src/engine/run/pair.js';
import { folderMemory } from '../../src/engine/model/loader.js';
import { peakBytes, MEMORY_SHARE } from '../../src/engine/model/memory-estimate.js';
import type { ModelSession } from '../../src/engine/model/types.js';
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

describe('pairSlotLimit', () => {
  test("the most slots the load's own memory check passes for the loaded pair, and why not one more", () => {
    const target = writeFixtureModel(join(tmp.path, 'limit-target'), { seed: 1, hiddenSize: 64, numLayers: 4 });
    const draft = writeFixtureModel(join(tmp.path, 'limit-draft'), { seed: 2, hiddenSize: 32 });
    const maxLength = 512;
    const session = (dir: string) => ({ info: openModelFolder(dir).info, capacity: 4 }) as unknown as ModelSession;
    const pair = { target: session(target.dir), draft: session(draft.dir), draftKind: 'model' as const, targetDir: target.dir, draftDir: draft.dir, maxLength };
    // A machine whose usable share holds the pair at about 40 slots.
    const need = (slots: number) => [target.dir, draft.dir].reduce((sum, dir) => sum + peakBytes(folderMemory(openModelFolder(dir), slots, maxLength)[0]), 0);
    const memoryBytes = need(40) / MEMORY_SHARE;
    const limit = pairSlotLimit(pair, { memoryBytes });
    expect(limit.max).toBeGreaterThanOrEqual(39);
    expect(limit.max).toBeLessThanOrEqual(40);
    const check = (slots: number) => checkPairMemory({ slots, maxLength, memoryBytes }, { dir: target.dir, precision: 'float32' }, { dir: draft.dir, precision: 'float32' });
    expect(() => check(limit.max)).not.toThrow();
    expect(() => check(limit.max + 1)).toThrow();
    expect(limit.beyond).toMatch(new RegExp(`^${limit.max + 1} KV slots of ${maxLength} rows: the pair needs about`));
    // A machine with room for more than a run can take: the batch's own bound.
    expect(pairSlotLimit(pair, { memoryBytes: 2 ** 50 })).toEqual({ max: MAX_SLOTS, beyond: `a run takes at most ${MAX_SLOTS} requests in flight` });
  });
});
