import { describe, expect, it } from 'vitest';
import { formatPairedRatio, medianRound, pairedRatio, roundOrder, stepMedianMs, turnOrder } from '../../../src/engine/metrics/paired-rounds.js';

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

describe('turnOrder', () => {
  it('rotates every other round and reverses odd rounds, so each entry follows each neighbour', () => {
    const orders = [0, 1, 2, 3, 4, 5].map((r) => turnOrder(['a', 'b', 'c'], r).join(''));
    expect(orders).toEqual(['abc', 'cba', 'bca', 'acb', 'cab', 'bac']);
    // Turns cycle within a round: who steps right after whom, over the six rounds.
    const follows = new Map<string, number>();
    for (const order of orders) for (let i = 0; i < 3; i++) follows.set(`${order[i]}>${order[(i + 1) % 3]}`, (follows.get(`${order[i]}>${order[(i + 1) % 3]}`) ?? 0) + 1);
    expect([...follows.values()]).toEqual([3, 3, 3, 3, 3, 3]);
    expect(turnOrder([], 3)).toEqual([]);
  });
});

describe('stepMedianMs', () => {
  it('sums each step\'s median time across rounds, so one round\'s burst does not count', () => {
    // Round 3's first step and round 1's second were slowed; the medians keep 2, 3 and 3.
    expect(stepMedianMs([[1, 10, 3], [2, 2, 3], [100, 3, 3]])).toBe(8);
    expect(stepMedianMs([[4, 6]])).toBe(10);
    // Rounds that took different steps cannot be matched step by step.
    expect(stepMedianMs([[1, 2], [1, 2, 3]])).toBeNull();
    expect(stepMedianMs([])).toBeNull();
  });
});

describe('medianRound', () => {
  it('picks the round whose measure is the median, the upper one of an even count', () => {
    const rounds = [{ tps: 3 }, { tps: 1 }, { tps: 2 }];
    expect(medianRound(rounds, (r) => r.tps)).toBe(rounds[2]);
    expect(medianRound([...rounds, { tps: 4 }], (r) => r.tps).tps).toBe(3);
    expect(() => medianRound([], () => 0)).toThrow(/no rounds/);
  });
});
