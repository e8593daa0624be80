// The policy's own time per step (a script, not a test): a greedy trace recorded with
// `--record-candidates` is replayed through its policy with no model (what-if's replay, the draft's
// candidates read back from the recording), and every call of the policy protocol is timed. This is
// the host work a step pays between and around its forwards for scheduling alone, which a modelled
// clock never charges and the wall clock always does.
//
//   npx esbuild bench/policy-time.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/policy-time.mjs && node node_modules/.cache/bench/policy-time.mjs \
//     --trace A.jsonl[,B.jsonl…] [--repeats 5]
//
// Prints, per trace: its policy, batch and steps, then µs per step in each protocol call (median of
// the repeats, the first replay dropped as V8's warm-up) and their sum, and the replay's whole time
// per step (what-if's own bookkeeping included) for scale.
import { parseArgs } from 'node:util';
import { readTrace, rescoreTrace } from '../src/engine/trace/index.js';
import { ElasticScheduler } from '../src/engine/policy/echo-scheduler.js';
import { StaticPolicy } from '../src/engine/policy/static.js';
import { Eagle2Policy } from '../src/engine/policy/eagle2.js';
import { ChainPolicy } from '../src/engine/policy/chain.js';

const { values: args } = parseArgs({
  options: {
    trace: { type: 'string' },
    repeats: { type: 'string', default: '5' },
  },
});
if (!args.trace) throw new Error('--trace FILE[,FILE…] is required (recorded with --record-candidates)');
const repeats = Math.max(2, Number(args.repeats));

const CALLS = ['begin', 'frontier', 'grow', 'select', 'afterVerify'] as const;
type Call = (typeof CALLS)[number];
const spent = new Map<Call, number>();

// Every policy class's protocol methods, wrapped once with a timer (subclasses inherit the wrapper).
for (const cls of [ElasticScheduler, StaticPolicy, Eagle2Policy, ChainPolicy]) {
  const proto = cls.prototype as unknown as Record<string, unknown>;
  for (const call of CALLS) {
    const own = Object.getOwnPropertyDescriptor(proto, call)?.value as ((...a: unknown[]) => unknown) | undefined;
    if (typeof own !== 'function') continue;
    proto[call] = function timed(this: unknown, ...a: unknown[]) {
      const start = performance.now();
      try {
        return own.apply(this, a);
      } finally {
        spent.set(call, (spent.get(call) ?? 0) + performance.now() - start);
      }
    };
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const file of args.trace.split(',')) {
  const trace = await readTrace(file);
  const { config } = trace.header;
  const steps = trace.steps.length;
  const perCall = new Map<Call, number[]>(CALLS.map((c) => [c, []]));
  const whole: number[] = [];
  // A replay that leaves the recorded run (a step whose verdict what-if cannot know is not learnt
  // from, so the value model drifts) stops that step where it needs an expansion it lacks.
  let undecided = 0;
  for (let r = 0; r < repeats; r++) {
    spent.clear();
    const start = performance.now();
    const result = rescoreTrace(trace);
    const ms = performance.now() - start;
    undecided = steps - result.decidedSteps;
    if (r === 0) continue;
    whole.push(ms);
    for (const call of CALLS) perCall.get(call)!.push(spent.get(call) ?? 0);
  }
  const us = (ms: number) => ((ms * 1000) / steps).toFixed(0);
  const parts = CALLS.map((c) => `${c} ${us(median(perCall.get(c)!))}`).join(', ');
  const total = median(whole.map((_, k) => CALLS.reduce((sum, c) => sum + perCall.get(c)![k], 0)));
  console.log(`${file}: ${config.policy}, batch ${config.batch}, ${steps} steps${undecided > 0 ? ` (${undecided} left the recording and stopped early)` : ''}; µs per step: ${parts}; policy ${us(total)}; whole replay ${us(median(whole))}`);
}
