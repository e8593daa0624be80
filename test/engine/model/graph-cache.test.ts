// Built graphs are cached on disk and reused; weights above the threshold go to external data;
// onnxruntime runs only the output heads that are fetched.
import { existsSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, expect, test } from 'vitest';
import { ensureGraph, isGraphCached, loadModel, openModelFolder } from '../../../src/engine/model/index.js';
import { cudaUnavailableReason } from '../../../src/engine/model/loader.js';
import { writeFixtureModel } from './fixtures.js';
import { argmax, maxRowDiff, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

test('the second load reuses the cached graph; changed weights rebuild it', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'a'));
  const cacheDir = join(tmp.path, 'cache-a');
  const notes: string[] = [];
  const onMessage = (line: string) => notes.push(line);
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(false);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(true);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  utimesSync(join(fx.dir, 'model.safetensors'), new Date(), new Date(Date.now() + 5000));
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(false);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  expect(notes.map((l) => l.split(' ')[0])).toEqual(['built', 'reused', 'built']);
});

test('weights over the threshold go to an external data file and give the same logits', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'b'), { tieWordEmbeddings: true });
  const cacheDir = join(tmp.path, 'cache-b');
  const session = await loadModel(fx.dir, { cacheDir, externalDataThreshold: 0 });
  const path = openModelFolder(fx.dir, cacheDir).graphPath;
  expect(existsSync(`${path}.data`)).toBe(true);
  const slot = session.allocSlot();
  const tokens = [3, 30, 300 % fx.vocabSize];
  const r = await session.forward([{ slot, tokens, parents: [-1, 0, 1] }], { logitsRows: [2] });
  const ref = referenceForward(fx, tokens);
  expect(maxRowDiff(r.logits!, 0, ref[2])).toBeLessThan(1e-4);
  await session.release();
});

test('onnxruntime runs unfetched heads too, so the session gives them zero rows', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'c'));
  const folder = openModelFolder(fx.dir, join(tmp.path, 'cache-c'));
  const { path } = ensureGraph(folder);
  const session = await ort.InferenceSession.create(path, { logSeverityLevel: 4 }); // the failure below is expected: keep it off stderr
  const { numLayers: layers, numKvHeads: kvH, headDim: hd } = fx;
  const i32 = (v: number[], dims = [v.length]) => new ort.Tensor('int32', Int32Array.from(v), dims);
  const feeds: Record<string, ort.Tensor> = {
    input_ids: i32([5]),
    positions: i32([0]),
    gather_index: i32([0], [1, 1]),
    scatter_index: i32([0]),
    past_index: i32([0], [1, 1]),
    attn_mask: new ort.Tensor('float32', Float32Array.of(-1e30, 0), [1, 1, 1, 1, 2]),
    // Out-of-range rows in an unfetched head: onnxruntime still runs it and fails.
    logits_rows: i32([1000]),
    argmax_rows: i32([]),
    topk_rows: i32([0]),
    topk_k: new ort.Tensor('int64', BigInt64Array.of(3n), [1]),
  };
  for (let l = 0; l < layers; l++) {
    feeds[`past_key_${l}`] = new ort.Tensor('float32', new Float32Array(kvH * hd), [1, kvH, hd]);
    feeds[`past_value_${l}`] = new ort.Tensor('float32', new Float32Array(kvH * hd), [1, kvH, hd]);
  }
  await expect(session.run(feeds, ['topk_ids', 'new_key_0'])).rejects.toThrow(/out of data bounds/);
  // Zero rows are valid and give empty outputs.
  feeds.logits_rows = i32([]);
  const out = await session.run(feeds, ['topk_ids', 'logits', 'argmax']);
  expect(out.topk_ids.dims).toEqual([1, 3]);
  expect(out.logits.dims).toEqual([0, fx.vocabSize]);
  expect(out.argmax.size).toBe(0);
  await session.release();
});

test.skipIf(cudaUnavailableReason() === null)('asking for CUDA without the CUDA provider says why and runs on CPU', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'd'));
  const notes: string[] = [];
  const session = await loadModel(fx.dir, { cacheDir: join(tmp.path, 'cache-d'), provider: 'cuda', onMessage: (l) => notes.push(l) });
  expect(session.provider).toBe('cpu');
  expect(notes.some((l) => /^CUDA requested but .*; running on CPU$/.test(l))).toBe(true);
  const slot = session.allocSlot();
  const r = await session.forward([{ slot, tokens: [7], parents: [-1] }], { argmaxRows: [0] });
  expect(r.argmax![0]).toBe(argmax(referenceForward(fx, [7])[0]));
  await session.release();
});
