// Where one decode step's time goes (a script, on demand): `ar` and `chain` at batch 1, greedy, on
// a pair loaded as `echo-studio run` loads it, split into onnxruntime's run() of the target and of
// the draft, the session's own work around each run() (planning indices and mask, feeding, writing
// the new K/V), and the engine's work between forwards (policy, tree, packing, verification, commit).
//
//   npx esbuild bench/step-breakdown.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/step-breakdown.mjs && node node_modules/.cache/bench/step-breakdown.mjs [options]
//
// Options: --target DIR, --draft DIR [the bundled pair], --domains code,prose, --count N prompts per
// domain [4], --new N tokens per prompt [64], --chain N [3], --policies ar,chain, --passes N [3]:
// each pass decodes every prompt with each policy in turn; pass 1 is a fresh process's first
// requests (for the first policy named), the later ones its steady state. --threads N [the pair's
// default]: with 1, the process's CPU time per step (printed too) is the work itself, which other
// processes on a busy machine disturb far less than they disturb wall time. --callgrind: under `valgrind --tool=callgrind --collect-atstart=no`, collects the
// decode of each pass and policy (a dump each; prefills included), for instruction counts.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPair } from '../src/engine/run/pair.js';
import { createPolicy } from '../src/engine/policy/index.js';
import { Runner, slotRows, warmUpDecode, type RunnerOptions } from '../src/engine/run/runner.js';
import { encodePrompt, readPromptsFile } from '../src/engine/run/workload.js';
import type { ForwardEntry, ForwardOutputs, ForwardResult, ModelSession } from '../src/engine/model/types.js';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    domains: { type: 'string', default: 'code,prose' },
    count: { type: 'string', default: '4' },
    new: { type: 'string', default: '64' },
    chain: { type: 'string', default: '3' },
    passes: { type: 'string', default: '3' },
    policies: { type: 'string', default: 'ar,chain' },
    'warm-up': { type: 'string', default: '0' },
    threads: { type: 'string' },
    callgrind: { type: 'boolean', default: false },
  },
});
const newTokens = Number(args.new);
const chain = Number(args.chain);
const passes = Number(args.passes);

const pair = await loadPair(args.draft, args.target, {
  slots: 1,
  maxLength: 512,
  ...(args.threads ? { threads: Number(args.threads) } : {}),
});
const prompts = (await Promise.all(args.domains.split(',').map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`), { limit: Number(args.count) }))))
  .flat()
  .map((r) => encodePrompt(r, pair.tokenizer));
const longest = Math.max(...prompts.map((p) => p.length));
if (slotRows(longest, newTokens, chain + 1) > pair.maxLength) throw new Error(`prompts of ${longest} tokens + ${newTokens} new do not fit ${pair.maxLength} rows`);

/** Per forward: wall time of forward() and of onnxruntime's run() inside it. */
interface Timed {
  calls: number;
  wallMs: number;
  runMs: number;
}
const fresh = (): Timed => ({ calls: 0, wallMs: 0, runMs: 0 });
let counting = false;
const tally = { target: fresh(), draft: fresh() };
function timed(session: ModelSession, into: 'target' | 'draft'): ModelSession {
  const forward = session.forward.bind(session);
  session.forward = async (entries: ForwardEntry[], outputs: ForwardOutputs): Promise<ForwardResult> => {
    const t0 = performance.now();
    const result = await forward(entries, outputs);
    // Prefills (a prompt at once) are not decode steps.
    if (counting && result.tokens <= chain + 1) {
      const t = tally[into];
      t.calls++;
      t.wallMs += performance.now() - t0;
      t.runMs += result.runMs;
    }
    return result;
  };
  return session;
}
timed(pair.target, 'target');
timed(pair.draft, 'draft');

function callgrind(what: string): void {
  if (args.callgrind) execFileSync('callgrind_control', [what, String(process.pid)], { stdio: 'ignore' });
}

interface Pass {
  cpuMs: number;
  steps: number;
  stepMs: number;
  tokens: number;
  target: Timed;
  draft: Timed;
}

function runnerOptions(policy: 'ar' | 'chain'): RunnerOptions {
  return {
    target: pair.target,
    draft: policy === 'ar' ? null : pair.draft,
    policy: createPolicy(policy, { batch: 1, kmax: chain + 1, ...(policy === 'chain' ? { chainLength: chain } : {}) }),
    batch: 1,
    kmax: chain + 1,
    maxNewTokens: newTokens,
    temperature: 0,
    seed: 0,
    eosTokenIds: [],
    maxLength: pair.maxLength,
  };
}

async function decode(policy: 'ar' | 'chain', pass: number): Promise<Pass> {
  tally.target = fresh();
  tally.draft = fresh();
  let stepMs = 0;
  let steps = 0;
  let tokens = 0;
  const runner = new Runner(
    {
      ...runnerOptions(policy),
      onStep: (e) => {
        steps++;
        stepMs += e.timings.totalMs - (e.timings.prefillMs ?? 0); // a request's first drafting step prefills the draft
        tokens += e.requests.reduce((n, r) => n + r.emitted.length, 0);
      },
    },
    prompts.map((promptTokens, i) => ({ id: `p${i}`, promptTokens })),
  );
  counting = true;
  callgrind('-i=on');
  const cpu = process.cpuUsage();
  await runner.run();
  const used = process.cpuUsage(cpu);
  callgrind('-i=off');
  callgrind(`--dump=pass${pass}-${policy}`);
  counting = false;
  return { cpuMs: (used.user + used.system) / 1000, steps, stepMs, tokens, target: tally.target, draft: tally.draft };
}

const fmt = (x: number): string => x.toFixed(3);
console.log(`${prompts.length} prompts, ${newTokens} new tokens, chain of ${chain}, target on ${pair.target.info.dir}; per decode step, ms (share of the step)`);
console.log('pass policy   tok/s  steps  step ms  CPU ms | target run  target host | draft calls  draft run  draft host | engine between');
const policies = args.policies.split(',').map((p) => {
  if (p !== 'ar' && p !== 'chain') throw new Error(`--policies takes ar and chain, got ${p}`);
  return p;
});
const work = prompts.map((promptTokens, i) => ({ id: `p${i}`, promptTokens }));
for (const policy of policies) if (Number(args['warm-up']) > 0) await warmUpDecode(runnerOptions(policy), work, Number(args['warm-up']));
for (let p = 1; p <= passes; p++) {
  for (const policy of policies) {
    const r = await decode(policy, p);
    const per = (x: number): string => `${fmt(x / r.steps)} (${((100 * x) / r.stepMs).toFixed(0)} %)`;
    const between = r.stepMs - r.target.wallMs - r.draft.wallMs;
    console.log(
      `${p}    ${policy.padEnd(6)} ${(r.tokens / (r.stepMs / 1000)).toFixed(0).padStart(5)} ${String(r.steps).padStart(6)} ${fmt(r.stepMs / r.steps).padStart(8)} ${fmt(r.cpuMs / r.steps).padStart(7)} | ` +
        `${per(r.target.runMs)} ${per(r.target.wallMs - r.target.runMs)} | ${(r.draft.calls / r.steps).toFixed(2)} ${per(r.draft.runMs)} ${per(r.draft.wallMs - r.draft.runMs)} | ${per(between)}`,
    );
  }
}
await pair.release();
