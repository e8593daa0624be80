import { describe, expect, it } from 'vitest';
import { clockCosts, priceProfileFromFlags } from '../../src/cli/run-config.js';
import { clockFromSpec, type HardwareProfile } from '../../src/engine/index.js';

const curve = (scale: number) =>
  [1, 2, 4, 8, 16, 32, 64].map((tokens) => ({ tokens, ms: scale * (8 + 0.5 * (tokens - 1)) }));

const profile: HardwareProfile = {
  kind: 'echo-hw-profile',
  version: 1,
  createdAt: '2026-01-01T00:00:00Z',
  host: { cpu: 'test', threads: 1, provider: 'cpu' },
  models: { draft: 'd', target: 't' },
  draftPrecision: 'int8',
  targetPrecision: 'float32',
  slots: 16,
  context: 64,
  target: curve(1),
  draft: curve(0.05),
};

describe('which costs a run is priced by', () => {
  it('the wall clock without a profile prices nothing', () => {
    const costs = clockCosts({});
    expect(costs.verifyCost).toBeUndefined();
    expect(costs.knee).toBeUndefined();
  });

  it("the wall clock with this machine's profile prices by its measured curves, and says so", () => {
    const lines: string[] = [];
    const costs = clockCosts({}, { log: (line) => lines.push(line), profile });
    expect(costs.verifyCost?.curves?.target).toEqual(profile.target);
    expect(costs.verifyCost?.curves?.spread).toBe(16);
    expect(costs.knee).toBeGreaterThan(1);
    expect(costs.draftCost).toBeCloseTo(0.05, 3);
    expect(lines.join('\n')).toMatch(/hardware profile.*measured forward times/);
  });

  it('an explicit --verify-cost wins over the profile', () => {
    const costs = clockCosts({ verifyCost: { knee: 4, gamma: 0.1 } }, { profile });
    expect(costs.verifyCost).toEqual({ knee: 4, gamma: 0.1 });
  });

  it('the curves clock prices by its curves, the T_ver fit clock by its fit, a roofline by its ridge', () => {
    expect(clockCosts({}, { clock: clockFromSpec('curves', profile) }).verifyCost?.curves).toBeDefined();
    expect(clockCosts({}, { clock: clockFromSpec('measured', profile) }).verifyCost?.curves).toBeUndefined();
    expect(clockCosts({}, { clock: clockFromSpec('h100:70b') }).verifyCost?.curves).toBeUndefined();
  });

  it('a price profile prices a curves clock in place of the clock\'s own curves, and says so', () => {
    // Another measurement of the same machine: a target forward dearer past 8 tokens.
    const other: HardwareProfile = { ...profile, target: profile.target.map((p) => ({ ...p, ms: p.tokens > 8 ? 2 * p.ms : p.ms })) };
    const lines: string[] = [];
    const costs = clockCosts({}, { clock: clockFromSpec('curves', profile), log: (line) => lines.push(line), profile, priceProfile: other });
    expect(costs.verifyCost?.curves?.target).toEqual(other.target);
    expect(costs.knee).toBe(clockCosts({}, { clock: clockFromSpec('curves', other) }).knee);
    expect(lines.join('\n')).toMatch(/price profile, apart from the clock/);
    // Without one, the clock's own curves price it.
    expect(clockCosts({}, { clock: clockFromSpec('curves', profile) }).verifyCost?.curves?.target).toEqual(profile.target);
  });

  it('--price-profile needs a clock of this machine\'s curves', () => {
    expect(priceProfileFromFlags({})).toBeUndefined();
    expect(() => priceProfileFromFlags({ priceProfile: 'p.json', hw: 'h100:70b' })).toThrow(/needs --hw curves or measured, got --hw h100:70b/);
    expect(() => priceProfileFromFlags({ priceProfile: 'p.json' })).toThrow(/needs --hw curves or measured$/);
  });
});
