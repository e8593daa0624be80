// ECHO bench (a script, not a test): echo vs static vs eagle2 vs dense vs fixed vs ddd vs ar per
// domain at several batch sizes, on one loaded pair, K_max from the measured knee. Per domain it
// first calibrates τ_d on prompts the runs do not use (timed: the target is under a minute), then
// prints per batch one row per policy: wall-clock throughput and its ratio to static, the same
// wall ratio of decoding alone (prefill of admitted requests left out: no policy changes it), the same
// ratio under a modelled clock (real acceptance, modelled time: steadier than wall time on a
// shared machine), the same under this machine's measured forward curves (what drafting costs here,
// without the wall clock's noise), the wall ratio the run would read if each of its decode steps cost
// what static's did ("sched": what the schedule alone buys, prefill as measured), MAT, draft
// utilisation, verified tokens per step, budget moved by ECHO.
//
//   npx esbuild bench/echo-policies.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/echo-policies.mjs && node node_modules/.cache/bench/echo-policies.mjs [options]
//
// Options [defaults]: --draft DIR --target DIR [the bundled demo pair], --domains [code,prose,math],
// --batches [1,8,32,64], --policies [echo,echo@path-prob,static,static#2,eagle2,dense,fixed,ddd,ar; also echo+cost: echo priced with the measured T_ver fit; an entry may carry a base shape, echo:6x2x6, and a confidence signal, echo@path-margin (τ_d calibrated in that signal; without one, the signal calibration keeps: the better separating one, as `calibrate` does); static#2 runs static again, an A/A control whose ratio to static is the noise of the wall ratios], --requests N [max(8, batch)],
// --max-new-tokens N [32], --threads N [2], --draft-precision int8|float32 [int8], --kmax N [from the knee: see kmaxFor], --hw SPEC for
// the modelled clock [measured: the knee fit of this machine; or e.g. h100:70b],
// --calibration-prompts N [24], --delta X [0.75], --tau-rule budget|separation [budget: see TauRule], --draft-cost X [0.05, the modelled clock's
// draft forward: what the gated policies' draft price charges a layer; 0 drafts every layer the budget allows], --significance P [0.05: a τ_d's
// truncations must beat chance at this level; 1 turns the test off], --rounds N [1: every policy once per round;
// tok/s is the median round, a wall ratio the median of the rounds' ratios, with their range; with 3 rounds or more, step-med sums
// each step's median time across rounds], --interleave steps|runs [steps: a round's runs take turns step by step on a pair with
// batch × entries KV slots, each timing its own steps; runs: one after another, their order rotated each round], --offset N [0: the workload starts at the pool's N-th prompt], --knee N [measured; give one to reuse an earlier
// measurement: the modelled clock then keeps T_ar = T_1 and sets γ = 1 / knee].
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { greedyRunner, pairBenchArgs, pairBenchOptions, policyEntry } from './pair-bench.js';
import { DEFAULT_SIGNIFICANCE, DEFAULT_TAU_RULE, TAU_RULES, type TauRule } from '../src/engine/calibrate/calibration.js';
import { profileGates, signalAucs } from '../src/engine/calibrate/profile.js';
import { calibrateSignals } from '../src/engine/run/warmup.js';
import { clockFromSpec, curvesClock, DEFAULT_DRAFT_FRACTION, tverClock, type ModelledClock } from '../src/engine/cost/clock.js';
import { draftRowCost, fitKnee, suggestKmax } from '../src/engine/cost/knee.js';
import { measureForwardCurve } from '../src/engine/cost/measure.js';
import { medianRound, pairedRatio, roundRatios, stepMedianMs, type PairedRatio } from '../src/engine/metrics/paired-rounds.js';
import { atBaselineStepCost } from '../src/shared/step-costs.js';
import { RunMetricsAccumulator } from '../src/engine/metrics/run-metrics.js';
import { loadPair, type ModelPair } from '../src/engine/run/pair.js';
import { DddPolicy } from '../src/engine/policy/ddd.js';
import { DensePolicy } from '../src/engine/policy/dense.js';
import { DEFAULT_DRAFT_COST, EchoPolicy } from '../src/engine/policy/echo.js';
import { FixedPolicy } from '../src/engine/policy/fixed.js';
import { createPolicy } from '../src/engine/policy/index.js';
import type { SpeculationPolicy, PolicyOptions } from '../src/engine/policy/types.js';
import { runRounds, slotsForRounds, type StartedRun } from '../src/engine/run/rounds.js';
import { slotRows, type RunSummary, type WorkItem } from '../src/engine/run/runner.js';
import { splitRepeat } from '../src/engine/run/sweep.js';
import { encodePrompt, readPromptsFile } from '../src/engine/run/workload.js';
import type { RunMetrics } from '../src/shared/events.js';
import { ConfidenceSignalSchema, type ConfidenceSignal } from '../src/shared/config.js';

const { values: args } = parseArgs({
  options: {
    ...pairBenchOptions({ batches: '1,8,32,64', policies: 'echo,echo@path-prob,static,static#2,eagle2,dense,fixed,ddd,ar', maxNewTokens: '32', threads: '2' }),
    knee: { type: 'string' },
    hw: { type: 'string', default: 'measured' },
    'calibration-prompts': { type: 'string', default: '24' },
    delta: { type: 'string', default: '0.75' },
    'tau-rule': { type: 'string', default: DEFAULT_TAU_RULE },
    'draft-cost': { type: 'string', default: String(DEFAULT_DRAFT_COST) },
    significance: { type: 'string', default: String(DEFAULT_SIGNIFICANCE) },
    rounds: { type: 'string', default: '1' },
    offset: { type: 'string', default: '0' },
  },
});

const { domains, batches, policies, maxNewTokens, threads, draftPrecision, draftWindow, interleave } = pairBenchArgs(args);
const calibrationPrompts = Number(args['calibration-prompts']);
const delta = Number(args.delta);
const tauRule = args['tau-rule'] as TauRule;
if (!TAU_RULES.includes(tauRule)) throw new Error(`--tau-rule takes ${TAU_RULES.join(' or ')}, got "${tauRule}"`);
const rounds = Number(args.rounds);
const significance = Number(args.significance);
if (!(significance > 0 && significance <= 1)) throw new Error(`--significance takes a level in (0, 1], got "${args.significance}"`);
const draftCost = Number(args['draft-cost']);
if (!(draftCost >= 0)) throw new Error(`--draft-cost takes a share of a target forward (≥ 0), got "${args['draft-cost']}"`);
// Another slice of the prompts (rotating the run pool), to see how much a ratio moves with the workload.
const offset = Number(args.offset);
if (!(Number.isInteger(offset) && offset >= 0)) throw new Error(`--offset takes a whole number, got "${args.offset}"`);

const ECHO_FAMILY: Record<string, (o: PolicyOptions) => SpeculationPolicy> = {
  echo: (o) => new EchoPolicy(o),
  // echo pricing each token with this machine's measured T_ver fit (run --verify-cost).
  'echo+cost': (o) => new EchoPolicy({ ...o, verifyCost: { knee, gamma: fit.gamma, draftRow } }),
  dense: (o) => new DensePolicy(o),
  fixed: (o) => new FixedPolicy(o),
  ddd: (o) => new DddPolicy(o),
};

/** The confidence signal an entry names after `@`, if any. */
function signalOf(entry: string): ConfidenceSignal | undefined {
  const signal = splitRepeat(entry).repeated.split('@')[1];
  return signal === undefined ? undefined : ConfidenceSignalSchema.parse(signal);
}

/**
 * A --policies entry: a name, optionally with a base shape, e.g. `echo:6x2x6` (depth x top-k x
 * tokens), and for the gated policies a confidence signal, `echo@path-margin`, gating with τ_d
 * calibrated in that signal (without one: the signal the calibration keeps, the better separating one).
 */
function makePolicy(entry: string, options: PolicyOptions): SpeculationPolicy {
  const { name, ...fromEntry } = policyEntry(entry);
  const echo = ECHO_FAMILY[name];
  return echo ? echo({ ...options, ...fromEntry }) : createPolicy(name, { ...options, ...fromEntry });
}

/** K_max from the knee (suggestKmax: the knee, then batch + knee once the roots pass it), unless --kmax. */
function kmaxFor(batch: number, knee: number): number {
  if (args.kmax) return Math.max(batch, Number(args.kmax));
  return suggestKmax({ kmax: knee }, batch);
}

interface Measured {
  metrics: RunMetrics;
  modelledMs: number;
  /** Every forward read off this machine's curves measured at this batch size (machineClocks). */
  curvesMs: number;
  moved: number;
  /** Each step's wall time, prefill included (for stepMedianMs). */
  stepMs: number[];
}

/** A run of `policy` set up to measure itself (runRounds starts it, alone or in lockstep). */
function startMeasured(pair: ModelPair, policy: SpeculationPolicy, batch: number, kmax: number, workload: WorkItem[], clock: ModelledClock): StartedRun<Measured> {
  const metrics = new RunMetricsAccumulator({ policy: policy.name });
  let modelledMs = 0;
  let curvesMs = 0;
  let moved = 0;
  const stepMs: number[] = [];
  const runner = greedyRunner(pair, policy, { batch, kmax, maxNewTokens }, workload, (e) => {
    metrics.addStep(e);
    modelledMs += clock.stepMs(e).totalMs;
    curvesMs += machineClocks.get(batch)!.stepMs(e).totalMs;
    for (const t of e.transfers) moved += t.tokens;
    stepMs.push(e.timings.totalMs);
  });
  const finish = (summary: RunSummary): Measured => ({ metrics: metrics.metrics(summary.wallMs), modelledMs, curvesMs, moved, stepMs });
  return { runner, finish };
}

const maxBatch = Math.max(...batches);
const prompts = Object.fromEntries(await Promise.all(domains.map(async (d) => [d, await readPromptsFile(join('assets', 'prompts', `${d}.jsonl`))] as const)));
const probe = await loadPair(args.draft, args.target, { slots: 1, maxLength: 8, threads });
const tokenized = Object.fromEntries(domains.map((d) => [d, prompts[d].map((r) => ({ id: r.id, promptTokens: encodePrompt(r, probe.tokenizer) }))]));
await probe.release();
const longest = Math.max(...Object.values(tokenized).flat().map((w) => w.promptTokens.length));
// Room for the largest K_max of the sweep and for the calibration warm-up (32 tokens, wide budget).
const maxLength = slotRows(longest, Math.max(maxNewTokens, 32), Math.max(1024, 8 * maxBatch));
const pair = await loadPair(args.draft, args.target, { slots: slotsForRounds({ batches, policies, interleave }), maxLength, threads, draftPrecision, draftWindow });
console.log(`pair: draft ${args.draft} (${pair.draft.info.parameters} params, ${draftPrecision} weights), target ${args.target} (${pair.target.info.parameters} params)`);

// The knee of this machine's target forward curve.
// On a busy machine one measurement can be far off; --knee N reuses a knee measured before.
const curve = await measureForwardCurve(pair.target, { slots: Math.min(16, maxBatch), context: 64, repeats: 5 });
const measuredFit = fitKnee(curve);
const fit = args.knee ? { ...measuredFit, kmax: Number(args.knee), gamma: 1 / Number(args.knee) } : measuredFit;
const knee = fit.kmax;
// One drafted row's cost in units of the target's one-token forward (what profile-hw prints for --verify-cost).
const draftFit = fitKnee(await measureForwardCurve(pair.draft, { slots: Math.min(16, maxBatch), context: 64, repeats: 5 }));
const draftRow = draftRowCost(fit, draftFit);
console.log(`target forward: ${curve.map((p) => `${p.tokens}:${p.ms.toFixed(1)}ms`).join(' ')}${args.knee ? ` (measured knee ${measuredFit.kmax}; --knee ${knee} used)` : ''}`);
console.log(`draft: T_1 ${draftFit.tArMs.toFixed(2)} ms, one drafted row = ${draftRow.toPrecision(3)} of a target forward (echo+cost's draftRow)`);
console.log(`knee ${knee} tokens (T_ar ${fit.tArMs.toFixed(2)} ms, γ ${fit.gamma.toPrecision(3)}); K_max per batch: ${batches.map((b) => `${b}→${kmaxFor(b, knee)}`).join(', ')}`);
const clock = args.hw === 'measured' ? tverClock(fit, DEFAULT_DRAFT_FRACTION, 'measured T_ver fit') : clockFromSpec(args.hw);
console.log(`modelled clock: ${clock.label}; max new tokens ${maxNewTokens}, onnxruntime threads ${threads}, greedy; ${interleave === 'steps' ? "a round's runs take turns step by step" : "a round's runs one after another"}`);
// This machine, without the wall clock's noise: per batch size, both models' forwards timed with
// n rows spread over min(n, batch) requests of 64 committed rows (a root layer is one row per
// request), and each step's forwards read off those curves by their rows and their requests
// (a draft forward of 64 rows over 14 requests costs less than one over 64).
const machineClocks = new Map<number, ModelledClock>();
for (const batch of batches) {
  const spread = { slots: batch, context: 64, repeats: 5, tokenCounts: [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256].filter((n) => n <= Math.max(32, 4 * batch)) };
  const curves = { target: await measureForwardCurve(pair.target, spread), draft: await measureForwardCurve(pair.draft, spread) };
  machineClocks.set(batch, curvesClock(curves, `measured curves over ${batch} requests`, batch));
  for (const which of ['target', 'draft'] as const) {
    console.log(`${which} forward, rows over ${batch} request(s): ${curves[which].map((p) => `${p.tokens}:${p.ms.toFixed(2)}ms`).join(' ')}`);
  }
}
console.log(`draft price of echo / dense / fixed: ${draftCost > 0 ? `a layer's forward = ${draftCost} of a target forward, against the calibration's measured acceptance` : 'off (--draft-cost 0)'}\n`);

const pad = (s: string | number, n: number) => String(s).padStart(n);
const ms = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2));
for (const domain of domains) {
  // Calibrate on the domain's last prompts; the runs take its first ones.
  const calibrationSet = tokenized[domain].slice(-calibrationPrompts).map((w, i) => ({ id: `cal-${i}`, promptTokens: w.promptTokens }));
  const start = performance.now();
  const calibration = {
    target: pair.target,
    draft: pair.draft,
    workload: calibrationSet,
    eosTokenIds: pair.target.info.eosTokenIds,
    maxLength,
    depth: 8,
    batch: Math.min(8, maxBatch),
    maxNewTokens: 32,
    delta,
    tauRule,
    significance,
    models: { draft: args.draft, target: args.target },
    domain,
  };
  const calibrations = await calibrateSignals(calibration);
  const profile = calibrations.profile(calibrations.pick('auto'));
  const calSeconds = (performance.now() - start) / 1000;
  const aucs = profile.depths.map((d) => (d.auc === null ? '-' : d.auc.toFixed(2))).join(' ');
  console.log(
    `${domain}: calibrated in ${calSeconds.toFixed(1)} s on ${calibrationSet.length} prompts (mean AUC ${signalAucs(profile)}: ${profile.confidence} kept); AUC by depth ${aucs}; τ rule ${tauRule}`,
  );
  // Entries naming the other signal gate with τ_d calibrated in it, from the same warm-ups.
  const profiles = new Map([[profile.confidence, profile]]);
  for (const entry of policies) {
    const signal = signalOf(entry);
    if (signal !== undefined && !profiles.has(signal)) profiles.set(signal, calibrations.profile(calibrations.pick(signal)));
  }
  for (const p of profiles.values()) console.log(`  ${p.confidence}: τ_d ${JSON.stringify(p.taus)}; dense τ_d ${JSON.stringify(p.denseTaus)}`);

  for (const batch of batches) {
    const kmax = kmaxFor(batch, knee);
    const count = args.requests ? Number(args.requests) : Math.max(8, batch);
    const pool = tokenized[domain].slice(0, Math.max(1, tokenized[domain].length - calibrationPrompts));
    const workload = Array.from({ length: count }, (_, i) => ({ id: `${domain}-${i}`, promptTokens: pool[(offset + i) % pool.length].promptTokens }));
    console.log(`\n${domain}, batch ${batch}, K_max ${kmax}, ${count} requests`);
    console.log(
      `${'policy'.padEnd(18)}${pad('tok/s', 9)}${pad('/static', 9)}${rounds > 1 ? pad('range', 13) : ''}${pad('decode/s', 9)}${rounds >= 3 ? pad('step-med', 9) : ''}${pad('sched', 8)}${pad('modelled', 10)}${pad('/static', 9)}${pad('curves', 10)}${pad('/static', 9)}${pad('MAT', 7)}${pad('util', 7)}${pad('verif/step', 12)}${pad('steps', 7)}${pad('moved', 7)}${pad('draft ms', 10)}${pad('verify ms', 11)}`,
    );
    // Each row reports its median-throughput round (greedy: acceptance and the modelled time are
    // the same every round; the machine's load is not).
    const runs = await runRounds(policies, { rounds, interleave }, (name) => {
      const gates = profiles.get(signalOf(name) ?? profile.confidence)!;
      const options: PolicyOptions = { batch, kmax, ...profileGates(gates), draftCost };
      return startMeasured(pair, makePolicy(name, options), batch, kmax, workload, clock);
    });
    const rows = policies.map((name) => ({ name, m: medianRound(runs.get(name)!, (r) => r.metrics.throughput) }));
    const base = rows.find((r) => r.name === 'static')?.m;
    // Greedy runs repeat their steps every round: each step's median time outvotes one round's burst.
    const stepMedianTps = new Map(
      [...runs].map(([name, measured]) => {
        const ms = rounds >= 3 ? stepMedianMs(measured.map((r) => r.stepMs)) : null;
        return [name, ms === null ? NaN : measured[0].metrics.generatedTokens / (ms / 1000)];
      }),
    );
    const stepMedianOf = (name: string) => stepMedianTps.get(name) ?? NaN;
    // Wall ratios are paired within rounds (the median of the rounds' ratios, and their range).
    const staticRuns = runs.get('static');
    const wallRatio = (name: string, of: (m: RunMetrics) => number) =>
      staticRuns ? pairedRatio(runs.get(name)!.map((r) => of(r.metrics)), staticRuns.map((r) => of(r.metrics))) : undefined;
    // What the schedule alone buys: the wall ratio this run would read if each of its steps cost
    // what static's did in the same round (its own prefill as measured), paired within rounds.
    const scheduleOnly = (name: string) =>
      staticRuns ? roundRatios(runs.get(name)!.map((run, i) => atBaselineStepCost(run.metrics, staticRuns[i].metrics))) : undefined;
    for (const { name, m } of rows) {
      const wall = wallRatio(name, (x) => x.throughput);
      const decode = wallRatio(name, (x) => x.decodeThroughput ?? NaN);
      const times = (r: PairedRatio | undefined) => (r && Number.isFinite(r.median) ? `${r.median.toFixed(3)}×` : '-');
      const range = wall && rounds > 1 ? pad(`${wall.min.toFixed(2)}–${wall.max.toFixed(2)}`, 13) : '';
      const modelledTps = m.metrics.generatedTokens / (m.modelledMs / 1000);
      const baseModelled = base ? base.metrics.generatedTokens / (base.modelledMs / 1000) : NaN;
      const curveTps = m.metrics.generatedTokens / (m.curvesMs / 1000);
      const baseCurve = base ? base.metrics.generatedTokens / (base.curvesMs / 1000) : NaN;
      const ratio = (x: number, y: number | undefined) => (y && Number.isFinite(y) ? `${(x / y).toFixed(3)}×` : '-');
      console.log(
        `${name.padEnd(18)}${pad(m.metrics.throughput.toFixed(1), 9)}${pad(times(wall), 9)}${range}` +
          `${pad(times(decode), 9)}${rounds >= 3 ? pad(ratio(stepMedianOf(name), stepMedianOf('static')), 9) : ''}${pad(times(scheduleOnly(name)), 8)}` +
          `${pad(modelledTps.toFixed(1), 10)}${pad(ratio(modelledTps, baseModelled), 9)}${pad(curveTps.toFixed(1), 10)}${pad(ratio(curveTps, baseCurve), 9)}${pad(m.metrics.meanAcceptedTokens.toFixed(2), 7)}` +
          `${pad(m.metrics.draftUtilisation.toFixed(2), 7)}${pad(m.metrics.verifiedTokensPerStep.toFixed(1), 12)}${pad(m.metrics.steps, 7)}${pad(m.moved, 7)}${pad(ms(m.metrics.stepTime?.draftMs), 10)}${pad(ms(m.metrics.stepTime?.verifyMs), 11)}`,
      );
    }
    const control = policies.find((p) => p !== 'static' && splitRepeat(p).repeated === 'static');
    const noise = control ? wallRatio(control, (x) => x.throughput) : undefined;
    if (control && noise) {
      const stepMedian = rounds >= 3 ? `, step-median ${(stepMedianOf(control) / stepMedianOf('static')).toFixed(3)}×` : '';
      console.log(`A/A control: ${control} is static run again: ${noise.median.toFixed(3)}× (${noise.min.toFixed(2)}–${noise.max.toFixed(2)})${stepMedian}; wall ratios as close to 1 are noise`);
    }
  }
  console.log('');
}
await pair.release();
