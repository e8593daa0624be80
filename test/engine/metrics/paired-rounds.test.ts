import { describe, expect, it } from 'vitest';
import { formatPairedRatio, pairedRatio, roundOrder } from '../../../src/engine/metrics/paired-rounds.js';

describe('roundOrder', () => {
  it('rotates the policies by one each round, so each runs first once every n rounds', () => {
    const policies = ['ar', 'static', 'echo'];
    expect([0, 1, 2, 3].map((r) => roundOrder(policies, r).join(','))).toEqual(['ar,static,echo', 'static,echo,ar', 'echo,ar,static', 'ar,static,echo']);
    expect(roundOrder([], 2)).toEqual([]);
  });
});

describe('pairedRatio', () => {
  it('takes the ratio within each round, not the ratio of the two medians', () => {
    // The machine slowed down in round 2 while y ran, and in round 1 while x ran: the medians
    // pair x's round 2 with y's round 1 (20 / 25 = 0.8), the rounds say x is ~7 % ahead.
    const x = [10, 20, 30];
    const y = [25, 9, 28];
    const r = pairedRatio(x, y);
    expect(r.median).toBeCloseTo(30 / 28, 12);
    expect(r.min).toBeCloseTo(10 / 25, 12);
    expect(r.max).toBeCloseTo(20 / 9, 12);
    expect(r.rounds).toBe(3);
  });

  it('takes the mean of the middle two of an even count, and one round as it is', () => {
    expect(pairedRatio([1, 2, 3, 4], [1, 1, 1, 1]).median).toBe(2.5);
    expect(pairedRatio([3], [2])).toEqual({ median: 1.5, min: 1.5, max: 1.5, rounds: 1 });
  });

  it('refuses rounds that do not pair', () => {
    expect(() => pairedRatio([1, 2], [1])).toThrow(/2 rounds against 1/);
    expect(() => pairedRatio([], [])).toThrow(/no rounds/);
  });

  it('prints the range only when there is one', () => {
    expect(formatPairedRatio(pairedRatio([3], [2]))).toBe('1.500');
    expect(formatPairedRatio(pairedRatio([1, 1.1, 1.2], [1, 1, 1]))).toBe('1.100 (1.000–1.200)');
    expect(formatPairedRatio({ median: NaN, min: NaN, max: NaN, rounds: 1 })).toBe('-');
  });
});
