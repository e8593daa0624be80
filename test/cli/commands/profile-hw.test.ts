// `echo-studio profile-hw` through commander on a tiny random pair: the curves, the knee and the
// flags it prints, the profile file it writes (with the precisions it timed at), and a bad
// precision refused in one line.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executeProfileHw, formatProfileHw, register } from '../../../src/cli/commands/profile-hw.js';
import { loadHardwareProfile } from '../../../src/engine/cost/measure.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';
import { runCli } from '../helpers.js';

const tmp = tinyPairFolders('echo-profile-hw-cli-');
const { targetDir, draftDir } = tmp;
const small = ['--max-tokens', '32', '--repeats', '1', '--slots', '4', '--context', '4', '--threads', '1'];

describe('echo-studio profile-hw', () => {
  it('measures both models, fits a knee, and prints the flags that price runs with it', async () => {
    const report = await executeProfileHw({ draft: draftDir, target: targetDir, maxTokens: 32, repeats: 1, slots: 4, context: 4, provider: 'cpu', threads: 1 });
    expect(report.profile.target.map((p) => p.tokens)).toEqual([1, 2, 4, 8, 12, 16, 24, 32]);
    expect(report.profile.draft).toHaveLength(8);
    expect(report.target.kmax).toBeGreaterThanOrEqual(1);
    for (const s of report.suggestions) expect(s.kmax).toBeGreaterThanOrEqual(s.batch);
    // Timed as runs load the pair unless told: the target in float32, the draft in int8 on CPU.
    expect(report.profile).toMatchObject({ targetPrecision: 'float32', draftPrecision: 'int8' });
    const text = formatProfileHw(report);
    expect(text.split('\n')[0]).toBe('timed with the target in float32 weights, the draft in int8');
    expect(text).toMatch(/suggested K_max: batch 1 → \d+/);
    // The flag it prints parses back into the fit: knee, γ, and one draft row in target forwards.
    const flag = /run --verify-cost (\d+):([0-9.e+-]+):([0-9.e+-]+)/.exec(text);
    expect(flag).not.toBeNull();
    expect(Number(flag![1])).toBe(report.target.kmax);
    expect(Number(flag![2])).toBeCloseTo(report.target.gamma, 2);
    expect(Number(flag![3])).toBeCloseTo((report.draft.gamma * report.draft.tArMs) / report.target.tArMs, 2);
    // And the draft forward's share of the target's, for run --draft-cost.
    const draftCost = /run --draft-cost ([0-9.e+-]+)/.exec(text);
    expect(Number(draftCost![1])).toBeCloseTo(report.draft.tArMs / report.target.tArMs, 2);
    // The draft's forwards after a target forward, each beyond its warm time: never negative, never rising.
    const after = report.profile.draftAfterTargetMs!;
    expect(after).toHaveLength(8);
    expect(after.every((ms, i) => ms >= 0 && (i === 0 || ms <= after[i - 1]))).toBe(true);
    expect(text).toMatch(/a step's draft forwards after the target's cost ([0-9.]+, ){7}[0-9.]+ ms more than the draft curve's warm time/);
    // One request's forwards, every size to 32 (the largest asked for), beside the spread ones.
    expect(report.profile.oneRequest?.target.map((p) => p.tokens)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(report.profile.oneRequest?.draft).toHaveLength(32);
    expect(text).toMatch(/one request's forwards, target: 4 rows [0-9.]+ ms \(spread curve [0-9.]+\), 8 rows .*: a step of one request is read off them/);
  }, 60_000);

  it('--target-precision int8 times the int8 target and records it in the JSON and the file it writes', async () => {
    const out = join(tmp.path, 'hw-int8.json');
    const { stdout, stderr } = await runCli(register, ['profile-hw', '--draft', draftDir, '--target', targetDir, ...small.slice(0, -2), '--target-precision', 'int8', '--out', out, '--json']);
    expect(stderr).toBe('');
    const printed = JSON.parse(stdout);
    expect(printed.profile).toMatchObject({ targetPrecision: 'int8', draftPrecision: 'int8' });
    // No --threads: the profile records the count the target was timed on (a fixture fits in a cache: one).
    expect(printed.profile.host.threads).toBe(1);
    const written = JSON.parse(readFileSync(out, 'utf8'));
    expect(written.targetPrecision).toBe('int8');
    expect(loadHardwareProfile(out)).toEqual(printed.profile);
    // Without --json the log names the weights each model was timed in, and the report says them first.
    const text = await runCli(register, ['profile-hw', '--draft', draftDir, '--target', targetDir, ...small, '--target-precision', 'int8', '--draft-precision', 'float32']);
    expect(text.stderr).toMatch(new RegExp(`^target: ${targetDir} \\(int8 weights\\)$`, 'm'));
    expect(text.stdout.split('\n')[0]).toBe('timed with the target in int8 weights, the draft in float32');
  }, 60_000);

  it('--context 4,12 times both forwards at two pasts: the first is the base, the second its longer curves', async () => {
    const out = join(tmp.path, 'hw-contexts.json');
    const { stdout } = await runCli(register, ['profile-hw', '--draft', draftDir, '--target', targetDir, ...small.slice(0, 6), '--context', '4,12', '--threads', '1', '--out', out]);
    const profile = loadHardwareProfile(out);
    expect(profile.context).toBe(4);
    expect(profile.longer?.map((l) => l.context)).toEqual([12]);
    expect(profile.longer?.[0].target.map((p) => p.tokens)).toEqual(profile.target.map((p) => p.tokens));
    expect(profile.longer?.[0].draft).toHaveLength(profile.draft.length);
    // One request's curves at each context too.
    expect(profile.longer?.[0].oneRequest?.target.map((p) => p.tokens)).toEqual(profile.oneRequest?.target.map((p) => p.tokens));
    expect(stdout).toMatch(/^at 12 rows of context \(base 4\): target ×[0-9.]+–[0-9.]+, draft ×[0-9.]+–[0-9.]+ the base's times/m);
    // Contexts must rise: the first is the base the knee comes from.
    const refused = await runCli(register, ['profile-hw', '--draft', draftDir, '--target', targetDir, ...small.slice(0, 6), '--context', '12,4']).catch((err: Error) => err);
    expect((refused as Error).message).toMatch(/--context takes rising context lengths, e.g. 64,160; got 12,4/);
  }, 60_000);

  it('refuses a precision it does not know in one line', async () => {
    const refused = await runCli(register, ['profile-hw', '--draft', draftDir, '--target', targetDir, '--target-precision', 'fp16']).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/--target-precision takes float32, int8, int4, got "fp16"/);
    expect((refused as Error).message).not.toContain('\n');
  });
});
