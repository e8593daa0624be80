// What one drafting forward costs with an EAGLE-3 head against the small draft model (a script,
// not a test): both loaded as a run loads a draft (int8 on CPU, one thread), timed in the same run,
// taking turns round by round, and printed as the head's time over the draft's per packed size.
//
//   npx esbuild bench/head-forward.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/head-forward.mjs && node node_modules/.cache/bench/head-forward.mjs \
//     [--head DIR] [--draft DIR] [--target DIR] [--rounds 5] [--slots 8] [--context 64] [--precision int8|float32]
//
// Defaults: the bundled target, its small draft and its demo head (assets/models/echo-demo-head).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { measureForwardCurve } from '../src/engine/cost/measure.js';
import { loadHead } from '../src/engine/model/head-loader.js';
import { loadModel } from '../src/engine/model/loader.js';
import type { ModelSession } from '../src/engine/model/types.js';
import type { WeightPrecision } from '../src/shared/config.js';

const { values: args } = parseArgs({
  options: {
    head: { type: 'string', default: 'assets/models/echo-demo-head' },
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    rounds: { type: 'string', default: '5' },
    slots: { type: 'string', default: '8' },
    context: { type: 'string', default: '64' },
    precision: { type: 'string', default: 'int8' },
  },
});
for (const [what, dir] of [['head', args.head], ['draft', args.draft], ['target', args.target]] as const) {
  if (!existsSync(join(dir, 'config.json'))) {
    console.error(`head-forward: no ${what} at ${dir} (--${what} DIR)`);
    process.exit(1);
  }
}
const rounds = Number(args.rounds);
const slots = Number(args.slots);
const context = Number(args.context);
const precision = args.precision as WeightPrecision;
const tokenCounts = [1, 2, 4, 8, 16, 32, 64].filter((n) => n >= 1);
const scratch = mkdtempSync(join(tmpdir(), 'echo-bench-'));
const cacheDir = join(scratch, 'cache');
const load = { slots, maxLength: context + Math.max(...tokenCounts) + 8, threads: 1, precision, cacheDir };

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  const draft = await loadModel(args.draft, load);
  const head = await loadHead(args.head, args.target, load);
  const ratios = new Map<number, number[]>();
  const times = { draft: new Map<number, number[]>(), head: new Map<number, number[]>() };
  const measure = (session: ModelSession) => measureForwardCurve(session, { tokenCounts, repeats: 7, slots, context });
  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so a drifting machine load falls on both alike.
    const order: ('draft' | 'head')[] = round % 2 === 0 ? ['draft', 'head'] : ['head', 'draft'];
    const curves: Record<string, { tokens: number; ms: number }[]> = {};
    for (const which of order) curves[which] = await measure(which === 'draft' ? draft : head);
    for (const p of curves.head) {
      const d = curves.draft.find((q) => q.tokens === p.tokens)!;
      (ratios.get(p.tokens) ?? ratios.set(p.tokens, []).get(p.tokens)!).push(p.ms / d.ms);
      (times.head.get(p.tokens) ?? times.head.set(p.tokens, []).get(p.tokens)!).push(p.ms);
      (times.draft.get(p.tokens) ?? times.draft.set(p.tokens, []).get(p.tokens)!).push(d.ms);
    }
  }
  console.log(`head ${args.head} (${head.info.parameters} parameters) against draft ${args.draft} (${draft.info.parameters}), ${precision}, 1 thread`);
  console.log(`${slots} requests with ${context} committed rows each; medians of ${rounds} paired rounds\n`);
  console.log('tokens  draft ms   head ms   head ÷ draft (range)');
  for (const n of tokenCounts) {
    const r = ratios.get(n)!;
    console.log(
      `${String(n).padStart(6)}  ${median(times.draft.get(n)!).toFixed(3).padStart(8)}  ${median(times.head.get(n)!).toFixed(3).padStart(8)}   ` +
        `${median(r).toFixed(3)} (${Math.min(...r).toFixed(3)}–${Math.max(...r).toFixed(3)})`,
    );
  }
  await Promise.all([draft.release(), head.release()]);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
