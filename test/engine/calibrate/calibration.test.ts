import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alternativeRates, binomialAtMost, breakEvenThreshold, calibrateDepths, tausOf, youdenThreshold } from '../../../src/engine/calibrate/calibration';
import { loadProfile, parseProfile, profileGates, saveProfile } from '../../../src/engine/calibrate/profile';
import { profileOf } from './profile-fixture';

describe('per-depth AUC', () => {
  it('matches the textbook tortoise-and-hare race (U = 11 of 36 pairs)', () => {
    // Finishing order T H H H H H T T T T T H; a score is 13 − place, so earlier is higher.
    const order = 'THHHHHTTTTTH';
    const tortoises: number[] = [];
    const hares: number[] = [];
    [...order].forEach((who, place) => (who === 'T' ? tortoises : hares).push((12 - place) / 13));
    const [depth] = calibrateDepths([{ depth: 0, accepted: tortoises, rejected: hares }], { delta: 0.75, targetDepth: 3, minSamples: 6 });
    expect(depth.auc).toBeCloseTo(11 / 36, 12);
  });
});

describe('youdenThreshold', () => {
  it('puts τ between the groups when they separate', () => {
    const t = youdenThreshold([0.9, 0.8, 0.7], [0.1, 0.2, 0.5])!;
    expect(t.j).toBe(1);
    expect(t.tau).toBeGreaterThan(0.5);
    expect(t.tau).toBeLessThan(0.7);
    expect(t.tau).toBeCloseTo(0.6, 12);
  });

  it('maximises TPR − FPR on overlapping groups, lowest τ on ties', () => {
    // Cut at 0.35: TPR 1, FPR 1/4; cut at 0.55: TPR 3/4, FPR 0. Both J = 0.75; the lower wins.
    const t = youdenThreshold([0.4, 0.6, 0.7, 0.9], [0.1, 0.2, 0.3, 0.5])!;
    expect(t.j).toBeCloseTo(0.75, 12);
    expect(t.tau).toBeCloseTo(0.35, 12);
    expect(t.truePositiveRate).toBe(1);
    expect(t.falsePositiveRate).toBe(0.25);
  });

  it('returns null with an empty group and rejects NaN', () => {
    expect(youdenThreshold([], [0.2])).toBeNull();
    expect(() => youdenThreshold([Number.NaN], [0.2])).toThrow(/NaN/);
  });
});

describe('breakEvenThreshold', () => {
  // Sorted: 0.1 R, 0.2 A, 0.3 R, 0.4 A, 0.5 A, 0.6 R, 0.7 A, 0.8 A (5 accepted, 3 rejected).
  const accepted = [0.2, 0.4, 0.5, 0.7, 0.8];
  const rejected = [0.1, 0.3, 0.6];

  it('truncates the samples that lose to the alternative: Σ_{c ≤ τ} (a − accepted) is largest', () => {
    // a = 0.6: cut at 0.15 gains 0.6; at 0.35 gains 1.8 − 1 = 0.8; at 0.65 gains 3.6 − 3 = 0.6.
    const t = breakEvenThreshold(accepted, rejected, 0.6)!;
    expect(t.tau).toBeCloseTo(0.35, 12);
    expect(t.alternative).toBe(0.6);
    expect(t.truePositiveRate).toBe(4 / 5);
    expect(t.falsePositiveRate).toBe(1 / 3);
    // a = 0.4: the best cut gains only 0.4 − 0 at 0.15 (0.8 − 1 < 0 at 0.35).
    expect(breakEvenThreshold(accepted, rejected, 0.4)!.tau).toBeCloseTo(0.15, 12);
    // a = 0: truncating the rejected 0.1 gains 0, a tie with truncating nothing, which wins.
    const none = breakEvenThreshold(accepted, rejected, 0)!;
    expect(none.tau).toBeLessThan(0.1);
    expect(none.truePositiveRate).toBe(1);
    expect(none.falsePositiveRate).toBe(1);
  });

  it('is Youden\'s J when the alternative is the depth\'s own acceptance rate', () => {
    for (const [acc, rej] of [
      [accepted, rejected],
      [[0.4, 0.6, 0.7, 0.9], [0.1, 0.2, 0.3, 0.5]],
      [[0.9, 0.8, 0.7], [0.1, 0.2, 0.5]],
    ]) {
      const byJ = youdenThreshold(acc, rej)!;
      const byGain = breakEvenThreshold(acc, rej, acc.length / (acc.length + rej.length))!;
      expect(byGain.tau).toBe(byJ.tau);
    }
    // Youden here: J(0.35) = 4/5 − 1/3 = 0.467 beats J(0.65) = 2/5 − 0 and J(0.15) = 1 − 2/3.
    expect(youdenThreshold(accepted, rejected)!.tau).toBeCloseTo(0.35, 12);
  });

  it('refuses an alternative that is not a probability', () => {
    expect(() => breakEvenThreshold(accepted, rejected, 1.5)).toThrow(/alternative/);
  });
});

describe('alternativeRates', () => {
  const samples = [
    { depth: 0, accepted: new Array(8).fill(0.5), rejected: new Array(2).fill(0.1) }, // π 0.8
    { depth: 1, accepted: new Array(6).fill(0.5), rejected: new Array(4).fill(0.1) }, // π 0.6
    { depth: 2, accepted: new Array(3).fill(0.5), rejected: new Array(7).fill(0.1) }, // π 0.3
  ];

  it('weighs each depth against its own rate (separation) or the next layer\'s (budget)', () => {
    expect(alternativeRates(samples, 'separation')).toEqual([0.8, 0.6, 0.3]);
    // Past the deepest layer: its rate times the last continuation rate, 0.3 · (0.3 / 0.6).
    const budget = alternativeRates(samples, 'budget');
    expect(budget.slice(0, 2)).toEqual([0.6, 0.3]);
    expect(budget[2]).toBeCloseTo(0.15, 12);
  });

  it('lets the budget rule truncate less than Youden where the next layer is accepted less often', () => {
    // Depth 0 mixes: accepted 0.3 … 0.9, rejected 0.1 … 0.4; depth 1 is accepted half the time.
    const depth0 = { depth: 0, accepted: [0.3, 0.35, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9], rejected: [0.1, 0.2, 0.32, 0.4] };
    const depth1 = { depth: 1, accepted: [0.5, 0.6, 0.7, 0.8], rejected: [0.1, 0.2, 0.3, 0.4] };
    // Twelve samples cannot make any cut significant: this test is about where the cut falls.
    const options = { delta: 0.75, targetDepth: 1, minSamples: 4, significance: 1 };
    const [youden] = calibrateDepths([depth0, depth1], { ...options, tauRule: 'separation' });
    const [budget] = calibrateDepths([depth0, depth1], { ...options, tauRule: 'budget' });
    expect(youden.threshold!.tau).toBeCloseTo(0.45, 12);
    expect(budget.threshold!.tau).toBeCloseTo(0.25, 12);
    expect(budget.threshold!.alternative).toBe(0.5);
  });
});

describe('significant cuts only', () => {
  it('binomialAtMost is the binomial distribution function', () => {
    expect(binomialAtMost(0, 4, 0.5)).toBeCloseTo(1 / 16, 12);
    expect(binomialAtMost(2, 4, 0.5)).toBeCloseTo(11 / 16, 12);
    expect(binomialAtMost(4, 4, 0.5)).toBe(1);
    expect(binomialAtMost(5, 8, 0.732)).toBeCloseTo(0.3668, 3);
    // A large warm-up: (1 − p)^n alone underflows, the sum must not.
    expect(binomialAtMost(890, 1000, 0.9)).toBeCloseTo(0.1583, 3);
    expect(binomialAtMost(0, 3, 0)).toBe(1);
    expect(binomialAtMost(2, 3, 1)).toBe(0);
  });

  it('drops a cut that chance explains, keeps one that it does not', () => {
    // Prose's root on the demo pair, in small: the next layer is accepted 73 % of the time, the
    // near-ties at the bottom about half as often. The best cut takes the 6 lowest (3 accepted,
    // gain 1.4 on these samples), but 3 of 6 at 73 % is what chance gives (P ≈ 0.20): with the
    // test, τ truncates nothing.
    const ties = { accepted: [0.5, 0.501, 0.502, 0.503, 0.504], rejected: [0.5005, 0.5015, 0.5025] };
    const above = { accepted: Array.from({ length: 30 }, (_, i) => 0.6 + i * 0.01), rejected: Array.from({ length: 8 }, (_, i) => 0.605 + i * 0.03) };
    const accepted = [...ties.accepted, ...above.accepted];
    const rejected = [...ties.rejected, ...above.rejected];
    expect(breakEvenThreshold(accepted, rejected, 0.732)!.tau).toBeCloseTo((0.5025 + 0.503) / 2, 12);
    expect(binomialAtMost(3, 6, 0.732)).toBeGreaterThan(0.05);
    const sure = breakEvenThreshold(accepted, rejected, 0.732, 0.05)!;
    expect(sure.tau).toBeLessThan(0.5);
    expect(sure).toMatchObject({ truePositiveRate: 1, falsePositiveRate: 1 });
    // Twelve low confidences accepted once: 1 of 12 at 73 % is not chance (P < 1e-5), so it stays.
    const low = { accepted: [0.05], rejected: Array.from({ length: 11 }, (_, i) => 0.01 + i * 0.01) };
    const both = [[...low.accepted, ...above.accepted], [...low.rejected, ...above.rejected]] as const;
    const kept = breakEvenThreshold(both[0], both[1], 0.732, 0.05)!;
    expect(kept.tau).toBeGreaterThan(0.11);
    expect(kept).toEqual(breakEvenThreshold(both[0], both[1], 0.732)!);
  });
});

describe('sweet spots', () => {
  const separated = { accepted: [0.9, 0.85, 0.8, 0.75, 0.7, 0.95, 0.88, 0.92], rejected: [0.1, 0.2, 0.3, 0.15, 0.25, 0.35, 0.05, 0.4] };
  const blurred = { accepted: [0.3, 0.5, 0.2, 0.6, 0.4, 0.35, 0.45, 0.55], rejected: [0.25, 0.5, 0.3, 0.6, 0.38, 0.33, 0.48, 0.52] };
  const weakButAboveChance = { accepted: [0.3, 0.5, 0.2, 0.6, 0.4, 0.35, 0.45, 0.7], rejected: [0.25, 0.45, 0.3, 0.55, 0.38, 0.33, 0.42, 0.5] };

  it('keeps depths with AUC_d > δ, and the root and target depth whenever they beat chance', () => {
    const depths = calibrateDepths(
      [
        { depth: 0, ...separated },
        { depth: 1, ...blurred },
        { depth: 2, ...weakButAboveChance },
        { depth: 3, ...weakButAboveChance },
        { depth: 4, ...separated },
      ],
      { delta: 0.8, targetDepth: 3, minSamples: 8 },
    );
    expect(depths.map((d) => d.sweetSpot)).toEqual([true, false, false, true, true]);
    expect(depths[0].auc).toBe(1);
    expect(depths[2].auc!).toBeGreaterThan(0.5);
    expect(depths[2].auc!).toBeLessThan(0.8);
    expect(Object.keys(tausOf(depths, 'sweet-spots'))).toEqual(['0', '3', '4']);
    expect(Object.keys(tausOf(depths, 'all'))).toEqual(['0', '1', '2', '3', '4']);
  });

  it('gives no AUC and no τ with too few samples', () => {
    const [d] = calibrateDepths([{ depth: 0, accepted: [0.9, 0.8], rejected: [0.1] }], { delta: 0.7, targetDepth: 2 });
    expect(d).toMatchObject({ auc: null, threshold: null, sweetSpot: false, accepted: 2, rejected: 1 });
  });

  it('rejects a δ that is not an AUC bar above chance', () => {
    expect(() => calibrateDepths([], { delta: 0.3, targetDepth: 2 })).toThrow(/δ must be/);
  });
});

describe('profile JSON', () => {
  const depths = calibrateDepths(
    [
      { depth: 0, accepted: [0.9, 0.8, 0.7], rejected: [0.1, 0.2, 0.3] },
      { depth: 1, accepted: [0.4, 0.3, 0.6], rejected: [0.5, 0.2, 0.35] },
    ],
    { delta: 0.75, targetDepth: 2, minSamples: 3, significance: 1 },
  );
  const profile = profileOf(depths, {
    confidence: 'path-margin',
    signals: [
      { confidence: 'path-prob', meanAuc: 0.61 },
      { confidence: 'path-margin', meanAuc: 0.7 },
    ],
    targetDepth: 2,
    samples: { prompts: 4, steps: 10, requestSteps: 40 },
    histograms: depths.map(() => ({ edges: [0, 0.5, 1], accepted: [0, 3], rejected: [3, 0] })),
    createdAt: new Date('2026-01-01T00:00:00Z'),
  });

  it('carries τ_d at the sweet spots, τ for dense at every depth, and the sample counts', () => {
    expect(profile.taus).toEqual({ '0': 0.5 });
    expect(Object.keys(profile.denseTaus)).toEqual(['0', '1']);
    expect(profile.depths[0]).toMatchObject({ depth: 0, accepted: 3, rejected: 3, auc: 1, sweetSpot: true });
  });

  it('round-trips through a file and names the bad field of a broken one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'echo-profile-'));
    const path = join(dir, 'profile.json');
    await saveProfile(path, profile);
    expect(await loadProfile(path)).toEqual(profile);

    const broken = { ...profile, taus: { '0': 1.5 } };
    expect(() => parseProfile(broken, 'p.json')).toThrow(/^p\.json: not a valid ECHO profile: taus\.0: /);
    expect(() => parseProfile({ ...profile, taus: {} }, 'p.json')).toThrow(/no sweet spot/);
    // A profile written before confidence signals existed was calibrated on path-prob.
    expect(profile.version).toBe(2);
    const { confidence: _, signals: __, ...older } = profile;
    expect(parseProfile({ ...older, version: 1 }, 'old.json').confidence).toBe('path-prob');
    // Before the τ rule was a choice, τ_d were Youden's.
    expect(profile.tauRule).toBe('budget');
    const { tauRule: ___, ...beforeRules } = profile;
    expect(parseProfile(beforeRules, 'old.json').tauRule).toBe('separation');
    // Before cuts had to be significant, none was tested.
    const { significance: ____, ...beforeTest } = profile;
    expect(parseProfile(beforeTest, 'old.json').significance).toBe(1);
    expect(() => parseProfile({ ...profile, version: 3 }, 'new.json')).toThrow(/^new\.json: not a valid ECHO profile: version/);
    expect(profileGates(profile).confidence).toBe('path-margin');
    // An acceptance curve must have one rate per bin between ascending edges.
    const curve = (acceptance: unknown) => ({ ...profile, depths: [{ ...profile.depths[0], acceptance }, ...profile.depths.slice(1)] });
    expect(parseProfile(curve({ edges: [0, 0.5, 1], rates: [0.1, 0.6] }), 'p.json').depths[0].acceptance).toEqual({ edges: [0, 0.5, 1], rates: [0.1, 0.6] });
    expect(() => parseProfile(curve({ edges: [0, 1], rates: [0.1, 0.6] }), 'p.json')).toThrow(/^p\.json: not a valid ECHO profile: depths\.0\.acceptance: needs one rate per bin/);
    expect(() => parseProfile(curve({ edges: [0, 0.5, 0.5], rates: [0.1, 0.6] }), 'p.json')).toThrow(/needs one rate per bin between ascending edges/);
    writeFileSync(join(dir, 'bad.json'), '{ nope');
    await expect(loadProfile(join(dir, 'bad.json'))).rejects.toThrow(/bad\.json: not JSON/);
  });
});

describe('τ precision', () => {
  it('keeps four significant digits, so the tiny τ of deep layers survive', () => {
    const depths = calibrateDepths([{ depth: 5, accepted: [3e-5, 4e-5, 5e-5], rejected: [1e-6, 2e-6, 1.2e-5] }], { delta: 0.75, targetDepth: 5, minSamples: 3, significance: 1 });
    expect(tausOf(depths, 'all')['5']).toBeCloseTo(2.1e-5, 10);
  });
});
