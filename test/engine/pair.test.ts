// loadPair's checks on the two folders, before any model is loaded.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadPair } from '../../src/engine/pair.js';
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
