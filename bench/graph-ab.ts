// A/B of this tree's graph and session against an older revision's, in one process (a script, not
// a test): both sessions load the same model folder, each through its own revision's loader,
// graph builder and session, and alternate in blocks of greedy forwards, so the load of a shared
// machine falls on both alike. Prints the median over blocks of new ÷ baseline time in the same
// block, with the range, and checks that both decode the same greedy tokens and that the logits of
// a few forwards are the same bits.
//
//   rm -rf node_modules/.cache/baseline && mkdir -p node_modules/.cache/baseline && \
//     git archive REV src | tar -x -C node_modules/.cache/baseline && \
//   npx esbuild bench/graph-ab.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/graph-ab.mjs && node node_modules/.cache/bench/graph-ab.mjs [options]
//
// Options: --model DIR [assets/models/echo-demo-target], --precision float32|int8|int4 [float32],
// --tokens N new tokens per forward [1: a decode step; 4: a chain's verification], --blocks N [21],
// --forwards N per block [40], --past N committed rows a block starts from [32], --threads N [1].
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
// The baseline exists only after the git-archive step above, so the type checker must not insist
// on it (a clean tree has none); esbuild still bundles it, and it is used through newLoader's types.
// @ts-ignore
import * as baseLoader from '../node_modules/.cache/baseline/src/engine/model/loader.js';
// @ts-ignore
import * as baseSession from '../node_modules/.cache/baseline/src/engine/model/session.js';
import * as newLoader from '../src/engine/model/loader.js';
import * as newSession from '../src/engine/model/session.js';
import { precisionArg } from './pair-bench.js';
import { decodeBlock, type Forwarding as BlockModel } from './decode-block.js';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string', default: 'assets/models/echo-demo-target' },
    precision: { type: 'string', default: 'float32' },
    tokens: { type: 'string', default: '1' },
    blocks: { type: 'string', default: '21' },
    forwards: { type: 'string', default: '40' },
    past: { type: 'string', default: '32' },
    threads: { type: 'string', default: '1' },
  },
});
const precision = precisionArg(args.precision, '--precision');
const tokens = Number(args.tokens);
const blocks = Number(args.blocks);
const forwards = Number(args.forwards);
const past = Number(args.past);
const threads = Number(args.threads);
const scratch = mkdtempSync(join(tmpdir(), 'echo-graph-ab-'));
const maxLength = past + forwards * tokens + 8;

interface Forwarding extends BlockModel {
  release(): Promise<void>;
}

async function load(loader: typeof newLoader, session: typeof newSession, name: string): Promise<{ model: Forwarding; nodes: number; vocab: number }> {
  const folder = loader.openModelFolder(args.model, join(scratch, name), precision);
  const { path } = loader.ensureGraph(folder);
  const ortSession = await ort.InferenceSession.create(path, { ...loader.runtimeSessionOptions(threads, false), executionProviders: ['cpu'] });
  const model = new session.OrtModelSession({ info: folder.info, session: ortSession, slots: 1, maxLength, provider: 'cpu' }) as unknown as Forwarding;
  return { model, nodes: 0, vocab: folder.info.vocabSize };
}
const base = await load(baseLoader as unknown as typeof newLoader, baseSession as unknown as typeof newSession, 'baseline');
const next = await load(newLoader, newSession, 'new');
const vocab = base.vocab;
const prompt = Array.from({ length: past }, (_, i) => (17 + 31 * i) % vocab);

const block = (model: Forwarding, logitsOf: number) => decodeBlock(model, { prompt, tokens, forwards, vocab, logitsOf });

// Untimed: the logits of the first forwards of a block, compared bit for bit.
const a = await block(base.model, 8);
const b = await block(next.model, 8);
let differing = 0;
let maxAbs = 0;
for (let f = 0; f < a.logits.length; f++) {
  for (let i = 0; i < a.logits[f].length; i++) {
    if (a.logits[f][i] !== b.logits[f][i]) differing++;
    maxAbs = Math.max(maxAbs, Math.abs(a.logits[f][i] - b.logits[f][i]));
  }
}
const ratios: number[] = [];
const cpuRatios: number[] = [];
const perForward: [number[], number[]] = [[], []];
let sameTokens = a.output.join() === b.output.join();
for (let k = 0; k < blocks + 1; k++) {
  // Alternate which goes first.
  const order = k % 2 === 0 ? [0, 1] : [1, 0];
  const times = [0, 0];
  const cpuTimes = [0, 0];
  const outputs: number[][] = [[], []];
  for (const i of order) {
    const r = await block(i === 0 ? base.model : next.model, 0);
    times[i] = r.ms;
    cpuTimes[i] = r.cpuMs;
    outputs[i] = r.output;
  }
  sameTokens &&= outputs[0].join() === outputs[1].join();
  if (k === 0) continue; // warm-up
  ratios.push(times[1] / times[0]);
  cpuRatios.push(cpuTimes[1] / cpuTimes[0]);
  perForward[0].push(times[0] / forwards);
  perForward[1].push(times[1] / forwards);
}
const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const q = (xs: number[], p: number): number => [...xs].sort((x, y) => x - y)[Math.round(p * (xs.length - 1))];
console.log(`${args.model} (${precision}), ${tokens} new token${tokens === 1 ? '' : 's'} per forward, ${threads} thread${threads === 1 ? '' : 's'}, ${blocks} blocks of ${forwards} forwards, past ${past}+`);
console.log(
  `new ÷ baseline wall time: median ${median(ratios).toFixed(3)}, interquartile ${q(ratios, 0.25).toFixed(3)}–${q(ratios, 0.75).toFixed(3)}, ` +
    `range ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}; ms per forward (median block): baseline ${median(perForward[0]).toFixed(3)}, new ${median(perForward[1]).toFixed(3)}`,
);
console.log(
  `new ÷ baseline CPU time (the process's, less sensitive to other jobs): median ${median(cpuRatios).toFixed(3)}, interquartile ${q(cpuRatios, 0.25).toFixed(3)}–${q(cpuRatios, 0.75).toFixed(3)}, ` +
    `range ${Math.min(...cpuRatios).toFixed(3)}–${Math.max(...cpuRatios).toFixed(3)}`,
);
console.log(`greedy tokens ${sameTokens ? 'identical' : 'DIFFER'} in every block; logits of ${a.logits.length} forwards: ${differing} of ${a.logits.length * a.logits[0].length} values differ (largest difference ${maxAbs})`);
await base.model.release();
await next.model.release();
rmSync(scratch, { recursive: true, force: true });
