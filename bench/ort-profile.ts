// Where a small forward's time goes (a script, not a test): onnxruntime's own profiler on the
// target and draft graphs, forwards of 1, 4 and 32 new tokens of one request over a committed
// past, aggregated per operator type. Also prints the part of run() that no kernel accounts for
// (onnxruntime's per-call work: feeds, allocation, scheduling, thread wake-ups, outputs).
//
//   npx esbuild bench/ort-profile.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/ort-profile.mjs && node node_modules/.cache/bench/ort-profile.mjs [options]
//
// Options: --target DIR [assets/models/echo-demo-target], --draft DIR [assets/models/echo-demo-draft],
// --tokens 1,4,32, --past N committed rows [64], --runs N profiled forwards per shape [200],
// --threads N [1], --draft-precision int8|float32|both [both], --top N operator types per table [12].
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { ensureGraph, openModelFolder, runtimeSessionOptions } from '../src/engine/model/loader.js';
import { OrtModelSession } from '../src/engine/model/session.js';
import type { WeightPrecision } from '../src/shared/config.js';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    tokens: { type: 'string', default: '1,4,32' },
    past: { type: 'string', default: '64' },
    runs: { type: 'string', default: '200' },
    threads: { type: 'string', default: '1' },
    'draft-precision': { type: 'string', default: 'both' },
    top: { type: 'string', default: '12' },
  },
});
const tokenCounts = args.tokens.split(',').map(Number);
const past = Number(args.past);
const runs = Number(args.runs);
const threads = Number(args.threads);
const top = Number(args.top);
const scratch = mkdtempSync(join(tmpdir(), 'echo-ort-profile-'));

interface ProfileEvent {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string };
}

/** One model's forwards of `tokens` new tokens, profiled: per op type µs per forward, and run() µs per forward. */
async function profile(
  dir: string,
  precision: WeightPrecision,
  tokens: number,
  profiled: boolean,
): Promise<{ byOp: Map<string, number>; kernels: number; run: number; medianRun: number; nodes: number }> {
  const folder = openModelFolder(dir, join(scratch, 'cache'), precision);
  const { path } = ensureGraph(folder);
  const prefix = join(scratch, `${folder.cacheKey}-${tokens}`);
  const profiling = profiled ? { enableProfiling: true, profileFilePrefix: prefix } : {};
  const ortSession = await ort.InferenceSession.create(path, { ...runtimeSessionOptions(threads, false), ...profiling, executionProviders: ['cpu'] });
  const maxLength = past + Math.max(...tokenCounts) + 8;
  const session = new OrtModelSession({ info: folder.info, session: ortSession, slots: 1, maxLength, provider: 'cpu' });
  const vocab = folder.info.vocabSize;
  const slot = session.allocSlot();
  const prefix0 = Array.from({ length: past }, (_, i) => (17 + 31 * i) % vocab);
  await session.forward([{ slot, tokens: prefix0, parents: prefix0.map((_, i) => i - 1) }], {});
  session.commit(slot, prefix0.map((_, i) => i));
  const entry = { slot, tokens: Array.from({ length: tokens }, (_, i) => (5 + 7 * i) % vocab), parents: Array.from({ length: tokens }, (_, i) => i - 1) };
  // Verification asks for the argmax of every row; a draft of the last one: the same graph work per row.
  const rows = Array.from({ length: tokens }, (_, i) => i);
  const times: number[] = [];
  for (let r = 0; r < 20 + runs; r++) {
    times.push((await session.forward([entry], { argmaxRows: rows })).runMs * 1000);
    session.clearScratch(slot);
  }
  const medianRun = times.slice(20).sort((a, b) => a - b)[Math.floor(runs / 2)];
  if (!profiled) {
    await session.release();
    return { byOp: new Map(), kernels: 0, run: 0, medianRun, nodes: 0 };
  }
  ortSession.endProfiling();
  await session.release();
  const file = readdirSync(scratch).find((f) => f.startsWith(`${folder.cacheKey}-${tokens}`) && f.endsWith('.json'));
  if (file === undefined) throw new Error(`no profile written for ${dir}`);
  const events = JSON.parse(readFileSync(join(scratch, file), 'utf8')) as ProfileEvent[];
  // The first forwards (prefill, warm-up) are left out: keep the last `runs` model_run events and the kernels after them.
  const runEvents = events.filter((e) => e.cat === 'Session' && e.name === 'model_run');
  const kept = runEvents.slice(-runs);
  const runTotal = kept.reduce((s, e) => s + e.dur, 0);
  // A run's kernel events precede its model_run event in the file: start after the last dropped run.
  const start = events.indexOf(runEvents[runEvents.length - runs - 1]) + 1;
  const byOp = new Map<string, number>();
  let kernels = 0;
  let nodes = 0;
  for (const e of events.slice(start)) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const op = e.args?.op_name ?? '?';
    byOp.set(op, (byOp.get(op) ?? 0) + e.dur / runs);
    kernels += e.dur / runs;
    nodes++;
  }
  return { byOp, kernels, run: runTotal / runs, medianRun, nodes: nodes / runs };
}

const models: { name: string; dir: string; precision: WeightPrecision }[] = [{ name: 'target float32', dir: args.target, precision: 'float32' }];
const draftPrecisions: WeightPrecision[] = args['draft-precision'] === 'both' ? ['int8', 'float32'] : [args['draft-precision'] as WeightPrecision];
for (const p of draftPrecisions) models.push({ name: `draft ${p}`, dir: args.draft, precision: p });

console.log(`onnxruntime profiler, ${threads} thread${threads === 1 ? '' : 's'}, one request over ${past} committed rows, ${runs} profiled forwards per shape (µs per forward)`);
for (const m of models) {
  for (const tokens of tokenCounts) {
    // The profiler adds its own cost to every kernel it times: the same forwards unprofiled, before
    // and after, give run()'s real time.
    const before = await profile(m.dir, m.precision, tokens, false);
    const p = await profile(m.dir, m.precision, tokens, true);
    const after = await profile(m.dir, m.precision, tokens, false);
    const sorted = [...p.byOp.entries()].sort((a, b) => b[1] - a[1]);
    console.log('');
    console.log(
      `${m.name}, ${tokens} token${tokens === 1 ? '' : 's'}: unprofiled run() median ${before.medianRun.toFixed(0)} / ${after.medianRun.toFixed(0)} µs; ` +
        `profiled run() mean ${p.run.toFixed(0)} µs, of which kernels ${p.kernels.toFixed(0)} µs (${p.nodes.toFixed(0)} kernels)`,
    );
    console.log('| op | µs (profiled) | share of kernel time |');
    console.log('|---|---:|---:|');
    for (const [op, us] of sorted.slice(0, top)) console.log(`| ${op} | ${us.toFixed(1)} | ${((100 * us) / p.kernels).toFixed(1)} % |`);
    const rest = sorted.slice(top).reduce((s, [, us]) => s + us, 0);
    if (rest > 0) console.log(`| (${sorted.length - top} others) | ${rest.toFixed(1)} | ${((100 * rest) / p.kernels).toFixed(1)} % |`);
  }
}
rmSync(scratch, { recursive: true, force: true });
