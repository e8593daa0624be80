// Pairs each run's steps with the baseline run's same step (a script, not a test): from a
// `sweep --steps FILE`, per batch size and entry, step k of round r against the baseline's step k of
// round r, where neither prefilled. In lockstep the two ran within a step of each other, so the
// machine's drift falls on both; what differs is the onnxruntime calls and the engine's own work
// around them. An entry run again (`--control`, BASELINE#2) reads how far two identical runs differ.
//
//   npx esbuild bench/step-pairs.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/step-pairs.mjs && \
//     node node_modules/.cache/bench/step-pairs.mjs --steps steps.csv [--baseline ar]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { percentile } from '../src/engine/metrics/percentile.js';

const { values: args } = parseArgs({ options: { steps: { type: 'string' }, baseline: { type: 'string', default: 'ar' } } });
if (!args.steps) throw new Error('--steps FILE (from `echo-studio sweep --steps FILE`) is required');

interface Step {
  batch: number;
  entry: string;
  round: number;
  step: number;
  draftForwards: number;
  totalMs: number;
  modelMs: number;
  prefillMs: number;
}
const [header, ...lines] = readFileSync(args.steps, 'utf8').trim().split('\n');
const column = (name: string) => {
  const at = header.split(',').indexOf(name);
  if (at < 0) throw new Error(`${args.steps}: no column ${name}; is it a sweep --steps file?`);
  return at;
};
const at = Object.fromEntries(['batch', 'entry', 'round', 'step', 'draft_forwards', 'total_ms', 'model_ms', 'prefill_ms'].map((name) => [name, column(name)]));
const steps: Step[] = lines.map((line) => {
  const c = line.split(',');
  return { batch: Number(c[at.batch]), entry: c[at.entry], round: Number(c[at.round]), step: Number(c[at.step]), draftForwards: Number(c[at.draft_forwards]), totalMs: Number(c[at.total_ms]), modelMs: Number(c[at.model_ms]), prefillMs: Number(c[at.prefill_ms]) };
});
const key = (s: Step) => `${s.batch}/${s.round}/${s.step}`;
const baseline = new Map(steps.filter((s) => s.entry === args.baseline).map((s) => [key(s), s]));
if (baseline.size === 0) throw new Error(`${args.steps} has no steps of the baseline ${args.baseline}`);

const median = (xs: number[]) => percentile(xs, 50);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const ms = (xs: number[]) => (xs.length ? `${median(xs).toFixed(3)} / ${mean(xs).toFixed(3)}` : '-');

console.log(`Each entry's decode steps paired with ${args.baseline}'s same step (neither prefilled); differences in ms, median / mean.`);
console.log('plain: only the steps where the entry ran no draft forward.');
console.log(['batch', 'entry', 'pairs', 'onnxruntime', 'engine', 'step', 'plain pairs', 'plain onnxruntime', 'plain engine'].join(' | '));
const entries = [...new Set(steps.map((s) => `${s.batch}/${s.entry}`))];
for (const id of entries) {
  const [batch, entry] = [Number(id.split('/')[0]), id.slice(id.indexOf('/') + 1)];
  if (entry === args.baseline) continue;
  const pairs = steps
    .filter((s) => s.batch === batch && s.entry === entry && s.prefillMs === 0)
    .flatMap((s) => {
      const b = baseline.get(key(s));
      return b && b.prefillMs === 0 ? [{ s, b }] : [];
    });
  const diff = (list: typeof pairs, of: (s: Step) => number) => list.map(({ s, b }) => of(s) - of(b));
  const plain = pairs.filter(({ s }) => s.draftForwards === 0);
  const engine = (s: Step) => s.totalMs - s.modelMs;
  console.log(
    [batch, entry, pairs.length, ms(diff(pairs, (s) => s.modelMs)), ms(diff(pairs, engine)), ms(diff(pairs, (s) => s.totalMs)), plain.length, ms(diff(plain, (s) => s.modelMs)), ms(diff(plain, engine))].join(' | '),
  );
}
