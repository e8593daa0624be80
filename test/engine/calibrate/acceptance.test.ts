import { describe, expect, it } from 'vitest';
import { acceptanceAt, acceptanceCurve, acceptanceFromSamples, acceptanceTable, PRIOR_SAMPLES, SAMPLES_PER_BIN } from '../../../src/engine/calibrate/acceptance';
import { profileOf } from './profile-fixture';

describe('measured acceptance by depth and confidence', () => {
  const edges = [0, 0.25, 0.5, 0.75, 1];
  /** A profile depth entry with a sweet spot (a profile needs one); its histogram comes separately. */
  const depth = (d: number) => ({ depth: d, accepted: 8, rejected: 8, auc: 0.8, threshold: { tau: 0.3, alternative: 0.5, j: 0.5, truePositiveRate: 0.75, falsePositiveRate: 0.25 }, sweetSpot: true });

  it('shrinks each bin towards the depth rate by its sample count', () => {
    // 48 samples, 16 accepted: the depth's rate is 1/3. Each bin's share moves towards it by
    // PRIOR_SAMPLES pseudo-samples: little for the 26-sample bin, much for the 6-sample one.
    const curve = acceptanceCurve({ edges, accepted: [2, 4, 4, 6], rejected: [24, 4, 4, 0] })!;
    const shrunk = (a: number, n: number) => (a + PRIOR_SAMPLES / 3) / (n + PRIOR_SAMPLES);
    expect(curve.rates[0]).toBeCloseTo(shrunk(2, 26), 10);
    expect(curve.rates[1]).toBeCloseTo(shrunk(4, 8), 10);
    expect(curve.rates[3]).toBeCloseTo(shrunk(6, 6), 10);
    expect(curve.rates[3]).toBeLessThan(0.8);
  });

  it('never reads a higher confidence as a lower chance: a dip is pooled with its neighbour', () => {
    // Bins 1 and 2 (0.75 then 0.25 on their own) are out of order; pooled, each gets their
    // weighted mean.
    const curve = acceptanceCurve({ edges, accepted: [0, 12, 4, 16], rejected: [16, 4, 12, 0] })!;
    const own = (a: number, n: number) => (a + 0.5 * PRIOR_SAMPLES) / (n + PRIOR_SAMPLES);
    const pooled = (own(12, 16) + own(4, 16)) / 2;
    expect(curve.rates[1]).toBeCloseTo(pooled, 10);
    expect(curve.rates[2]).toBeCloseTo(pooled, 10);
    for (let b = 1; b < curve.rates.length; b++) expect(curve.rates[b]).toBeGreaterThanOrEqual(curve.rates[b - 1]);
  });

  it('looks a confidence up in its bin, the deepest measured depth past the table, 1 where nothing was measured', () => {
    const table = [null, { edges, rates: [0.1, 0.2, 0.3, 0.4] }];
    expect(acceptanceAt(table, 1, 0)).toBe(0.1);
    expect(acceptanceAt(table, 1, 0.25)).toBe(0.2);
    expect(acceptanceAt(table, 1, 0.74)).toBe(0.3);
    expect(acceptanceAt(table, 1, 1)).toBe(0.4);
    expect(acceptanceAt(table, 5, 0.9)).toBe(0.4);
    expect(acceptanceAt(table, 0, 0.9)).toBe(1);
    expect(acceptanceAt([], 3, 0.9)).toBe(1);
    expect(acceptanceCurve({ edges, accepted: [0, 0, 0, 0], rejected: [0, 0, 0, 0] })).toBeNull();
    expect(acceptanceCurve({ edges: [], accepted: [], rejected: [] })).toBeNull();
  });

  it('cuts raw samples into bins of equal counts, so confidences bunched near 0 still separate', () => {
    // 60 samples all below 0.06: even tenths of [0, 1] would hold them in one bin. The 20 lowest
    // are all rejected, the 20 highest all accepted.
    const low = Array.from({ length: 20 }, (_, i) => 0.001 + i * 0.0001);
    const mid = Array.from({ length: 20 }, (_, i) => 0.01 + i * 0.0001);
    const high = Array.from({ length: 20 }, (_, i) => 0.05 + i * 0.0001);
    const curve = acceptanceFromSamples([...high, ...mid.slice(0, 10)], [...low, ...mid.slice(10)])!;
    expect(curve.edges).toHaveLength(60 / SAMPLES_PER_BIN + 1);
    expect(curve.edges[0]).toBe(0);
    expect(curve.edges[3]).toBe(1);
    expect(curve.edges[1]).toBe(mid[0]);
    expect(curve.edges[2]).toBe(high[0]);
    const shrunk = (a: number) => (a + 0.5 * PRIOR_SAMPLES) / (20 + PRIOR_SAMPLES);
    expect(curve.rates).toEqual([shrunk(0), shrunk(10), shrunk(20)].map((r) => expect.closeTo(r, 10)));
    expect(acceptanceAt([curve], 0, 0.0015)).toBeCloseTo(shrunk(0), 10);
    expect(acceptanceAt([curve], 0, 0.06)).toBeCloseTo(shrunk(20), 10);
    // Ties never make an empty bin; too few samples make one bin; none make no curve.
    const tied = acceptanceFromSamples(new Array(30).fill(0.2), new Array(30).fill(0.2))!;
    expect(tied.edges).toEqual([0, 1]);
    // Certain confidences (1, a single candidate's margin) never make an edge at 1 twice.
    const certain = acceptanceFromSamples(new Array(40).fill(1), [...new Array(20).fill(0.3), ...new Array(20).fill(1)])!;
    expect(certain.edges).toEqual([0, 1]);
    for (let i = 1; i < curve.edges.length; i++) expect(curve.edges[i]).toBeGreaterThan(curve.edges[i - 1]);
    expect(acceptanceFromSamples([0.3], [0.1])!.rates).toHaveLength(1);
    expect(acceptanceFromSamples([], [])).toBeNull();
  });

  it('reads a profile depth by its sample-binned curve when it has one, else by its histogram', () => {
    const histogram = { edges, accepted: [0, 0, 4, 4], rejected: [4, 4, 0, 0] };
    const own = { edges: [0, 0.01, 1], rates: [0.1, 0.7] };
    const profile = profileOf([depth(0), depth(1)], { histograms: [histogram, histogram], acceptance: [own, null] });
    const table = acceptanceTable(profile.depths);
    expect(table[0]).toEqual(own);
    expect(table[1]).toEqual(acceptanceCurve(histogram));
  });

  it('builds a table from a profile, indexed by depth', () => {
    const profile = profileOf([depth(0), depth(2)], {
      histograms: [
        { edges, accepted: [0, 0, 0, 0], rejected: [0, 0, 0, 0] },
        { edges, accepted: [0, 0, 4, 4], rejected: [4, 4, 0, 0] },
      ],
    });
    const table = acceptanceTable(profile.depths);
    expect(table).toHaveLength(3);
    expect(table[0]).toBeNull();
    expect(table[1]).toBeNull();
    expect(table[2]!.rates[3]).toBeCloseTo((4 + 2) / 8, 10);
    expect(acceptanceAt(table, 2, 0.1)).toBeCloseTo(2 / 8, 10);
  });
});
