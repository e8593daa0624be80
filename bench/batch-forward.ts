// Batch forward bench (a script, not a test): one forward's time against the number of requests
// packed into it (B), the new tokens per request (T) and each request's committed past (L). At
// high load a step's target forward is B requests of 1–8 tokens over long pasts, so attention's
// per-request work (gathering the past, the batched MatMuls, padding to the longest entry)
// matters as much as the N packed rows.
//
//   npx esbuild bench/batch-forward.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/batch-forward.mjs && node node_modules/.cache/bench/batch-forward.mjs [options]
//
// Options: --model DIR [assets/models/echo-demo-target], --precision float32|int8 [float32; int8 for
// a draft], --threads N [2], --reps N [30: the median is printed].
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../src/engine/model/index.js';
import { precisionArg } from './pair-bench.js';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string', default: 'assets/models/echo-demo-target' },
    precision: { type: 'string', default: 'float32' },
    threads: { type: 'string', default: '2' },
    reps: { type: 'string', default: '30' },
  },
});
const PASTS = [16, 64, 128];
/** New tokens per request: B × T, and a high-load step's shape, a few deep trees among one-token roots. */
const uniform = (batch: number, tokens: number) => ({ name: `B ${batch} × T ${tokens}`, lengths: new Array<number>(batch).fill(tokens) });
const SHAPES = [
  uniform(1, 1),
  uniform(1, 64),
  uniform(16, 1),
  uniform(16, 4),
  uniform(64, 1),
  uniform(64, 2),
  { name: '62 × 1 + 8 + 6', lengths: [...new Array<number>(62).fill(1), 8, 6] },
];
const maxBatch = Math.max(...SHAPES.map((shape) => shape.lengths.length));
const maxLength = Math.max(...PASTS) + Math.max(...SHAPES.flatMap((shape) => shape.lengths));
const reps = Number(args.reps);
const cacheDir = mkdtempSync(join(tmpdir(), 'echo-bench-'));
const model = await loadModel(args.model, {
  slots: maxBatch,
  maxLength,
  threads: Number(args.threads),
  precision: precisionArg(args.precision, '--precision'),
  cacheDir,
});
const vocab = model.info.vocabSize;
const chain = (length: number, offset: number) => ({
  tokens: Int32Array.from({ length }, (_, i) => (17 + 31 * (i + offset)) % vocab),
  parents: Int32Array.from({ length }, (_, i) => i - 1),
});

/** Median run time of a forward of one request per length with that many new tokens, argmax on every row. */
async function timeForward(slots: number[], lengths: number[]): Promise<number> {
  const times: number[] = [];
  const rows = lengths.reduce((a, b) => a + b, 0);
  for (let r = 0; r < reps; r++) {
    const entries = lengths.map((tokens, i) => ({ slot: slots[i], ...chain(tokens, r) }));
    const result = await model.forward(entries, { argmaxRows: Array.from({ length: rows }, (_, i) => i) });
    times.push(result.runMs);
    for (const slot of slots.slice(0, lengths.length)) model.clearScratch(slot);
  }
  return times.sort((a, b) => a - b)[Math.floor(reps / 2)];
}

console.log(`model: ${args.model} (${args.precision}), threads ${args.threads}; median of ${reps} forwards, ms`);
console.log(`| past L | ${SHAPES.map((shape) => shape.name).join(' | ')} |`);
console.log(`|---:|${SHAPES.map(() => '---:').join('|')}|`);
let slots: number[] = [];
for (const past of PASTS) {
  for (const slot of slots) model.freeSlot(slot);
  slots = [];
  for (let i = 0; i < maxBatch; i++) {
    const slot = model.allocSlot();
    await model.forward([{ slot, ...chain(past, i) }], {});
    model.commit(slot, Array.from({ length: past }, (_, j) => j));
    slots.push(slot);
  }
  const cells: string[] = [];
  for (const shape of SHAPES) cells.push((await timeForward(slots, shape.lengths)).toFixed(2));
  console.log(`| ${past} | ${cells.join(' | ')} |`);
}
await model.release();
rmSync(cacheDir, { recursive: true, force: true });
