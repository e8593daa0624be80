// `model info`, `model check` and `model cache` through commander, as the CLI runs them.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CommanderError } from 'commander';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { register } from '../../../src/cli/commands/model.js';
import { ensureGraph, GRAPH_VERSION, ModelLoadError, openModelFolder } from '../../../src/engine/model/index.js';
import { writeFixtureModel, type FixtureModel } from '../../engine/model/fixtures.js';
import { argmax, tempDir } from '../../engine/model/helpers.js';
import { referenceForward } from '../../engine/model/reference.js';
import { runCli } from '../helpers.js';
import { writePassThroughHead } from '../../engine/fixtures/head.js';

const tmp = tempDir();
let fx: FixtureModel;
const savedCache = process.env.ECHO_STUDIO_CACHE;
beforeAll(() => {
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  fx = writeFixtureModel(join(tmp.path, 'm'), { architecture: 'qwen2', tieWordEmbeddings: true });
});
afterAll(() => {
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

const run = async (args: string[]): Promise<string> => (await runCli(register, args)).stdout;

test('model info reports architecture, parameters, dtype, vocabulary and cache status', async () => {
  const before = JSON.parse(await run(['model', 'info', fx.dir, '--json']));
  expect(before.architecture).toBe('qwen2');
  const expectedParams = [...fx.tensors.values()].reduce((s, t) => s + t.data.length, 0);
  expect(before.parameters).toBe(expectedParams);
  expect(before.dtype).toBe('float32');
  expect(before.vocabSize).toBe(fx.vocabSize);
  expect(before.tokenizerVocabSize).toBe(fx.vocabSize);
  expect(before.graphCached).toBe(false);
  await run(['model', 'check', fx.dir, '--text', 'hi', '--json']);
  const text = await run(['model', 'info', fx.dir]);
  expect(text).toMatch(/architecture\s+qwen2/);
  expect(text).toMatch(/graph cache\s+built/);
});

test('model info warns, in one line and in the JSON, when the tokenizer holds more ids than config.json\'s vocab_size', async () => {
  const dir = join(tmp.path, 'wide-tokenizer');
  const wide = writeFixtureModel(dir, {});
  const path = join(dir, 'tokenizer.json');
  const json = JSON.parse(readFileSync(path, 'utf8')) as { model: { vocab: Record<string, number> } };
  for (let i = 0; i < 200; i++) json.model.vocab[`zz${i}`] = wide.vocabSize + i;
  writeFileSync(path, JSON.stringify(json));
  const r = JSON.parse(await run(['model', 'info', dir, '--json']));
  expect(r.tokenizerVocabSize).toBeNull();
  expect(r.tokenizerProblem).toMatch(new RegExp(`holds ${wide.vocabSize + 200} token ids but config.json's vocab_size is ${wide.vocabSize}`));
  const text = await run(['model', 'info', dir]);
  expect(text).toMatch(new RegExp(`vocabulary\\s+${wide.vocabSize} \\(model\\); warning: tokenizer not usable: .*tokenizer.json: holds ${wide.vocabSize + 200} token ids`));
  expect(JSON.parse(await run(['model', 'info', fx.dir, '--json'])).tokenizerProblem).toBeNull();
});

test('model check --json gives the token ids and the top-5 next tokens with logits at each position', async () => {
  const text = 'the cat and the hat';
  const r = JSON.parse(await run(['model', 'check', fx.dir, '--text', text, '--json']));
  expect(r.tokens[0]).toBe(fx.config.bos_token_id);
  expect(r.positions).toHaveLength(r.tokens.length);
  const ref = referenceForward(fx, r.tokens);
  r.positions.forEach((p: { top: { id: number; token: string; logit: number }[] }, i: number) => {
    expect(p.top).toHaveLength(5);
    expect(p.top[0].id).toBe(argmax(ref[i]));
    expect(Math.abs(p.top[0].logit - ref[i][p.top[0].id])).toBeLessThan(1e-4);
    for (let j = 1; j < 5; j++) expect(p.top[j].logit).toBeLessThanOrEqual(p.top[j - 1].logit);
    expect(typeof p.top[0].token).toBe('string');
  });
  const human = await run(['model', 'check', fx.dir, '--text', text]);
  expect(human.split('\n')[0]).toBe(`tokens (${r.tokens.length}): ${r.tokens.join(' ')}`);
});

test('model check HEAD --target TARGET: the head teacher-forced, its predictions in the target ids, one position on', async () => {
  // The pass-through head's row for tokens[i] reads the target's last hidden state at tokens[i − 1]
  // and projects it as the target does: its position i must repeat the target's position i − 1.
  const headDir = join(tmp.path, 'head');
  writePassThroughHead(headDir, fx, { draftIds: Array.from({ length: 200 }, (_, i) => i + 3) });
  const text = 'the cat and the hat';
  const model = JSON.parse(await run(['model', 'check', fx.dir, '--text', text, '--json']));
  const head = JSON.parse(await run(['model', 'check', headDir, '--target', fx.dir, '--text', text, '--json']));
  expect(head.tokens).toEqual(model.tokens);
  expect(head.positions).toHaveLength(model.tokens.length);
  expect(head.positions[0].top).toEqual([]);
  type Top = { id: number; token: string; logit: number }[];
  for (let i = 1; i < head.positions.length; i++) {
    const want = (model.positions[i - 1].top as Top).filter((t) => t.id >= 3 && t.id < 203);
    const got = head.positions[i].top as Top;
    expect(got).toHaveLength(5);
    expect(got[0].id).toBe(want[0].id);
    expect(Math.abs(got[0].logit - want[0].logit)).toBeLessThan(1e-3);
    expect(got[0].token).toBe(want[0].token);
  }
  await expect(run(['model', 'check', headDir, '--text', text])).rejects.toThrow(/is an EAGLE-3 head: give the target/);
});

test('model info HEAD describes an EAGLE-3 head without its target; a head is refused where a model runs', async () => {
  const headDir = join(tmp.path, 'head-info');
  writePassThroughHead(headDir, fx, { draftIds: Array.from({ length: 200 }, (_, i) => i + 3), ownEmbedding: true });
  const r = JSON.parse(await run(['model', 'info', headDir, '--json']));
  expect(r.kind).toBe('eagle3-head');
  expect(r.architecture).toBe('LlamaForCausalLMEagle3');
  expect(r.draftVocabSize).toBe(200);
  expect(r.vocabSize).toBe(fx.vocabSize);
  expect(r.targetHiddenSize).toBe(fx.hiddenSize);
  expect(r.featureLayers).toEqual([0, fx.numLayers - 1, fx.numLayers - 1]);
  expect(r.ownEmbedding).toBe(true);
  const H = fx.hiddenSize;
  // fc, q/k/v/o, three norms + final norm, MLP, lm_head and the embedding (d2t and t2d are maps, not weights)
  const expected = H * 3 * H + 3 * H * 2 * H + H * H + 4 * H + 3 * H * H + 200 * H + fx.vocabSize * H;
  expect(r.parameters).toBe(expected);
  const text = await run(['model', 'info', headDir]);
  expect(text).toMatch(/architecture\s+LlamaForCausalLMEagle3 \(an EAGLE-3 draft head/);
  expect(text).toMatch(/features\s+3 × \d+: outputs of layers 0, \d, \d/);
  expect(text).toMatch(/vocabulary\s+drafts over 200 of the target's \d+ ids/);
  // Run as a model (model check without --target is covered above): one line naming what fits.
  expect(() => openModelFolder(headDir)).toThrow(/LlamaForCausalLMEagle3 is an EAGLE-3 head, not a language model.*a language model folder .* fits here/);
});

test('a bad folder is a ModelLoadError with one line naming the file', async () => {
  await expect(run(['model', 'info', join(tmp.path, 'missing')])).rejects.toThrow(ModelLoadError);
  await expect(run(['model', 'check', join(tmp.path, 'missing'), '--text', 'x'])).rejects.toThrow(/missing: folder does not exist/);
});

/** Runs `fn` with $ECHO_STUDIO_CACHE pointing at a cache of its own. */
async function withCache(name: string, fn: (cacheDir: string) => Promise<void>): Promise<void> {
  const cacheDir = join(tmp.path, name);
  const saved = process.env.ECHO_STUDIO_CACHE;
  process.env.ECHO_STUDIO_CACHE = cacheDir;
  try {
    await fn(cacheDir);
  } finally {
    process.env.ECHO_STUDIO_CACHE = saved;
  }
}

const DAY_MS = 24 * 60 * 60 * 1000;
const daysAgo = (path: string, days: number) => {
  const t = new Date(Date.now() - days * DAY_MS);
  utimesSync(path, t, t);
};

test('model cache --json lists each graph with its source, architecture, version and size on disk, and the total', async () => {
  await withCache('cache-list', async (cacheDir) => {
    const a = writeFixtureModel(join(tmp.path, 'list-a'), { hiddenSize: 32 });
    const b = writeFixtureModel(join(tmp.path, 'list-b'), { architecture: 'qwen2', hiddenSize: 16 });
    expect(JSON.parse(await run(['model', 'cache', '--json']))).toEqual({ dir: join(cacheDir, 'graphs'), entries: [], totalBytes: 0 });
    const pathA = ensureGraph(openModelFolder(a.dir, cacheDir), 0).path; // external data: counted too
    const pathB = ensureGraph(openModelFolder(b.dir, cacheDir)).path;
    const legacy = join(cacheDir, 'graphs', `${'a'.repeat(32)}.onnx`);
    writeFileSync(legacy, 'graph written before sidecars');
    writeFileSync(join(cacheDir, 'graphs', 'mine.onnx'), 'not a cache entry');
    daysAgo(pathA, 3);
    daysAgo(legacy, 1);

    const r = JSON.parse(await run(['model', 'cache', '--json']));
    const sizeA = statSync(pathA).size + statSync(`${pathA}.data`).size;
    const sizeB = statSync(pathB).size;
    expect(r.entries.map((e: { path: string }) => e.path)).toEqual([pathB, legacy, pathA]); // most recently used first
    expect(r.entries[0]).toMatchObject({ source: resolve(b.dir), architecture: 'qwen2', graphVersion: GRAPH_VERSION, bytes: sizeB });
    expect(r.entries[1]).toMatchObject({ source: null, architecture: null, graphVersion: null, builtAt: null, bytes: 29 });
    expect(r.entries[2]).toMatchObject({ source: resolve(a.dir), architecture: 'llama', graphVersion: GRAPH_VERSION, bytes: sizeA });
    expect(Date.parse(r.entries[2].lastUsedAt)).toBeCloseTo(Date.now() - 3 * DAY_MS, -5);
    expect(r.totalBytes).toBe(sizeA + sizeB + 29);

    const text = await run(['model', 'cache']);
    expect(text).toContain(resolve(a.dir));
    expect(text).toMatch(new RegExp(`^${'a'.repeat(32)}\\s+unknown\\s+v\\?.*unknown source$`, 'm'));
    expect(text.trim().split('\n').at(-1)).toMatch(/^total 3 graphs, [\d.]+ KiB$/);
  });
});

test('model cache --prune-unused DAYS deletes by last use, --clear deletes every graph but no foreign file', async () => {
  await withCache('cache-prune', async (cacheDir) => {
    const a = writeFixtureModel(join(tmp.path, 'prune-a'), { hiddenSize: 32 });
    const b = writeFixtureModel(join(tmp.path, 'prune-b'), { hiddenSize: 16 });
    const pathA = ensureGraph(openModelFolder(a.dir, cacheDir), 0).path;
    const pathB = ensureGraph(openModelFolder(b.dir, cacheDir)).path;
    writeFileSync(join(cacheDir, 'graphs', 'mine.onnx'), 'not a cache entry');
    daysAgo(pathA, 10);
    daysAgo(pathB, 2);
    const listed = async () => JSON.parse(await run(['model', 'cache', '--json'])).entries.map((e: { path: string }) => e.path);

    expect(JSON.parse(await run(['model', 'cache', '--prune-unused', '11', '--json'])).removed).toEqual([]);
    expect(await listed()).toEqual([pathB, pathA]);
    const sizeA = statSync(pathA).size + statSync(`${pathA}.data`).size;
    const pruned = JSON.parse(await run(['model', 'cache', '--prune-unused', '5', '--json']));
    expect(pruned.removed.map((e: { path: string }) => e.path)).toEqual([pathA]);
    expect(pruned.freedBytes).toBe(sizeA);
    expect(existsSync(`${pathA}.data`)).toBe(false);
    expect(await listed()).toEqual([pathB]);
    const sizeB = statSync(pathB).size;
    expect(await run(['model', 'cache', '--prune-unused', '0'])).toBe(`deleted 1 graph (${(sizeB / 1024).toFixed(1)} KiB) from ${join(cacheDir, 'graphs')}\n`);
    expect(await listed()).toEqual([]);

    ensureGraph(openModelFolder(a.dir, cacheDir));
    ensureGraph(openModelFolder(b.dir, cacheDir));
    expect(await listed()).toHaveLength(2);
    expect(JSON.parse(await run(['model', 'cache', '--clear', '--json'])).removed).toHaveLength(2);
    expect(await listed()).toEqual([]);
    expect(readdirSync(join(cacheDir, 'graphs'))).toEqual(['mine.onnx']);
  });
});

test('model cache: bad flags and undeletable files are one-line errors', async () => {
  await withCache('cache-errors', async (cacheDir) => {
    await expect(run(['model', 'cache', '--clear', '--prune-unused', '1'])).rejects.toThrow(CommanderError);
    await expect(run(['model', 'cache', '--prune-unused', 'soon'])).rejects.toThrow(/expected a number of days/);
    const fxE = writeFixtureModel(join(tmp.path, 'errors-m'));
    const path = ensureGraph(openModelFolder(fxE.dir, cacheDir)).path;
    mkdirSync(join(`${path}.data`, 'busy'), { recursive: true }); // a folder rmSync will not delete
    await expect(run(['model', 'cache', '--clear'])).rejects.toThrow(new Error(`${path}.data: cannot delete (ERR_FS_EISDIR)`));
    expect(existsSync(path)).toBe(false);
  });
});
