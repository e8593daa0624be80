// A/B of runtime variants in one process (a script, not a test): session options, thread counts
// and graph-builder options of one model folder, loaded side by side and timed in alternating
// blocks, so that the load of a shared machine falls on every variant alike. Prints, per variant,
// the median over blocks of its time ÷ the first variant's time in the same block, with the range,
// and checks that every variant decodes the same greedy tokens as the first.
//
//   npx esbuild bench/runtime-ab.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/runtime-ab.mjs && node node_modules/.cache/bench/runtime-ab.mjs [options]
//
// Options: --model DIR [assets/models/echo-demo-target], --precision float32|int8 [float32],
// --variants a,b,… [t1,t2] (names below; the first is the baseline), --tokens N new tokens per
// forward [1: a decode step; 4: a chain's verification], --blocks N [15], --forwards N per block [40],
// --past N committed rows a block starts from [32].
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { buildGraph, type GraphOptions } from '../src/engine/model/graph-builder.js';
import { writeGraph } from '../src/engine/model/graph-cache.js';
import { openModelFolder, runtimeSessionOptions, weightSource } from '../src/engine/model/loader.js';
import { OrtModelSession } from '../src/engine/model/session.js';
import { precisionArg } from './pair-bench.js';
import { decodeBlock } from './decode-block.js';

interface Variant {
  threads: number;
  spin?: boolean;
  /** Merged over runtimeSessionOptions(threads, spin). */
  session?: ort.InferenceSession.SessionOptions;
  graph?: GraphOptions;
}

const VARIANTS: Record<string, Variant> = {
  t1: { threads: 1 },
  t2: { threads: 2 },
  't2-spin': { threads: 2, spin: true },
  't1-noprepack': { threads: 1, session: { extra: { session: { disable_prepacking: '1' } } } },
  't1-nomempattern': { threads: 1, session: { enableMemPattern: false } },
  't1-noarena': { threads: 1, session: { enableCpuMemArena: false } },
  't1-extended': { threads: 1, session: { graphOptimizationLevel: 'extended' } },
  't1-basic': { threads: 1, session: { graphOptimizationLevel: 'basic' } },
};

const { values: args } = parseArgs({
  options: {
    model: { type: 'string', default: 'assets/models/echo-demo-target' },
    precision: { type: 'string', default: 'float32' },
    variants: { type: 'string', default: 't1,t2' },
    tokens: { type: 'string', default: '1' },
    blocks: { type: 'string', default: '15' },
    forwards: { type: 'string', default: '40' },
    past: { type: 'string', default: '32' },
  },
});
const names = args.variants.split(',');
for (const name of names) if (!(name in VARIANTS)) throw new Error(`unknown variant ${name}; known: ${Object.keys(VARIANTS).join(', ')}`);
const precision = precisionArg(args.precision, '--precision');
const tokens = Number(args.tokens);
const blocks = Number(args.blocks);
const forwards = Number(args.forwards);
const past = Number(args.past);
const scratch = mkdtempSync(join(tmpdir(), 'echo-runtime-ab-'));

const folder = openModelFolder(args.model, join(scratch, 'cache'), precision);
const maxLength = past + forwards * tokens + 8;
const graphs = new Map<string, string>();
async function load(name: string): Promise<OrtModelSession> {
  const v = VARIANTS[name];
  const graphOptions: GraphOptions = { precision, ...v.graph };
  const key = JSON.stringify(graphOptions);
  let path = graphs.get(key);
  if (path === undefined) {
    path = join(scratch, `graph-${graphs.size}.onnx`);
    writeGraph(buildGraph(folder.config, weightSource(folder.weights), graphOptions), path, {});
    graphs.set(key, path);
  }
  const base = runtimeSessionOptions(v.threads, v.spin ?? false);
  type Extra = { session?: Record<string, unknown> };
  const baseExtra = (base.extra ?? {}) as Extra;
  const ownExtra = (v.session?.extra ?? {}) as Extra;
  const extra = { ...baseExtra, ...ownExtra, session: { ...baseExtra.session, ...ownExtra.session } };
  const options = { ...base, ...v.session, extra, executionProviders: ['cpu'] };
  const session = await ort.InferenceSession.create(path, options);
  return new OrtModelSession({ info: folder.info, session, slots: 1, maxLength, provider: 'cpu' });
}
const sessions = [];
for (const name of names) sessions.push(await load(name));

const vocab = folder.info.vocabSize;
const prompt = Array.from({ length: past }, (_, i) => (17 + 31 * i) % vocab);
const block = (session: OrtModelSession) => decodeBlock(session, { prompt, tokens, forwards, vocab });

const ratios: number[][] = names.map(() => []);
const cpuRatios: number[][] = names.map(() => []);
const perForward: number[][] = names.map(() => []);
let reference: number[] | null = null;
const mismatches = new Set<string>();
for (let b = 0; b < blocks + 1; b++) {
  const times: number[] = new Array(names.length);
  const cpuTimes: number[] = new Array(names.length);
  // Rotate the order so no variant always runs first after the previous block's last.
  for (let j = 0; j < names.length; j++) {
    const i = (j + b) % names.length;
    const { ms, cpuMs, output } = await block(sessions[i]);
    times[i] = ms;
    cpuTimes[i] = cpuMs;
    if (i === 0) reference ??= output;
    else if (reference !== null && output.join() !== reference.join()) mismatches.add(names[i]);
  }
  if (b === 0) continue; // warm-up
  for (let i = 0; i < names.length; i++) {
    ratios[i].push(times[i] / times[0]);
    cpuRatios[i].push(cpuTimes[i] / cpuTimes[0]);
    perForward[i].push(times[i] / forwards);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${args.model} (${precision}), ${tokens} new token${tokens === 1 ? '' : 's'} per forward, ${blocks} blocks of ${forwards} forwards, past ${past}+`);
console.log('| variant | wall ÷ first: median | range | CPU time ÷ first: median | range | wall ms per forward (median block) |');
console.log('|---|---:|---:|---:|---:|---:|');
const range = (r: number[]): string => `${Math.min(...r).toFixed(3)}–${Math.max(...r).toFixed(3)}`;
for (let i = 0; i < names.length; i++) {
  const r = ratios[i];
  const c = cpuRatios[i];
  console.log(`| ${names[i]} | ${median(r).toFixed(3)} | ${range(r)} | ${median(c).toFixed(3)} | ${range(c)} | ${median(perForward[i]).toFixed(3)} |`);
}
if (mismatches.size > 0) console.log(`greedy output differs from ${names[0]}'s: ${[...mismatches].join(', ')}`);
else console.log(`greedy output identical to ${names[0]}'s in every variant`);
for (const s of sessions) await s.release();
rmSync(scratch, { recursive: true, force: true });
