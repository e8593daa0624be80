// The smaller input checks: --threads bounded, one --taus grammar for run and trace what-if,
// messages that name flags rather than config fields, profile-hw refusing a context past the
// model's positions and saying when it caps --max-tokens.
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { register as registerProfileHw } from '../../src/cli/commands/profile-hw.js';
import { parseTaus, threadsFlag } from '../../src/cli/flags.js';
import { ignoredFlagNotes, runConfigFromFlags, type RunFlags } from '../../src/cli/run-config.js';
import { KNOBS } from '../../src/shared/knobs.js';
import { parseTaus as whatIfTaus } from '../../src/cli/commands/trace.js';
import { tinyPairFolders } from '../engine/model/tiny-pair-folders.js';
import { runCli } from './helpers.js';

const tmp = tinyPairFolders('echo-flags-');
const { targetDir, draftDir } = tmp;

describe('flag checks', () => {
  it('--threads is bounded by twice the cores', () => {
    const most = 2 * availableParallelism();
    expect(threadsFlag(String(most))).toBe(most);
    expect(() => threadsFlag('1000')).toThrow(new RegExp(`--threads takes 1 to ${most} \\(twice this machine's \\d+ cores\\), got "1000"`));
    expect(() => threadsFlag('0')).toThrow(/--threads takes 1 to/);
  });

  it('run --taus and trace what-if --taus read one grammar', () => {
    expect(whatIfTaus).toBe(parseTaus);
    expect(parseTaus('0:0.3')).toEqual({ '0': 0.3 });
    expect(parseTaus('0=0.3,05:0.5')).toEqual({ '0': 0.3, '5': 0.5 });
    expect(() => parseTaus('0:1.5')).toThrow(/--taus takes DEPTH:TAU,… with each τ in \[0, 1\]/);
  });

  it('--cuts reaches the config as priced or bare, says when the policy ignores it, and refuses anything else', () => {
    const flags = { policy: 'echo', batch: 1, kmax: 8, requests: 1, maxNewTokens: 4, temperature: 0, seed: 0 } as RunFlags;
    expect(runConfigFromFlags({ ...flags, cuts: KNOBS.cuts.parse('bare') }).cuts).toBe('bare');
    expect(runConfigFromFlags(flags).cuts).toBeUndefined();
    expect(ignoredFlagNotes({ ...flags, policy: 'static', cuts: 'bare' })).toEqual(['note: --cuts has no effect on static (it applies to echo, dense, fixed)']);
    expect(() => KNOBS.cuts.parse('soft')).toThrow(/--cuts/);
  });

  it('a bad value names its flag, not the config field', () => {
    const flags = { policy: 'echo', batch: 1, kmax: 8, requests: 1, maxNewTokens: 0, temperature: 0, seed: 0 } as RunFlags;
    expect(() => runConfigFromFlags(flags)).toThrow(/^--max-new-tokens: /);
    expect(() => runConfigFromFlags({ ...flags, maxNewTokens: 4, temperature: -1 })).toThrow(/^--temperature: /);
  });

  it('profile-hw refuses a context past the model’s positions and says when it caps --max-tokens', async () => {
    const args = ['profile-hw', '--draft', draftDir, '--target', targetDir];
    await expect(runCli(registerProfileHw, [...args, '--context', '600'])).rejects.toThrow(/--context 600 and one request's forwards of up to 64 rows need 665 positions per request; the target holds 512 \(lower --context or --max-tokens\)/);
    // Over one slot the spread forwards need more: 512 rows for one request.
    await expect(runCli(registerProfileHw, [...args, '--context', '100', '--slots', '1'])).rejects.toThrow(/--context 100 and up to 512 tokens over --slots 1 need 613 positions per request; the target holds 512 \(lower --context or --max-tokens, or raise --slots\)/);
    const { stderr } = await runCli(registerProfileHw, [...args, '--max-tokens', '100000', '--context', '4', '--slots', '16', '--repeats', '1', '--threads', '1']);
    expect(stderr).toMatch(/note: --max-tokens 100000 is past the largest size timed: measuring up to 512 tokens/);
  }, 120_000);
});
