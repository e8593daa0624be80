// Model runtime bench (a script, not a test): cold and cached load time, target forward time
// against packed token count (1 … 512) on CPU, and the KV cache staying at its kept length.
//
//   npx esbuild bench/model-forward.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/model-forward.mjs && node node_modules/.cache/bench/model-forward.mjs [options]
//
// Options: --model DIR (default assets/models/echo-demo-target, else a random Llama shaped like
// it), --threads N (default 2), --past N committed rows before each forward (default 128).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel, type OrtModelSession } from '../src/engine/model/index.js';
import { writeFixtureModel } from '../test/engine/model/fixtures.js';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    threads: { type: 'string', default: '2' },
    past: { type: 'string', default: '128' },
  },
});
const threads = Number(args.threads);
const past = Number(args.past);
const scratch = mkdtempSync(join(tmpdir(), 'echo-bench-'));
const cacheDir = join(scratch, 'cache');

let dir = args.model ?? 'assets/models/echo-demo-target';
let what = dir;
if (!existsSync(join(dir, 'config.json'))) {
  // Same shape as the demo target: Llama, hidden 256, 6 layers, 8 heads / 4 KV heads, vocab 4096, tied.
  dir = join(scratch, 'random-target');
  writeFixtureModel(dir, { hiddenSize: 256, intermediateSize: 688, numLayers: 6, numHeads: 8, numKvHeads: 4, vocabSize: 4096, tieWordEmbeddings: true });
  what = 'random Llama shaped like the demo target (hidden 256, 6 layers, 8/4 heads, vocab 4096)';
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (n: number): string => (n / (1 << 20)).toFixed(1);

async function timedLoad(): Promise<[OrtModelSession, number]> {
  const t0 = performance.now();
  const s = await loadModel(dir, { threads, slots: 16, maxLength: 1024, cacheDir });
  return [s, performance.now() - t0];
}

const [cold, coldMs] = await timedLoad();
await cold.release();
const loads: number[] = [];
let session: OrtModelSession | null = null;
for (let i = 0; i < 3; i++) {
  if (session) await session.release();
  const [s, ms] = await timedLoad();
  session = s;
  loads.push(ms);
}
const model = session!;
console.log(`model: ${what}`);
console.log(`parameters ${model.info.parameters.toLocaleString('en-US')}, threads ${threads}, past ${past} committed rows`);
console.log(`load: first (builds the graph) ${coldMs.toFixed(0)} ms; cached ${loads.map((x) => x.toFixed(0)).join(' / ')} ms`);
console.log('');

const vocab = model.info.vocabSize;
const token = (i: number): number => (17 + 31 * i) % vocab;
const pastSlots: number[] = [];
async function slotWithPast(): Promise<number> {
  const slot = model.allocSlot();
  const prefix = Array.from({ length: past }, (_, i) => token(i));
  await model.forward([{ slot, tokens: prefix, parents: prefix.map((_, i) => i - 1) }], {});
  model.commit(slot, prefix.map((_, i) => i));
  pastSlots.push(slot);
  return slot;
}
const oneReq = await slotWithPast();
const eightReqs: number[] = [];
for (let i = 0; i < 8; i++) eightReqs.push(await slotWithPast());

/** A tree-shaped entry: node i hangs off node floor((i-1)/2) (binary tree), like a verify tree. */
function tree(slot: number, n: number) {
  return { slot, tokens: Array.from({ length: n }, (_, i) => token(i + 5)), parents: Array.from({ length: n }, (_, i) => (i === 0 ? -1 : Math.floor((i - 1) / 2))) };
}

/** Median and minimum run() ms; on a busy machine the minimum is the better estimate of the cost. */
async function timeForward(entries: ReturnType<typeof tree>[]): Promise<{ median: number; min: number }> {
  const n = entries.reduce((s, e) => s + e.tokens.length, 0);
  const rows = Array.from({ length: n }, (_, i) => i);
  const reps = Math.max(5, Math.min(30, Math.floor(3000 / n)));
  const times: number[] = [];
  for (let r = 0; r < reps + 2; r++) {
    const res = await model.forward(entries, { argmaxRows: rows });
    for (const e of entries) model.clearScratch(e.slot);
    if (r >= 2) times.push(res.runMs);
  }
  return { median: median(times), min: Math.min(...times) };
}

console.log('| packed tokens | 1 request: median ms | min ms | 8 requests: median ms | min ms |');
console.log('|---:|---:|---:|---:|---:|');
for (const n of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]) {
  const single = await timeForward([tree(oneReq, n)]);
  const multi = n >= 8 ? await timeForward(eightReqs.map((s) => tree(s, n / 8))) : null;
  const cells = [single.median, single.min, multi?.median, multi?.min].map((x) => (x === undefined ? '' : x.toFixed(2)));
  console.log(`| ${n} | ${cells.join(' | ')} |`);
}
console.log('');

// KV memory: 300 speculative steps (tree of 8, keep a path of 3) on one slot; the buffers are fixed
// at load and a slot's rows equal its kept length.
model.freeSlot(oneReq);
const slot = model.allocSlot();
await model.forward([{ slot, tokens: [1, 2, 3, 4], parents: [-1, 0, 1, 2] }], {});
model.commit(slot, [0, 1, 2, 3]);
let kept = 4;
const rssBefore = process.memoryUsage();
for (let step = 0; step < 250; step++) {
  await model.forward([{ slot, tokens: [5, 6, 7, 8, 9, 10, 11, 12], parents: [-1, 0, 0, 1, 1, 2, 3, 4] }], { argmaxRows: [0, 1, 2, 3, 4, 5, 6, 7] });
  model.commit(slot, [0, 1, 3]);
  kept += 3;
  if (model.committedLength(slot) !== kept || model.scratchSize(slot) !== 0) throw new Error(`slot length ${model.committedLength(slot)} != kept ${kept}`);
}
const rssAfter = process.memoryUsage();
console.log(`KV buffers: ${mib(model.kvBufferBytes)} MiB fixed at load (16 slots x 1024 rows); after 250 steps the slot holds ${model.committedLength(slot)} rows = ${kept} kept`);
console.log(`process RSS ${mib(rssBefore.rss)} → ${mib(rssAfter.rss)} MiB, array buffers ${mib(rssBefore.arrayBuffers)} → ${mib(rssAfter.arrayBuffers)} MiB over those 250 steps`);
await model.release();
rmSync(scratch, { recursive: true, force: true });
