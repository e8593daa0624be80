// `echo-studio sweep` through commander on a tiny random pair: rows per batch and policy, ratios to
// the baseline, the lossless check, CSV, and each bad input as one clear error.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConfigFromFlags } from '../../../src/cli/run-config.js';
import { formatSweep, kmaxOf, register, type SweepReport } from '../../../src/cli/commands/sweep.js';
import { atBaselineStepCost } from '../../../src/shared/step-costs.js';
import { percentile } from '../../../src/engine/metrics/percentile.js';
import { loadRunSetup } from '../../../src/engine/run/session-run.js';
import { runSweep } from '../../../src/engine/run/sweep.js';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { suggestKmax } from '../../../src/engine/cost/knee.js';
import { writeFixtureModel } from '../../engine/model/fixtures.js';
import { tempDir } from '../../engine/model/helpers.js';
import { runCli, saveRootGateProfile } from '../helpers.js';

const tmp = tempDir('echo-sweep-cli-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let pairFlags: string[];
let promptsFile: string;
let profileFile: string;

beforeAll(async () => {
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  const targetDir = join(tmp.path, 'target');
  const draftDir = join(tmp.path, 'draft');
  writeFixtureModel(targetDir, { seed: 3, hiddenSize: 32 });
  writeFixtureModel(draftDir, { seed: 4, hiddenSize: 32, numLayers: 1 });
  pairFlags = ['--draft', draftDir, '--target', targetDir];
  promptsFile = join(tmp.path, 'prompts.jsonl');
  writeFileSync(promptsFile, ['{"id":"a","prompt":"def add(x, y):"}', '{"id":"b","prompt":"Once upon a time"}', '{"id":"c","prompt":"x = 1"}'].join('\n'));
  // The random pair separates nothing, so a warm-up would find no sweet spot: gate the root by profile.
  profileFile = await saveRootGateProfile(join(tmp.path, 'profile.json'), { draft: draftDir, target: targetDir }, 'path-prob', 0.3);
});
afterAll(() => {
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

const sweep = async (args: string[]): Promise<string> => (await runCli(register, ['sweep', ...args])).stdout;

describe('echo-studio sweep', () => {
  it('runs every policy at every batch size on one pair, against the baseline, and checks the outputs agree', async () => {
    const csv = join(tmp.path, 'sweep.csv');
    const stepsFile = join(tmp.path, 'steps.csv');
    const common = ['--prompts', promptsFile, '--requests', '5', '--max-new-tokens', '6', '--profile', profileFile, ...pairFlags];
    const { stdout, stderr } = await runCli(register, ['sweep', '--policies', 'ar,static,echo', '--batches', '1,3', '--kmax', '8,12', '--rounds', '2', ...common, '--json', '--csv', csv, '--steps', stepsFile]);
    const report = JSON.parse(stdout) as SweepReport;
    // By default a round's runs take turns step by step; the turn order reverses every other round,
    // so each run follows each of the others.
    expect([...stderr.matchAll(/batch 1, K_max 8, round (\d)\/2: (\w+)/g)].map((m) => `${m[1]}:${m[2]}`)).toEqual(['1:ar', '1:static', '1:echo', '2:echo', '2:static', '2:ar']);
    expect(report.baseline).toBe('static');
    expect(report.interleave).toBe('steps');
    expect(report.rows.map((r) => [r.batch, r.kmax, r.policy])).toEqual([
      [1, 8, 'ar'],
      [1, 8, 'static'],
      [1, 8, 'echo'],
      [3, 12, 'ar'],
      [3, 12, 'static'],
      [3, 12, 'echo'],
    ]);
    for (const r of report.rows) {
      expect(r.metrics.requests).toBe(5);
      expect(r.metrics.verifiedTokensPerStep).toBeLessThanOrEqual(r.kmax);
      expect(r.sameTokens).toBe(true);
      // Where a step's time went: its parts add up to the decode time per step, plus the prefill.
      const t = r.metrics.stepTime!;
      for (const part of [t.draftMs, t.verifyMs, t.prefillMs]) expect(part).toBeGreaterThanOrEqual(0);
      expect(t.draftMs + t.verifyMs + t.otherMs).toBeCloseTo((1000 * r.metrics.generatedTokens) / r.metrics.decodeThroughput! / r.metrics.steps, 6);
      expect(r.roundThroughputs).toHaveLength(2);
      expect(r.roundThroughputs).toContain(r.metrics.throughput);
      // Each ratio is paired within a round: with two rounds, the mean of the two rounds' ratios.
      const base = report.rows.find((b) => b.batch === r.batch && b.policy === 'static')!;
      const ratios = r.roundThroughputs.map((t, i) => t / base.roundThroughputs[i]);
      expect(r.vsBaseline.median).toBeCloseTo((ratios[0] + ratios[1]) / 2, 9);
      expect([r.vsBaseline.min, r.vsBaseline.max]).toEqual([Math.min(...ratios), Math.max(...ratios)]);
      if (r.policy === 'static') expect([r.vsBaseline.median, r.decodeVsBaseline.median]).toEqual([1, 1]);
      // The sched ratio prices each round's steps at the baseline's cost in that same round.
      expect(r.roundStepCosts.map((c) => c.steps)).toEqual([r.metrics.steps, r.metrics.steps]);
      const priced = r.roundStepCosts.map((c, i) => atBaselineStepCost(c, base.roundStepCosts[i]));
      expect([r.scheduleVsBaseline.min, r.scheduleVsBaseline.max]).toEqual([Math.min(...priced), Math.max(...priced)]);
      if (r.policy === 'static') expect(r.scheduleVsBaseline.median).toBeCloseTo(1, 9);
    }
    // Greedy speculation emits ar's tokens, so every policy generated as many.
    expect(new Set(report.rows.map((r) => r.metrics.generatedTokens)).size).toBe(1);
    // --json explains each entry's first round: the same steps and tokens the run's metrics count.
    for (const r of report.rows) {
      const x = r.explanation!;
      expect(x.steps).toBe(r.metrics.steps);
      expect(x.actual.emitted).toBe(r.metrics.generatedTokens);
      expect(x.actual.accepted / x.requestSteps).toBeCloseTo(r.metrics.meanAcceptedTokens, 9);
      expect(x.oracle.accepted).toBeGreaterThanOrEqual(x.actual.accepted);
      expect(x.candidatesSeen).toBe(true);
      expect(x.gates === null).toBe(r.policy !== 'echo'); // the profile gates the root
      if (r.policy === 'ar') expect(x.draft.forwards).toBe(0);
    }
    expect(Object.keys(report.verifySlopes!)).toEqual(['1', '3']);
    const lines = readFileSync(csv, 'utf8').trim().split('\n');
    expect(lines[0]).toMatch(/^batch,kmax,policy,throughput,vs_baseline,vs_baseline_min,vs_baseline_max,/);
    expect(lines).toHaveLength(7);
    expect(formatSweep(report)).toMatch(/batch 3, K_max 12, 5 requests, runs taking turns step by step, 2 rounds[\s\S]*every policy emitted the same tokens as ar \(lossless\)/);
    // Two rounds are too few for a step's median to outvote a burst: no step-median column.
    expect(report.rows.every((r) => r.stepMedianThroughput === undefined)).toBe(true);
    expect(formatSweep(report)).not.toMatch(/step-median/);
    expect(formatSweep(report)).toMatch(/static +[\d.]+ +1\.000 \(1\.000–1\.000\)/);
    expect(formatSweep(report)).toMatch(/decode ÷ +sched ÷ .*draft ms +verify ms +prefill ms/);
    expect(lines[0]).toMatch(/,draft_ms_per_step,verify_ms_per_step,prefill_ms_per_step,other_ms_per_step,modelled_throughput,modelled_vs_baseline,step_median_throughput,step_median_vs_baseline,sched_vs_baseline,decode_step_onnx_ms,decode_step_engine_ms$/);
    // The median decode step, split: onnxruntime's calls and the engine's work around them, each
    // a part of a step, so neither exceeds the longest step of the run.
    for (const r of report.rows) {
      const { model, engine } = r.decodeStepMs!;
      expect(model).toBeGreaterThan(0);
      expect(engine).toBeGreaterThan(0);
      expect(model + engine).toBeLessThan(r.metrics.wallMs);
    }
    expect(formatSweep(report)).toMatch(/onnx\|engine ms/);
    // --steps: every step of every run, as many as each row's rounds took, each a step of its run.
    const [header, ...stepLines] = readFileSync(stepsFile, 'utf8').trim().split('\n');
    expect(header).toBe('batch,entry,round,step,requests,verified_tokens,draft_forwards,draft_rows,draft_ms,pack_ms,verify_ms,commit_ms,total_ms,model_ms,prefill_ms');
    const steps = stepLines.map((line) => line.split(','));
    for (const r of report.rows) {
      r.roundStepCosts.forEach((costs, round) => {
        const mine = steps.filter(([batch, entry, n]) => Number(batch) === r.batch && entry === r.policy && Number(n) === round + 1);
        expect(mine.map((c) => Number(c[3]))).toEqual(Array.from({ length: costs.steps }, (_, i) => i));
      });
    }
    expect(steps).toHaveLength(report.rows.reduce((n, r) => n + r.roundStepCosts.reduce((m, c) => m + c.steps, 0), 0));
    for (const c of steps) expect(Number(c[12])).toBeGreaterThanOrEqual(Number(c[13])); // a step's time holds its onnxruntime calls
    // Each row's split is the median of its rounds' decode steps (those that prefilled nothing) in that file.
    for (const r of report.rows) {
      const decode = steps.filter(([batch, entry]) => Number(batch) === r.batch && entry === r.policy).filter((c) => Number(c[14]) === 0);
      expect(r.decodeStepMs).toEqual({ model: percentile(decode.map((c) => Number(c[13])), 50), engine: percentile(decode.map((c) => Number(c[12]) - Number(c[13])), 50) });
    }
    const forwards = (entry: string) => steps.filter((c) => c[1] === entry).reduce((n, c) => n + Number(c[6]), 0);
    expect([forwards('ar'), forwards('static') > 0]).toEqual([0, true]);
    expect(formatSweep(report)).toMatch(/static +[\d.]+ +1\.000 .* [\d.]+\|[\d.]+\n/);
  });

  it('says so when a policy emitted other tokens, and that sampled runs are not compared token by token', () => {
    const metrics = { policy: 'x', steps: 1, requests: 1, generatedTokens: 1, wallMs: 1, throughput: 1, decodeThroughput: 1, meanAcceptedTokens: 0, meanAcceptanceLength: 1, draftUtilisation: 0, verifiedTokensPerStep: 1, acceptancePerPosition: [], paddingWaste: 0, tpotP50Ms: 1, tpotP99Ms: 1 };
    const one = { median: 1, min: 1, max: 1, rounds: 1 };
    const row = (policy: string, sameTokens: boolean | null) => ({ batch: 1, kmax: 4, policy, metrics, roundThroughputs: [1], roundDecodeThroughputs: [1], roundStepCosts: [{ steps: 1 }], sameTokens, vsBaseline: one, decodeVsBaseline: one, scheduleVsBaseline: one });
    expect(formatSweep({ baseline: 'ar', interleave: 'runs', rows: [row('ar', true), row('chain', false)] })).toMatch(/NOT LOSSLESS: chain emitted other tokens than ar/);
    expect(formatSweep({ baseline: 'ar', interleave: 'runs', rows: [row('ar', null), row('chain', null)] })).toMatch(/sampled \(temperature > 0\)/);
  });

  it('takes K_max from a hardware profile\'s knee when none is given', async () => {
    const hw = join(tmp.path, 'hw.json');
    const curve = (scale: number) => [1, 2, 4, 8, 16, 32, 64].map((tokens) => ({ tokens, ms: scale * Math.max(4, tokens) })); // knee 4
    const host = { cpu: 'test', threads: 1, provider: 'cpu' };
    writeFileSync(hw, JSON.stringify({ kind: 'echo-hw-profile', version: 1, createdAt: '2026-01-01T00:00:00Z', host, models: { draft: 'd', target: 't' }, slots: 8, context: 8, target: curve(1), draft: curve(0.1) }));
    const args = ['--policies', 'ar,chain', '--batches', '1,5', '--prompts', promptsFile, '--requests', '5', '--max-new-tokens', '4', ...pairFlags, '--json'];
    const report = JSON.parse(await sweep([...args, '--hw-profile', hw])) as SweepReport;
    expect(report.rows.map((r) => [r.batch, r.kmax])).toEqual([
      [1, 4],
      [1, 4],
      [5, 9],
      [5, 9],
    ]);
    expect((JSON.parse(await sweep([...args, '--hw-profile', hw, '--kmax', '6'])) as SweepReport).rows.map((r) => r.kmax)).toEqual([6, 6, 6, 6]);
    // The same profile's curves as a modelled clock: ratios without the machine's noise, the same
    // in every sweep of a greedy workload.
    const modelled = JSON.parse(await sweep([...args, '--hw-profile', hw, '--hw', 'curves'])) as SweepReport;
    expect(modelled.clock).toMatch(/measured curves \(target and draft over up to 8 requests\)/);
    for (const r of modelled.rows) {
      expect(r.modelledThroughput).toBeGreaterThan(0);
      if (r.policy === 'ar') expect(r.modelledVsBaseline).toBe(1);
    }
    const again = JSON.parse(await sweep([...args, '--hw-profile', hw, '--hw', 'curves'])) as SweepReport;
    expect(again.rows.map((r) => r.modelledThroughput)).toEqual(modelled.rows.map((r) => r.modelledThroughput));
    expect(formatSweep(modelled)).toMatch(/modelled ÷[\s\S]*modelled: measured curves/);
    expect(JSON.parse(await sweep(args)).clock).toBeUndefined();
    // A named device budgets the runs by its own knee, not this machine's profile's, and prices
    // drafting as it would.
    const device = clockFromSpec('cpu-laptop').costs;
    const { stdout, stderr } = await runCli(register, ['sweep', ...args, '--hw-profile', hw, '--hw', 'cpu-laptop']);
    expect((JSON.parse(stdout) as SweepReport).rows.map((r) => r.kmax)).toEqual([1, 1, 5, 5].map((b) => suggestKmax({ kmax: device.knee }, b)));
    expect(stderr).toContain(`K_max from its knee, ${device.knee} tokens`);
    expect(stderr).toContain(`draft forward ${device.draftForward} of a target forward (the device's)`);
  });

  it('runs an entry with its own draft window on the same pair, in paired rounds, and restores the loaded one', async () => {
    const common = ['--prompts', promptsFile, '--requests', '4', '--max-new-tokens', '12', '--batches', '2', '--kmax', '10', ...pairFlags];
    const windows = async (policies: string, extra: string[] = []) =>
      JSON.parse(await sweep(['--policies', policies, '--rounds', '2', ...common, ...extra, '--json'])) as SweepReport;
    // One sink and the 2 rows before each drafted token: every prompt here is longer than that.
    const report = await windows('eagle2,eagle2@1:2,ar');
    expect(report.rows.map((r) => r.policy)).toEqual(['eagle2', 'eagle2@1:2', 'ar']);
    // Runs in lockstep share one draft session, hence one window: these take turns whole.
    expect(report.interleave).toBe('runs');
    expect((await runCli(register, ['sweep', '--policies', 'eagle2,eagle2@1:2', ...common, '--json'])).stderr).toMatch(/different windows, so their runs take turns whole/);
    await expect(sweep(['--policies', 'eagle2,eagle2@1:2', '--interleave', 'steps', ...common])).rejects.toThrow(/entries that give the draft other windows \(loaded, 1:2\) cannot take turns step by step/);
    const [whole, narrow] = report.rows;
    // Another window drafts other tokens (so other acceptance), and the output stays the target's.
    expect(narrow.metrics.meanAcceptedTokens).not.toBe(whole.metrics.meanAcceptedTokens);
    expect(report.rows.every((r) => r.sameTokens)).toBe(true);
    expect(narrow.vsBaseline.rounds).toBe(2);
    // With --draft-window every entry without its own window runs with that one; @whole with none.
    const loaded = await windows('eagle2,eagle2@whole,eagle2@1:2', ['--draft-window', '1:2']);
    expect(loaded.rows[0].metrics.meanAcceptedTokens).toBe(narrow.metrics.meanAcceptedTokens);
    expect(loaded.rows[1].metrics.meanAcceptedTokens).toBe(whole.metrics.meanAcceptedTokens);
    expect(loaded.rows[2].metrics.meanAcceptedTokens).toBe(narrow.metrics.meanAcceptedTokens);
    expect(formatSweep(loaded)).toMatch(/\neagle2@whole +\d/);
    await expect(sweep(['--policies', 'eagle2@4', ...pairFlags])).rejects.toThrow(/eagle2@4: a policy takes @SINK:RECENT .* or @whole/);
    await expect(sweep(['--policies', 'ar@4:16', ...pairFlags])).rejects.toThrow(/ar@4:16: ar runs no draft/);
  });

  it('runs the baseline again as an A/A control, and any entry again as ENTRY#N', async () => {
    const common = ['--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '4', '--batches', '2', '--kmax', '6', '--rounds', '2', ...pairFlags];
    const { stdout, stderr } = await runCli(register, ['sweep', '--policies', 'ar,chain', '--baseline', 'chain', '--control', ...common, '--json']);
    const report = JSON.parse(stdout) as SweepReport;
    expect(report.rows.map((r) => r.policy)).toEqual(['ar', 'chain', 'chain#2']);
    // The copy takes its turns like any entry, once per round.
    expect([...stderr.matchAll(/round (\d)\/2: (\S+) /g)].map((m) => m[2])).toEqual(['ar', 'chain', 'chain#2', 'chain#2', 'chain', 'ar']);
    const [, chain, copy] = report.rows;
    // The same computation: the same acceptance and steps, only the wall clock differs.
    expect(copy.metrics.steps).toBe(chain.metrics.steps);
    expect(copy.metrics.meanAcceptedTokens).toBe(chain.metrics.meanAcceptedTokens);
    expect(copy.sameTokens).toBe(true);
    expect(copy.vsBaseline.median).toBeCloseTo((copy.roundThroughputs[0] / chain.roundThroughputs[0] + copy.roundThroughputs[1] / chain.roundThroughputs[1]) / 2, 9);
    expect(formatSweep(report)).toMatch(/A\/A control: chain#2 is chain run again; its ratio, [\d.]+ \([\d.]+–[\d.]+\), is how far two identical runs drift apart/);
    // Listed by hand, a repeat needs what it repeats; its number is 2 or more.
    expect((JSON.parse(await sweep(['--policies', 'ar,ar#2,ar#3', ...common, '--json'])) as SweepReport).rows.map((r) => r.policy)).toEqual(['ar', 'ar#2', 'ar#3']);
    await expect(sweep(['--policies', 'ar,chain#2', ...pairFlags])).rejects.toThrow(/chain#2 repeats chain, which is not among the policies/);
    await expect(sweep(['--policies', 'ar,ar#1', ...pairFlags])).rejects.toThrow(/ar#1: a repeat is ENTRY#N with N ≥ 2/);
    await expect(sweep(['--policies', 'ar,ar#x', ...pairFlags])).rejects.toThrow(/ar#x: a repeat is ENTRY#N/);
    expect(formatSweep(JSON.parse(await sweep(['--policies', 'ar,chain', ...common, '--json'])) as SweepReport)).not.toMatch(/A\/A control/);
  });

  it('takes turns step by step or runs whole, to the same tokens and steps; with 3 rounds, each step\'s median time', async () => {
    const common = ['--policies', 'chain,eagle2,eagle2#2', '--baseline', 'eagle2', '--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '6', '--batches', '1,2', '--kmax', '6', '--rounds', '3', ...pairFlags, '--json'];
    const steps = JSON.parse(await sweep([...common, '--interleave', 'steps'])) as SweepReport;
    const runs = JSON.parse(await sweep([...common, '--interleave', 'runs'])) as SweepReport;
    expect([steps.interleave, runs.interleave]).toEqual(['steps', 'runs']);
    for (const [a, b] of steps.rows.map((r, i) => [r, runs.rows[i]])) {
      expect([a.batch, a.policy, a.metrics.steps, a.metrics.generatedTokens, a.metrics.meanAcceptedTokens]).toEqual([b.batch, b.policy, b.metrics.steps, b.metrics.generatedTokens, b.metrics.meanAcceptedTokens]);
      expect(a.sameTokens).toBe(true);
      expect(a.roundThroughputs).toHaveLength(3);
      expect(a.stepMedianThroughput).toBeGreaterThan(0);
      expect(a.stepMedianVsBaseline).toBeCloseTo(a.stepMedianThroughput! / steps.rows.find((r) => r.batch === a.batch && r.policy === 'eagle2')!.stepMedianThroughput!, 9);
    }
    expect(formatSweep(steps)).toMatch(/step-median ÷[\s\S]*A\/A control: eagle2#2 is eagle2 run again; its ratio, [\d.]+ \([\d.]+–[\d.]+\) \(step-median [\d.]+\)/);
    expect(formatSweep(runs)).toMatch(/batch 2, K_max 6, 3 requests, one run after another, 3 rounds/);
  });

  it('refuses to take turns on a pair loaded with too few KV slots, naming how many it needs', async () => {
    const config = runConfigFromFlags({ policy: 'chain', batch: 2, kmax: 6, prompts: promptsFile, requests: 3, maxNewTokens: 4, temperature: 0, seed: 0, draft: pairFlags[1], target: pairFlags[3] });
    const setup = await loadRunSetup(config, { threads: 1 });
    try {
      const plan = { policies: ['chain', 'ar'], batches: [2], kmax: () => 6, rounds: 1 };
      await expect(runSweep(setup, { ...plan, interleave: 'steps' })).rejects.toThrow(/this sweep needs 4 KV slots \(batch 2 × 2 entries taking turns by steps\); the pair was loaded with 2/);
      // One run after another, the batch's slots suffice.
      expect((await runSweep(setup, { ...plan, interleave: 'runs' })).map((r) => r.sameTokens)).toEqual([true, true]);
    } finally {
      await setup.release();
    }
  });

  it('takes K_max once for every batch size, once per batch size, or max(16, 8 × batch)', () => {
    expect([1, 8, 32].map(kmaxOf({ batches: [1, 8, 32] }, 15))).toEqual([15, 15, 47]);
    expect([1, 8].map(kmaxOf({ batches: [1, 8] }))).toEqual([16, 64]);
    expect([1, 8].map(kmaxOf({ batches: [1, 8], kmax: [40] }))).toEqual([40, 40]);
    expect([1, 8].map(kmaxOf({ batches: [1, 8], kmax: [10, 30] }))).toEqual([10, 30]);
    expect(() => kmaxOf({ batches: [1, 8], kmax: [10, 30, 50] })).toThrow(/--kmax lists 3 values for 2 batch sizes/);
  });

  it('refuses what it cannot run before loading anything, in one line', async () => {
    await expect(sweep(['--policies', 'ar,nope', ...pairFlags])).rejects.toThrow(/unknown policy "nope"/);
    await expect(sweep(['--policies', 'ar,chain', '--baseline', 'static', ...pairFlags])).rejects.toThrow(/--baseline static is not among --policies ar,chain/);
    await expect(sweep(['--policies', 'ar,ar', ...pairFlags])).rejects.toThrow(/listed twice/);
    await expect(sweep(['--policies', 'ar', '--batches', '4', '--kmax', '3', ...pairFlags])).rejects.toThrow(/K_max \(3\) is below the batch size \(4\): every request needs at least its root token verified/);
    await expect(sweep(['--batches', '1,,2', ...pairFlags])).rejects.toThrow(/comma-separated list/);
    await expect(sweep(['--policies', 'ar', '--hw', 'curves', ...pairFlags])).rejects.toThrow(/--hw curves needs a hardware profile/);
    await expect(sweep(['--policies', 'ar', '--hw', 'tpu', ...pairFlags])).rejects.toThrow(/unknown hardware "tpu"/);
  });
});
