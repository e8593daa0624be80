// A tiny random target/draft pair in a temporary folder for one test file, with the graph cache
// inside it: written before the file's tests, removed after them.
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { writeFixtureModel } from './fixtures.js';
import { tempDir } from './helpers.js';

export interface TinyPairFolders {
  /** The temporary folder; tests may write their own files in it. */
  path: string;
  targetDir: string;
  draftDir: string;
}

export function tinyPairFolders(prefix: string): TinyPairFolders {
  const tmp = tempDir(prefix);
  const pair = { path: tmp.path, targetDir: join(tmp.path, 'target'), draftDir: join(tmp.path, 'draft') };
  const savedCache = process.env.ECHO_STUDIO_CACHE;
  beforeAll(() => {
    process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
    writeFixtureModel(pair.targetDir, { seed: 3, hiddenSize: 32 }); // 512 positions
    writeFixtureModel(pair.draftDir, { seed: 4, hiddenSize: 32, numLayers: 1 });
  });
  afterAll(() => {
    process.env.ECHO_STUDIO_CACHE = savedCache;
    tmp.cleanup();
  });
  return pair;
}
