// A target loaded for an EAGLE-3 head returns features only for the rows greedy verification can
// accept (featureParents): rows whose every token from the root down is its parent row's argmax.
// Built on a fixture target: a tree with an agreeing branch, a disagreeing branch with an
// agreeing child under it, and a disagreeing leaf under the agreeing branch.
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadModel } from '../../../src/engine/model/index.js';
import { openHeadFolder } from '../../../src/engine/model/head-loader.js';
import { parseModelConfig, readConfigJson } from '../../../src/engine/model/config.js';
import type { ModelSession } from '../../../src/engine/model/types.js';
import { tempDir } from './helpers.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'eagle3');
const tmp = tempDir('echo-feature-rows-');
afterAll(() => tmp.cleanup());

async function fixtureTarget(): Promise<ModelSession> {
  const targetDir = join(FIXTURES, 'llama-target');
  const { path, json } = readConfigJson(targetDir);
  const { featureBoundaries } = openHeadFolder(join(FIXTURES, 'llama-head-untied'), parseModelConfig(json, path));
  return loadModel(targetDir, { slots: 4, maxLength: 32, cacheDir: join(tmp.path, 'cache'), featureBoundaries });
}

/** Argmax of every row of a tree forwarded into a fresh slot (argmax of a row depends only on its ancestors). */
async function argmaxOf(target: ModelSession, tokens: number[], parents: number[]): Promise<Int32Array> {
  const slot = target.allocSlot();
  try {
    const rows = tokens.map((_, i) => i);
    return (await target.forward([{ slot, tokens, parents }], { argmaxRows: rows })).argmax!;
  } finally {
    target.freeSlot(slot);
  }
}

test('greedy verification gets features only for the rows on paths that agree with the argmax', async () => {
  const target = await fixtureTarget();
  try {
    const vocab = target.info.vocabSize;
    const other = (t: number): number => (t + 1) % vocab;
    const root = 5;
    const a0 = (await argmaxOf(target, [root], [-1]))[0];
    const level1 = await argmaxOf(target, [root, a0, other(a0)], [-1, 0, 0]);
    // rows: 0 root, 1 agrees, 2 disagrees, 3 agrees under 1, 4 agrees with its parent 2 (a rejected
    // branch), 5 disagrees under 1.
    const tokens = [root, a0, other(a0), level1[1], level1[2], other(level1[1])];
    const parents = [-1, 0, 0, 1, 2, 1];
    const rows = tokens.map((_, i) => i);

    const full = await target.forward([{ slot: target.allocSlot(), tokens, parents }], { argmaxRows: rows, featureRows: rows });
    const width = target.info.featureWidth!;
    expect(full.features!.length).toBe(rows.length * width);
    expect(Array.from(full.featureKept!)).toEqual(rows);

    const chosen = await target.forward([{ slot: target.allocSlot(), tokens, parents }], { argmaxRows: rows, featureRows: rows, featureParents: parents });
    expect(Array.from(chosen.argmax!)).toEqual(Array.from(full.argmax!));
    expect(Array.from(chosen.featureKept!)).toEqual([0, 1, 3]);
    expect(chosen.features!.length).toBe(3 * width);
    for (const [k, row] of [0, 1, 3].entries()) {
      expect(Array.from(chosen.features!.subarray(k * width, (k + 1) * width))).toEqual(Array.from(full.features!.subarray(row * width, (row + 1) * width)));
    }
  } finally {
    await target.release();
  }
});

test('featureParents is checked: one parent per feature row, earlier rows only, argmax of the same rows', async () => {
  const target = await fixtureTarget();
  try {
    const slot = target.allocSlot();
    const entry = { slot, tokens: [1, 2, 3], parents: [-1, 0, 1] };
    await expect(target.forward([entry], { argmaxRows: [0, 1, 2], featureRows: [0, 1, 2], featureParents: [-1, 0] })).rejects.toThrow(/2 entries for 3 feature rows/);
    await expect(target.forward([entry], { argmaxRows: [0, 1], featureRows: [0, 1, 2], featureParents: [-1, 0, 1] })).rejects.toThrow(/argmaxRows to be exactly the feature rows/);
    await expect(target.forward([entry], { argmaxRows: [0, 1, 2], featureRows: [0, 1, 2], featureParents: [-1, 2, 1] })).rejects.toThrow(/parent 2 is not an earlier feature row/);
  } finally {
    await target.release();
  }
});
