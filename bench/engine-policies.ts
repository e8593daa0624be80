// Speculative engine bench (a script, not a test): ar, chain, static and eagle2 on a model pair
// at several batch sizes per domain — throughput, speedup over ar measured in the same run, MAT,
// draft utilisation, verified tokens per step, and the engine's own share of step time (all but
// onnxruntime's run()). Then a long run sampling memory, to show it stays flat.
//
//   npx esbuild bench/engine-policies.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/engine-policies.mjs && node node_modules/.cache/bench/engine-policies.mjs [options]
//
// Options (defaults in brackets): --draft DIR --target DIR [the bundled demo pair],
// --domains code,prose,math, --batches 1,8,32, --policies ar,chain,static,eagle2 (an entry may
// carry a shape: static:4x2x8 = depth x top-k x tokens, chain:3 = chain length, and a draft precision:
// chain:3@float32 runs on a second pair whose draft has float32 weights), --draft-precision [int8],
// --kmax-per-request N [8: K_max = N × batch, at least 16], --kmax B:K,… [per batch size, overrides],
// --requests N [2 × batch, at least 8],
// --max-new-tokens N [64], --threads N [1: two sessions with spinning 2-thread pools fight over two cores], --rounds N [3: interleaved, median reported], --interleave steps|runs [steps: a round's runs take turns step by step, each timing its own steps; runs: one after another],
// --memory-requests N [0 = skip the long run].
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pairedRatio } from '../src/engine/metrics/paired-rounds.js';
import { greedyRunner, pairBenchArgs, pairBenchOptions, policyEntry, precisionArg, runGreedy } from './pair-bench.js';
import { runRounds, slotsForRounds, type StartedRun } from '../src/engine/run/rounds.js';
import { splitRepeat } from '../src/engine/run/sweep.js';
import type { WeightPrecision } from '../src/shared/config.js';
import { RunMetricsAccumulator } from '../src/engine/metrics/run-metrics.js';
import { loadPair, type ModelPair } from '../src/engine/run/pair.js';
import { createPolicy } from '../src/engine/policy/index.js';
import { slotRows, type RunSummary, type WorkItem } from '../src/engine/run/runner.js';
import { encodePrompt, readPromptsFile, takeRequests } from '../src/engine/run/workload.js';
import type { RunMetrics } from '../src/shared/events.js';

const { values: args } = parseArgs({
  options: {
    ...pairBenchOptions({ batches: '1,8,32', policies: 'ar,chain,static,eagle2', maxNewTokens: '64', threads: '1' }),
    'kmax-per-request': { type: 'string', default: '8' },
    'memory-requests': { type: 'string', default: '0' },
    rounds: { type: 'string', default: '3' },
  },
});

const { domains, batches, policies, maxNewTokens, threads, draftPrecision, draftWindow, interleave } = pairBenchArgs(args);
const kmaxPerRequest = Number(args['kmax-per-request']);
const memoryRequests = Number(args['memory-requests']);
const rounds = Number(args.rounds);
// --kmax 1:16,8:64 sets K_max per batch size explicitly.
const kmaxFor = new Map((args.kmax ?? '').split(',').filter(Boolean).map((p) => p.split(':').map(Number) as [number, number]));
const kmaxOf = (batch: number) => kmaxFor.get(batch) ?? Math.max(16, kmaxPerRequest * batch, batch);

interface Measured {
  metrics: RunMetrics;
  engineShare: number;
}

async function workloadFor(pair: ModelPair, domain: string, count: number): Promise<WorkItem[]> {
  const records = takeRequests(await readPromptsFile(join('assets', 'prompts', `${domain}.jsonl`)), count);
  return records.map((r) => ({ id: r.id, promptTokens: encodePrompt(r, pair.tokenizer) }));
}

/**
 * A --policies entry: a policy name, optionally with a shape, `static:4x2x8` (depth x top-k x
 * tokens) or `chain:3` (chain length), to compare shapes of one policy in the same run.
 */
function policyFrom(entry: string, batch: number, kmax: number) {
  const { name, ...options } = policyEntry(entry);
  return createPolicy(name, { batch, kmax, ...options });
}

/** The draft precision an entry runs with: its `@int8` / `@float32` suffix, else --draft-precision. */
const precisionOf = (entry: string): WeightPrecision => {
  const [, precision] = splitRepeat(entry).repeated.split('@');
  return precision === undefined ? draftPrecision : precisionArg(precision, `--policies ${entry}`);
};

function startMeasured(pairs: Map<WeightPrecision, ModelPair>, policy: string, batch: number, kmax: number, workload: WorkItem[]): StartedRun<Measured> {
  const metrics = new RunMetricsAccumulator({ policy });
  let stepMs = 0;
  let modelMs = 0;
  const runner = greedyRunner(pairs.get(precisionOf(policy))!, policyFrom(policy, batch, kmax), { batch, kmax, maxNewTokens }, workload, (e) => {
    metrics.addStep(e);
    stepMs += e.timings.totalMs;
    modelMs += e.timings.modelMs ?? 0;
  });
  const finish = (summary: RunSummary): Measured => ({ metrics: metrics.metrics(summary.wallMs), engineShare: (stepMs - modelMs) / stepMs });
  return { runner, finish };
}

/** One run alone (the warm-up). */
async function measure(pairs: Map<WeightPrecision, ModelPair>, policy: string, batch: number, kmax: number, workload: WorkItem[]): Promise<Measured> {
  const { runner, finish } = startMeasured(pairs, policy, batch, kmax, workload);
  return finish(await runner.run());
}

const maxBatch = Math.max(...batches);
const allPrompts = (await Promise.all(domains.map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`))))).flat();
const probe = await loadPair(args.draft, args.target, { slots: 1, maxLength: 8, threads });
const longest = Math.max(...allPrompts.map((r) => encodePrompt(r, probe.tokenizer).length));
await probe.release();
const maxLength = slotRows(longest, maxNewTokens, Math.max(...batches.map(kmaxOf)));
// One pair per draft precision in use (each with its own target session: simple, and the same weights).
const pairs = new Map<WeightPrecision, ModelPair>();
for (const head of new Set([draftPrecision, ...policies.map(precisionOf)])) {
  pairs.set(head, await loadPair(args.draft, args.target, { slots: slotsForRounds({ batches, policies, interleave }), maxLength, threads, draftPrecision: head, draftWindow }));
}
const pair = pairs.get(draftPrecision)!;
console.log(`pair: draft ${args.draft} (${pair.draft.info.parameters} params, ${[...pairs.keys()].join(' / ')} weights), target ${args.target} (${pair.target.info.parameters} params)`);
console.log(`max new tokens ${maxNewTokens}, onnxruntime threads ${threads}, greedy, ${rounds} interleaved rounds (median), ${interleave === 'steps' ? 'runs taking turns step by step' : 'one run after another'}`);

// Warm-up: first runs pay onnxruntime's allocations.
for (const head of pairs.keys()) {
  await measure(pairs, `ar@${head}`, 1, 16, await workloadFor(pair, domains[0], 2));
  await measure(pairs, `eagle2@${head}`, 1, 16, await workloadFor(pair, domains[0], 2));
}

const pad = (s: string | number, n: number) => String(s).padStart(n);
for (const domain of domains) {
  for (const batch of batches) {
    const kmax = kmaxOf(batch);
    const count = args.requests ? Number(args.requests) : Math.max(8, 2 * batch);
    const workload = await workloadFor(pair, domain, count);
    console.log(`\n${domain}, batch ${batch}, K_max ${kmax}, ${count} requests`);
    console.log(`${'policy'.padEnd(20)}${pad('tok/s', 9)}${pad('vs ar', 8)}${pad('MAT', 7)}${pad('util', 7)}${pad('verif/step', 12)}${pad('steps', 7)}${pad('engine %', 10)}${pad('draft ms', 10)}${pad('verify ms', 11)}`);
    // Each row reports the median of its interleaved rounds.
    const runs = await runRounds(policies, { rounds, interleave }, (policy) => startMeasured(pairs, policy, batch, kmax, workload));
    const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const arRuns = runs.get('ar');
    for (const policy of policies) {
      const measured = runs.get(policy)!;
      const m = measured[0].metrics; // greedy: acceptance is the same every round
      const throughput = median(measured.map((r) => r.metrics.throughput));
      const engineShare = median(measured.map((r) => r.engineShare));
      // Paired within rounds: the median of the rounds' ratios to ar.
      const tps = (rs: Measured[]) => rs.map((r) => r.metrics.throughput);
      const speedup = arRuns ? pairedRatio(tps(measured), tps(arRuns)).median.toFixed(2) + '×' : '-';
      console.log(
        `${policy.padEnd(20)}${pad(throughput.toFixed(1), 9)}${pad(speedup, 8)}${pad(m.meanAcceptedTokens.toFixed(2), 7)}` +
          `${pad(m.draftUtilisation.toFixed(2), 7)}${pad(m.verifiedTokensPerStep.toFixed(1), 12)}${pad(m.steps, 7)}${pad((100 * engineShare).toFixed(1), 10)}` +
          `${pad(median(measured.map((r) => r.metrics.stepTime?.draftMs ?? NaN)).toFixed(2), 10)}${pad(median(measured.map((r) => r.metrics.stepTime?.verifyMs ?? NaN)).toFixed(2), 11)}`,
      );
    }
  }
}

if (memoryRequests > 0) {
  const batch = Math.min(8, maxBatch);
  const workload = await workloadFor(pair, domains[0], memoryRequests);
  const samples: string[] = [];
  let steps = 0;
  const mb = (n: number) => (n / 2 ** 20).toFixed(1);
  await runGreedy(pair, createPolicy('eagle2', { batch, kmax: 8 * batch }), { batch, kmax: 8 * batch, maxNewTokens }, workload, () => {
    if (++steps % 200 === 0) {
      const m = process.memoryUsage();
      samples.push(`step ${pad(steps, 6)}: rss ${pad(mb(m.rss), 7)} MiB, heap ${pad(mb(m.heapUsed), 6)} MiB, external ${pad(mb(m.external), 7)} MiB`);
    }
  });
  console.log(`\nmemory over a long run (eagle2, batch ${batch}, ${memoryRequests} requests):`);
  for (const line of samples) console.log(line);
}
for (const p of pairs.values()) await p.release();
