// Built graphs are cached on disk and reused; weights above the threshold go to external data;
// onnxruntime runs only the output heads that are fetched. The cache prunes the graphs a rebuild
// supersedes and the leftovers of crashed writes, and records when a graph was last used.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, expect, test } from 'vitest';
import { ensureGraph, GRAPH_VERSION, isGraphCached, loadModel, openModelFolder } from '../../../src/engine/model/index.js';
import { listGraphCache, OTHER_LAYOUT_GRACE_MS, sidecarPath, STALE_LEFTOVER_MS } from '../../../src/engine/model/graph-cache.js';
import { cudaUnavailableReason } from '../../../src/engine/model/loader.js';
import { PAST_BLOCK } from '../../../src/engine/model/graph-builder.js';
import { writeFixtureModel } from './fixtures.js';
import { argmax, maxRowDiff, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** Changes one byte of a folder's weights (the graph cache keys on their content). */
function changeWeights(dir: string): void {
  const file = join(dir, 'model.safetensors');
  const bytes = readFileSync(file);
  bytes[bytes.length - 1] ^= 0x55;
  writeFileSync(file, bytes);
}

test('the second load reuses the cached graph; changed weights rebuild it', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'a'));
  const cacheDir = join(tmp.path, 'cache-a');
  const notes: string[] = [];
  const onMessage = (line: string) => notes.push(line);
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(false);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(true);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  // The weights' bytes change: a new graph.
  changeWeights(fx.dir);
  expect(isGraphCached(openModelFolder(fx.dir, cacheDir))).toBe(false);
  await (await loadModel(fx.dir, { cacheDir, onMessage })).release();
  expect(notes.filter((l) => !l.startsWith('hashing')).map((l) => l.split(' ')[0])).toEqual(['built', 'reused', 'built']);
});

test('the cache key is the weights’ content: changed bytes with the mtime restored rebuild, a touched file does not', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'content'));
  const cacheDir = join(tmp.path, 'cache-content');
  const weights = join(fx.dir, 'model.safetensors');
  const notes: string[] = [];
  const load = async () => {
    notes.length = 0;
    const session = await loadModel(fx.dir, { cacheDir, onMessage: (l) => notes.push(l) });
    const slot = session.allocSlot();
    const { logits } = await session.forward([{ slot, tokens: [1, 2, 3], parents: [-1, 0, 1] }], { logitsRows: [2] });
    await session.release();
    return Array.from(logits!.subarray(0, 8));
  };
  const first = await load();
  expect(notes.some((l) => l.startsWith('hashing model.safetensors once'))).toBe(true);
  expect(await load()).toEqual(first);
  expect(notes.some((l) => l.startsWith('hashing'))).toBe(false); // remembered: not read again
  // New bytes, the old mtime put back: the old graph would give the old logits.
  const { mtime, atime } = statSync(weights);
  const changed = writeFixtureModel(join(tmp.path, 'content-other'), { seed: 99 });
  writeFileSync(weights, readFileSync(join(changed.dir, 'model.safetensors')));
  utimesSync(weights, atime, mtime);
  const after = await load();
  expect(notes.some((l) => l.startsWith('built graph'))).toBe(true);
  expect(after).not.toEqual(first);
  // A touch changes no byte: hashed again, the same graph reused.
  utimesSync(weights, new Date(), new Date(Date.now() + 5000));
  expect(await load()).toEqual(after);
  expect(notes.some((l) => l.startsWith('hashing'))).toBe(true);
  expect(notes.some((l) => l.startsWith('reused cached graph'))).toBe(true);
});

test('a cached graph damaged in place (4 KiB overwritten, size kept) is caught by its digest and rebuilt, with a note', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'damaged'), { tieWordEmbeddings: true });
  const cacheDir = join(tmp.path, 'cache-damaged');
  const tokens = [3, 30, 300 % fx.vocabSize];
  const logits = async (notes: string[]): Promise<Float32Array> => {
    const session = await loadModel(fx.dir, { cacheDir, externalDataThreshold: 0, onMessage: (l) => notes.push(l) });
    const slot = session.allocSlot();
    const r = await session.forward([{ slot, tokens, parents: [-1, 0, 1] }], { logitsRows: [2] });
    await session.release();
    return r.logits!.slice();
  };
  const before = await logits([]);
  const dataPath = `${openModelFolder(fx.dir, cacheDir).graphPath}.data`;
  const bytes = readFileSync(dataPath);
  const size = bytes.length;
  bytes.fill(0x41, size >> 1, (size >> 1) + 4096);
  writeFileSync(dataPath, bytes);
  expect(statSync(dataPath).size).toBe(size);
  const notes: string[] = [];
  const after = await logits(notes);
  expect(notes.join('\n')).toMatch(/cached graph [0-9a-f]{32}\.onnx does not match the digest recorded when it was written \(damaged on disk\); rebuilt it/);
  expect(notes.some((l) => l.startsWith('built graph'))).toBe(true);
  expect([...after]).toEqual([...before]);
  const again: string[] = [];
  await logits(again);
  expect(again.filter((l) => !l.startsWith('hashing'))).toEqual([expect.stringMatching(/^reused cached graph/)]);
});

test('a cached graph that fails to parse is rebuilt, with a note', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'corrupt'));
  const cacheDir = join(tmp.path, 'cache-corrupt');
  await (await loadModel(fx.dir, { cacheDir })).release();
  const graphPath = openModelFolder(fx.dir, cacheDir).graphPath;
  writeFileSync(graphPath, Buffer.from('this is not a protobuf at all'));
  const notes: string[] = [];
  const session = await loadModel(fx.dir, { cacheDir, onMessage: (l) => notes.push(l) });
  await session.release();
  // Its digest no longer matches, so it is not even handed to onnxruntime.
  expect(notes.join('\n')).toMatch(/cached graph .*\.onnx does not match the digest recorded when it was written \(damaged on disk\); rebuilt it/);
  expect(notes.some((l) => l.startsWith('built graph'))).toBe(true);
  await (await loadModel(fx.dir, { cacheDir })).release(); // and it stays fixed
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

test('a graph that fails to build into its data file leaves no file behind', () => {
  const fx = writeFixtureModel(join(tmp.path, 'b-broken'));
  const cacheDir = join(tmp.path, 'cache-b-broken');
  const folder = openModelFolder(fx.dir, cacheDir);
  // Cut the weights after the folder was checked: reading them fails partway through the build.
  const weights = join(fx.dir, 'model.safetensors');
  truncateSync(weights, statSync(weights).size - 256);
  expect(() => ensureGraph(folder, 0)).toThrow();
  const graphs = join(cacheDir, 'graphs');
  expect(existsSync(graphs) ? readdirSync(graphs) : []).toEqual([]);
});

test('onnxruntime runs unfetched heads too, so the session gives them zero rows', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'c'));
  const folder = openModelFolder(fx.dir, join(tmp.path, 'cache-c'));
  const { path } = ensureGraph(folder);
  const session = await ort.InferenceSession.create(path, { logSeverityLevel: 4 }); // the failure below is expected: keep it off stderr
  const { numLayers: layers, numKvHeads: kvH, headDim: hd } = fx;
  const G = fx.numHeads / kvH;
  const i32 = (v: number[], dims = [v.length]) => new ort.Tensor('int32', Int32Array.from(v), dims);
  const i64 = (v: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), [v.length]);
  const feeds: Record<string, ort.Tensor> = {
    input_ids: i32([5]),
    positions: i32([0]),
    gather_index: i32([0], [1, 1]),
    key_index: i32([0], [1, 1]),
    scatter_index: i32([0]),
    past_index: i32([0, 1], [1, 2, 1]),
    // One block of past rows, all hidden, and the new token's own key, for each of the G query heads of a KV head.
    attn_mask: new ort.Tensor('float32', Float32Array.from({ length: G * (PAST_BLOCK + 1) }, (_, i) => (i % (PAST_BLOCK + 1) < PAST_BLOCK ? -1e30 : 0)), [1, 1, G, PAST_BLOCK + 1]),
    // An out-of-range logits row while only top-k is fetched: onnxruntime still runs that head and fails.
    head_rows: i32([1000, 0]),
    head_split: i64([1, 1, 0]),
    topk_k: new ort.Tensor('int64', BigInt64Array.of(3n), [1]),
  };
  for (let l = 0; l < layers; l++) {
    feeds[`past_kv_${l}`] = new ort.Tensor('float32', new Float32Array(2 * kvH * PAST_BLOCK * hd), [kvH, 2, PAST_BLOCK * hd]);
  }
  await expect(session.run(feeds, ['topk_ids', 'new_kv_0'])).rejects.toThrow(/out of data bounds/);
  // Zero rows are valid and give empty outputs.
  feeds.head_rows = i32([0]);
  feeds.head_split = i64([0, 1, 0]);
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

const HOUR_MS = 60 * 60 * 1000;

function setMtime(path: string, msAgo: number): void {
  const t = new Date(Date.now() - msAgo);
  utimesSync(path, t, t);
}

test('a graph is written with a sidecar describing it; a reuse marks it used', () => {
  const fx = writeFixtureModel(join(tmp.path, 'e'));
  const cacheDir = join(tmp.path, 'cache-e');
  const folder = openModelFolder(fx.dir, cacheDir);
  const first = ensureGraph(folder, 0);
  expect(first.built).toBe(true);
  const sidecar = JSON.parse(readFileSync(sidecarPath(folder.graphPath), 'utf8'));
  expect(sidecar.source).toBe(resolve(fx.dir));
  expect(sidecar.graphVersion).toBe(GRAPH_VERSION);
  expect(sidecar.architecture).toBe('llama');
  expect(Math.abs(Date.parse(sidecar.builtAt) - Date.now())).toBeLessThan(60_000);
  expect(sidecar.bytes).toBe(statSync(folder.graphPath).size + statSync(`${folder.graphPath}.data`).size);
  expect(readdirSync(join(cacheDir, 'graphs')).filter((n) => n.endsWith('.tmp'))).toEqual([]);

  setMtime(folder.graphPath, 10 * 24 * HOUR_MS);
  const before = Date.now();
  const second = ensureGraph(folder, 0);
  expect(second).toMatchObject({ built: false, pruned: null, cacheProblems: [] });
  expect(statSync(folder.graphPath).mtimeMs).toBeGreaterThanOrEqual(before - 1000);
  const [entry] = listGraphCache(cacheDir);
  expect(entry).toMatchObject({ key: folder.cacheKey, source: resolve(fx.dir), architecture: 'llama', graphVersion: GRAPH_VERSION, builtAt: sidecar.builtAt, bytes: sidecar.bytes });
  expect(Date.parse(entry.lastUsedAt)).toBeGreaterThanOrEqual(before - 1000);
});

test('rebuilding a changed model deletes its superseded graphs only; other models and foreign files stay', async () => {
  const a = writeFixtureModel(join(tmp.path, 'f-a'));
  const b = writeFixtureModel(join(tmp.path, 'f-b'), { seed: 7, hiddenSize: 32 }); // another config: another key
  const cacheDir = join(tmp.path, 'cache-f');
  const graphs = join(cacheDir, 'graphs');
  const notes: string[] = [];
  const onMessage = (line: string) => notes.push(line);
  await (await loadModel(b.dir, { cacheDir })).release();
  await (await loadModel(a.dir, { cacheDir, externalDataThreshold: 0 })).release();
  const firstA = openModelFolder(a.dir, cacheDir).graphPath;
  expect(existsSync(`${firstA}.data`)).toBe(true);
  // An entry from before sidecars existed, and files that are not ours.
  const legacy = join(graphs, `${'e'.repeat(32)}.onnx`);
  writeFileSync(legacy, 'legacy graph');
  writeFileSync(join(graphs, 'mine.onnx'), 'not a cache entry');
  writeFileSync(join(graphs, 'notes.json'), '{"hello": 1}');
  const entriesOf = (dir: string) => listGraphCache(cacheDir).filter((e) => e.source === resolve(dir));

  // New weights (mtime is part of the key): the first graph of A is superseded.
  changeWeights(a.dir);
  await (await loadModel(a.dir, { cacheDir, onMessage })).release();
  const secondA = openModelFolder(a.dir, cacheDir).graphPath;
  expect(secondA).not.toBe(firstA);
  expect(notes.filter((l) => !l.startsWith('hashing'))).toEqual([expect.stringMatching(/^built graph \w+\.onnx \(deleted 1 superseded graph of this folder, [\d.]+ MiB\)$/)]);
  for (const path of [firstA, `${firstA}.data`, sidecarPath(firstA)]) expect(existsSync(path)).toBe(false);
  expect(entriesOf(a.dir).map((e) => e.path)).toEqual([secondA]);

  // A changed config.json: superseded again.
  const config = JSON.parse(readFileSync(join(a.dir, 'config.json'), 'utf8'));
  writeFileSync(join(a.dir, 'config.json'), JSON.stringify({ ...config, _name_or_path: 'edited' }, null, 2));
  await (await loadModel(a.dir, { cacheDir })).release();
  const thirdA = openModelFolder(a.dir, cacheDir).graphPath;
  expect(thirdA).not.toBe(secondA);
  expect(entriesOf(a.dir).map((e) => e.path)).toEqual([thirdA]);
  expect(existsSync(secondA)).toBe(false);

  expect(entriesOf(b.dir).map((e) => e.path)).toEqual([openModelFolder(b.dir, cacheDir).graphPath]);
  expect(isGraphCached(openModelFolder(b.dir, cacheDir))).toBe(true);
  expect(listGraphCache(cacheDir).find((e) => e.path === legacy)).toMatchObject({ source: null, architecture: null, graphVersion: null, builtAt: null, bytes: 12 });
  for (const name of ['mine.onnx', 'notes.json']) expect(existsSync(join(graphs, name))).toBe(true);
  expect(listGraphCache(cacheDir).some((e) => e.key === 'mine')).toBe(false);
});

test("another layout version's graph of the same folder (another app version's) stays while used, and goes once stale", () => {
  const fx = writeFixtureModel(join(tmp.path, 'v'));
  const cacheDir = join(tmp.path, 'cache-v');
  const graphs = join(cacheDir, 'graphs');
  mkdirSync(graphs, { recursive: true });
  const otherVersion = (key: string, graphVersion: number) => {
    const path = join(graphs, `${key.repeat(32)}.onnx`);
    writeFileSync(path, 'graph of another app version');
    writeFileSync(sidecarPath(path), JSON.stringify({ source: resolve(fx.dir), graphVersion, architecture: 'llama', precision: 'float32', builtAt: '2026-01-01T00:00:00Z', bytes: 28 }));
    return path;
  };
  const newer = otherVersion('a', GRAPH_VERSION + 1);
  const older = otherVersion('b', GRAPH_VERSION - 1);
  setMtime(older, OTHER_LAYOUT_GRACE_MS + HOUR_MS);
  const { built } = ensureGraph(openModelFolder(fx.dir, cacheDir));
  expect(built).toBe(true);
  expect(existsSync(newer)).toBe(true);
  expect(existsSync(older)).toBe(false);
  expect(existsSync(sidecarPath(older))).toBe(false);
});

test('pruning removes stale leftovers of crashed writes and keeps fresh ones (maybe a write in progress)', () => {
  const fx = writeFixtureModel(join(tmp.path, 'g'));
  const cacheDir = join(tmp.path, 'cache-g');
  const graphs = join(cacheDir, 'graphs');
  mkdirSync(graphs, { recursive: true });
  const key = (c: string) => c.repeat(32);
  const files = {
    staleTmp: `${key('1')}.onnx.4242.tmp`,
    staleDataTmp: `${key('2')}.onnx.data.4242.tmp`,
    freshTmp: `${key('3')}.onnx.4242.tmp`,
    staleOrphanData: `${key('4')}.onnx.data`,
    freshOrphanData: `${key('5')}.onnx.data`,
    orphanSidecar: `${key('6')}.json`,
    foreignTmp: 'download.onnx.1.tmp',
  };
  for (const name of Object.values(files)) writeFileSync(join(graphs, name), 'x');
  writeFileSync(join(graphs, files.orphanSidecar), JSON.stringify({ source: '/gone', graphVersion: 1, architecture: 'llama', builtAt: '2020-01-01T00:00:00Z', bytes: 1 }));
  for (const name of [files.staleTmp, files.staleDataTmp, files.staleOrphanData, files.foreignTmp]) setMtime(join(graphs, name), STALE_LEFTOVER_MS + HOUR_MS);
  setMtime(join(graphs, files.freshTmp), STALE_LEFTOVER_MS - 5 * 60_000);

  const { built, cacheProblems } = ensureGraph(openModelFolder(fx.dir, cacheDir));
  expect(built).toBe(true);
  expect(cacheProblems).toEqual([]);
  const left = new Set(readdirSync(graphs));
  for (const name of [files.staleTmp, files.staleDataTmp, files.staleOrphanData, files.orphanSidecar]) expect(left.has(name), name).toBe(false);
  for (const name of [files.freshTmp, files.freshOrphanData, files.foreignTmp]) expect(left.has(name), name).toBe(true);
});

test('a superseded file that cannot be deleted is reported through onMessage and the load still works', async () => {
  const fx = writeFixtureModel(join(tmp.path, 'h'));
  const cacheDir = join(tmp.path, 'cache-h');
  const oldPath = ensureGraph(openModelFolder(fx.dir, cacheDir)).path;
  // A non-empty folder where the data file would be cannot be removed without recursion.
  mkdirSync(join(`${oldPath}.data`, 'busy'), { recursive: true });
  changeWeights(fx.dir);
  const notes: string[] = [];
  const session = await loadModel(fx.dir, { cacheDir, onMessage: (line) => notes.push(line) });
  const slot = session.allocSlot();
  const r = await session.forward([{ slot, tokens: [7], parents: [-1] }], { argmaxRows: [0] });
  expect(r.argmax![0]).toBe(argmax(referenceForward(fx, [7])[0]));
  await session.release();
  const loadNotes = notes.filter((l) => !l.startsWith('hashing'));
  expect(loadNotes[0]).toMatch(/^built graph .*deleted 1 superseded graph/);
  expect(loadNotes.slice(1)).toEqual([`graph cache: cannot delete ${oldPath}.data (ERR_FS_EISDIR)`]);
  expect(existsSync(oldPath)).toBe(false);
});
