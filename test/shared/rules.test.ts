// K_max's and τ's rules, each declared once (src/shared/config.ts) and read by the config schema,
// the knob parsers, the runner, the policies, sweep and the studio's form: one answer everywhere.
import { expect, test } from 'vitest';
import { KnobsSchema, kmaxProblem, RunConfigSchema, tauProblem } from '../../src/shared/config.js';
import { KNOBS } from '../../src/shared/knobs.js';
import { fairShares } from '../../src/engine/policy/budget.js';
import { tauMap } from '../../src/engine/policy/echo.js';
import { formToKnobs, DEFAULT_FORM } from '../../src/renderer/views/RunPanel.js';

test('K_max holds when it covers one root a request, and otherwise says so naming both values', () => {
  expect(kmaxProblem(4, 4)).toBeNull();
  expect(kmaxProblem(5, 4)).toBeNull();
  expect(kmaxProblem(3, 4)).toBe('K_max (3) is below the batch size (4): every request needs at least its root token verified');
  expect(kmaxProblem(2, 3, 'the requests in flight')).toBe('K_max (2) is below the requests in flight (3): every request needs at least its root token verified');
});

test('the run config, the budget split and the studio form all give the one K_max answer', () => {
  const config = RunConfigSchema.safeParse({ policy: 'echo', batch: 8, kmax: 4, requests: 8, maxNewTokens: 8, temperature: 0, seed: 0 });
  expect(config.success).toBe(false);
  expect(config.error?.issues.map((i) => i.message)).toEqual([kmaxProblem(4, 8)]);
  expect(() => fairShares(2, 3)).toThrow(kmaxProblem(2, 3, 'the requests in flight')!);
  expect(formToKnobs({ ...DEFAULT_FORM, batch: '32', kmax: '16' })).toEqual({ errors: { kmax: kmaxProblem(16, 32) } });
});

test('τ is a probability: the one range rule in its own words, and each reader of a τ keeps to it', () => {
  expect(tauProblem(0)).toBeNull();
  expect(tauProblem(1)).toBeNull();
  expect(tauProblem(1.5, 'fixed τ')).toBe('fixed τ is 1.5; thresholds are probabilities in [0, 1]');
  expect(tauProblem(Number.NaN)).not.toBeNull();
  expect(KnobsSchema.safeParse({ tau: 1.01 }).success).toBe(false);
  expect(KnobsSchema.safeParse({ taus: { '0': -0.1 } }).success).toBe(false);
  expect(KNOBS.tau.parse('0.4')).toBe(0.4);
  expect(() => KNOBS.tau.parse('1.5')).toThrow('--tau is 1.5; thresholds are probabilities in [0, 1], got "1.5"');
  expect(() => tauMap({ '2': 2 })).toThrow('τ at depth 2 is 2; thresholds are probabilities in [0, 1]');
});
