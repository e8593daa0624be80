import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrationPrompts, executeCalibrate, formatProfile, register } from '../../../src/cli/commands/calibrate';
import { needsWarmup, resolveGates } from '../../../src/engine/run/resolve-gates';
import { autoSignal } from '../../../src/engine/run/warmup';
import { calibrateDepths, DEFAULT_SIGNIFICANCE } from '../../../src/engine/calibrate/calibration';
import { loadProfile, parseProfile, saveProfile } from '../../../src/engine/calibrate/profile';
import { profileOf } from '../../engine/calibrate/profile-fixture';
import { RunConfigSchema } from '../../../src/shared/config';
import { loadFixturePair, randomPrompts, type FixturePair } from '../../engine/fixtures/pair';
import { tempDir } from '../../engine/model/helpers';
import { runCli } from '../helpers';

describe('calibrate command and gate resolution', () => {
  let pair: FixturePair;
  const tmp = tempDir('echo-calibrate-');
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 4 });
  });
  afterAll(async () => {
    await pair?.release();
    tmp.cleanup();
  });

  it('needs exactly one of --domain and --prompts', async () => {
    await expect(calibrationPrompts({}, 4)).rejects.toThrow(/exactly one of --domain/);
    await expect(calibrationPrompts({ domain: 'code', prompts: 'x.jsonl' }, 4)).rejects.toThrow(/exactly one of --domain/);
    await expect(calibrationPrompts({ domain: 'no-such-domain' }, 4)).rejects.toThrow(/unknown domain "no-such-domain"/);
  });

  it('writes a loadable profile from a prompts file on a given pair', async () => {
    const prompts = join(tmp.path, 'prompts.jsonl');
    writeFileSync(prompts, ['ab cd ef', 'the quick brown fox', 'one two three', 'x = y + 1'].map((p, i) => JSON.stringify({ id: `p${i}`, prompt: p })).join('\n'));
    const out = join(tmp.path, 'profile.json');
    const report = await executeCalibrate({
      prompts,
      draft: pair.draftDir,
      target: pair.targetDir,
      delta: 0.55,
      depth: 3,
      requests: 8,
      batch: 4,
      maxNewTokens: 16,
      threads: 1,
      out,
    });
    const profile = await loadProfile(out);
    expect(profile).toEqual(report.profile);
    expect(profile.models.target).toBe(pair.targetDir);
    expect(profile.targetPrecision).toBe('float32');
    expect(formatProfile(profile).split('\n')[0]).toBe('calibrated with the target in float32 weights');
    expect(profile.samples.prompts).toBe(4); // each of the file's four prompts once: copies teach nothing
    expect(profile.depths).toHaveLength(3);
    expect(formatProfile(profile)).toMatch(/D_sig \(AUC > 0\.55/);
    // Both signals measured, the better separating one kept.
    const best = { confidence: autoSignal(profile.signals!) };
    expect(profile.confidence).toBe(best.confidence);
    expect(formatProfile(profile)).toMatch(new RegExp(`confidence signal: ${best.confidence} \\(mean AUC over depths: path-prob [\\d.]+, path-margin [\\d.]+\\)`));
    // τ_d by the budget rule unless told: each depth weighed against the next layer's acceptance rate.
    expect(profile.tauRule).toBe('budget');
    expect(formatProfile(profile)).toMatch(/τ rule budget/);
    const rate = (d: { accepted: number; rejected: number }) => d.accepted / (d.accepted + d.rejected);
    const [d0, d1] = profile.depths;
    expect(d0.tau).not.toBeNull();
    expect(d0.alternative).toBeCloseTo(rate(d1), 12);
    // Cuts must be significant unless told otherwise, and the printout says so.
    expect(profile.significance).toBe(DEFAULT_SIGNIFICANCE);
    expect(formatProfile(profile)).toMatch(/one-sided binomial test at 0\.05/);
    expect(formatProfile({ ...profile, significance: 1 })).not.toMatch(/binomial/);
  });

  it('--target-precision int8 calibrates on the int8 target and records it; older profiles read as float32; a bad value is refused in one line', async () => {
    const prompts = join(tmp.path, 'prompts-int8.jsonl');
    writeFileSync(prompts, ['ab cd ef', 'the quick brown fox', 'one two three', 'x = y + 1'].map((p, i) => JSON.stringify({ id: `p${i}`, prompt: p })).join('\n'));
    const out = join(tmp.path, 'profile-int8.json');
    const common = ['calibrate', '--prompts', prompts, '--draft', pair.draftDir, '--target', pair.targetDir, '--delta', '0.55', '--depth', '3', '--requests', '8', '--batch', '4', '--max-new-tokens', '16', '--threads', '1'];
    const { stdout } = await runCli(register, [...common, '--target-precision', 'int8', '--out', out, '--json']);
    expect(JSON.parse(stdout).targetPrecision).toBe('int8');
    const profile = await loadProfile(out);
    expect(profile.targetPrecision).toBe('int8');
    expect(formatProfile(profile).split('\n')[0]).toBe('calibrated with the target in int8 weights');
    const { targetPrecision: _, ...older } = profile;
    expect(parseProfile(older).targetPrecision).toBe('float32');
    const refused = await runCli(register, [...common, '--target-precision', 'fp16', '--out', join(tmp.path, 'never.json')]).catch((err: Error) => err);
    expect((refused as Error).message).toMatch(/--target-precision takes float32, int8, int4, got "fp16"/);
    expect((refused as Error).message).not.toContain('\n');
  }, 60_000);

  it('shows a sweet spot whose cuts all failed the test as passing everything', () => {
    // Eight of each, interleaved: no cut truncates samples accepted less often than chance allows.
    const accepted = [0.51, 0.53, 0.55, 0.57, 0.59, 0.61, 0.63, 0.65];
    const rejected = [0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.62, 0.64];
    const depths = calibrateDepths([{ depth: 0, accepted, rejected }], { delta: 0.75, targetDepth: 0 });
    expect(depths[0]).toMatchObject({ sweetSpot: true, threshold: { truePositiveRate: 1, falsePositiveRate: 1 } });
    const text = formatProfile(profileOf(depths));
    expect(text).toMatch(/^ +0 +8 +8 +0\.\d{3} +none +0\.500 +yes$/m);
    expect(text).toMatch(/D_sig .*: d0:0\.25 \(no cut beat chance: passes all\)/);
  });

  it('says which depths had too few samples for a τ, and how to get them one', () => {
    // The root is almost always accepted: 12 accepted, 3 rejected, below the 8 of each needed.
    const depths = calibrateDepths(
      [
        { depth: 0, accepted: new Array(12).fill(0).map((_, i) => 0.5 + i / 30), rejected: [0.1, 0.2, 0.3] },
        { depth: 1, accepted: [0.6, 0.7, 0.8, 0.9, 0.65, 0.75, 0.85, 0.95], rejected: [0.1, 0.2, 0.3, 0.4, 0.15, 0.25, 0.35, 0.45] },
      ],
      { delta: 0.75, targetDepth: 1 },
    );
    const profile = profileOf(depths);
    expect(formatProfile(profile)).toMatch(/too few rejected samples for an AUC at depth 0 \(at least 8 of each\): no τ there; more warm-up prompts \(--requests\)/);
    expect(formatProfile({ ...profile, depths: profile.depths.slice(1) })).not.toMatch(/too few/);
  });

  it('takes τ_d from --taus, then --profile, else calibrates on a warm-up and says so', async () => {
    const workload = randomPrompts(8, 3);
    const base = { target: pair.target, draft: pair.draft, workload, eosTokenIds: [], maxLength: pair.target.maxLength, models: { draft: 'd', target: 't' } };
    const config = (extra: object) => RunConfigSchema.parse({ policy: 'echo', batch: 4, kmax: 16, requests: 8, maxNewTokens: 16, temperature: 0, seed: 0, ...extra });

    expect(await resolveGates({ ...base, config: config({ policy: 'static' }) })).toBeNull();
    expect(await resolveGates({ ...base, config: config({ taus: { '0': 0.3 } }) })).toMatchObject({ source: 'flags', taus: { '0': 0.3 }, confidence: 'path-prob' });
    expect(await resolveGates({ ...base, config: config({ taus: { '0': 0.6 }, confidence: 'path-margin' }) })).toMatchObject({ confidence: 'path-margin' });

    const lines: string[] = [];
    const warm = await resolveGates({ ...base, config: config({}), log: (l) => lines.push(l) });
    expect(warm?.source).toBe('warm-up');
    expect(lines[0]).toMatch(/no --profile given: calibrating τ_d on a warm-up \(the first 8 prompts, 16 tokens each\)/);
    expect(Object.keys(warm!.taus).length).toBeGreaterThan(0);
    // Without a signal the warm-up measures both and gates with the better separating one.
    const best = { confidence: autoSignal(warm!.profile!.signals!) };
    expect(warm!.profile!.signals!.map((s) => s.confidence)).toEqual(['path-prob', 'path-margin']);
    expect(warm).toMatchObject({ confidence: best.confidence, profile: { confidence: best.confidence } });
    expect(lines[1]).toMatch(new RegExp(`${best.confidence} signal \\(mean AUC path-prob [\\d.]+, path-margin [\\d.]+\\)`));
    // A signal the run names is the only one the warm-up measures.
    const probWarm = await resolveGates({ ...base, config: config({ confidence: 'path-prob' }) });
    expect(probWarm).toMatchObject({ confidence: 'path-prob', profile: { signals: [{ confidence: 'path-prob' }] } });
    const marginWarm = await resolveGates({ ...base, config: config({ confidence: 'path-margin' }) });
    expect(marginWarm).toMatchObject({ confidence: 'path-margin', profile: { signals: [{ confidence: 'path-margin' }] } });

    // A run's few requests need not limit its warm-up: it takes the prompts it is given for that.
    const wider: string[] = [];
    await resolveGates({ ...base, warmupWorkload: randomPrompts(30, 5), config: config({}), log: (l) => wider.push(l) });
    expect(wider[0]).toMatch(/on a warm-up \(the first 24 prompts, 16 tokens each\)/);
    expect([needsWarmup(config({})), needsWarmup(config({ taus: { '0': 0.3 } })), needsWarmup(config({ profile: 'p.json' })), needsWarmup(config({ policy: 'static' }))]).toEqual([true, false, false, false]);

    const file = join(tmp.path, 'p.json');
    await saveProfile(file, warm!.profile!);
    const fromFile = await resolveGates({ ...base, config: config({ profile: file }), log: (l) => lines.push(l) });
    expect(fromFile).toMatchObject({ source: 'profile', taus: warm!.taus, denseTaus: warm!.denseTaus });
    expect(lines.join('\n')).not.toMatch(/calibrated with the target in/);
    // A profile calibrated on another target precision still gates, and the run is told.
    const int8File = join(tmp.path, 'p-int8.json');
    await saveProfile(int8File, { ...warm!.profile!, targetPrecision: 'int8' });
    const told: string[] = [];
    await resolveGates({ ...base, config: config({ profile: int8File }), log: (l) => told.push(l) });
    expect(told).toEqual([
      `note: ${int8File} was calibrated with the target in int8 and this run loads it in float32: its τ_d were fitted to the other target's acceptances (calibrate --target-precision float32)`,
    ]);
  });
});
