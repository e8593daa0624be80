import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mannWhitneyAuc, mannWhitneyU } from '../../../src/engine/metrics/auc.js';

/** Direct definition: count pairs, ties ½. O(n·m), only for checking. */
function pairCountU(pos: number[], neg: number[]): number {
  let u = 0;
  for (const a of pos) for (const b of neg) u += a > b ? 1 : a === b ? 0.5 : 0;
  return u;
}

describe('mannWhitneyU', () => {
  it('matches a hand-computed example with ties', () => {
    // Pooled ranks: 0.1→1, 0.2→2, 0.4,0.4→3.5, 0.5→5, 0.7×3→7, 0.9→9.
    // Positive rank sum = 9 + 7 + 7 + 3.5 = 26.5; U = 26.5 − 4·5/2 = 16.5; AUC = 16.5/20.
    const accepted = [0.9, 0.7, 0.7, 0.4];
    const rejected = [0.7, 0.5, 0.4, 0.2, 0.1];
    const r = mannWhitneyU(accepted, rejected);
    expect(r).toEqual({ u: 16.5, auc: 0.825, positives: 4, negatives: 5 });
  });

  it('gives 1 for perfect separation, 0 for reversed, 0.5 for all ties', () => {
    expect(mannWhitneyU([3, 4], [1, 2])?.auc).toBe(1);
    expect(mannWhitneyU([1, 2], [3, 4])?.auc).toBe(0);
    expect(mannWhitneyU([5, 5, 5], [5, 5])?.auc).toBe(0.5);
  });

  it('returns null when a group is empty, and rejects NaN', () => {
    expect(mannWhitneyU([], [1])).toBeNull();
    expect(mannWhitneyU([1], [])).toBeNull();
    expect(() => mannWhitneyU([Number.NaN], [1])).toThrow(/positive sample 0 is NaN/);
  });

  it('equals the pair-counting definition, and U_pos + U_neg = n·m', () => {
    // Few distinct values so ties are common.
    const sample = fc.array(fc.integer({ min: 0, max: 6 }).map((k) => k / 6), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(sample, sample, (pos, neg) => {
        const r = mannWhitneyU(pos, neg)!;
        expect(r.u).toBeCloseTo(pairCountU(pos, neg), 9);
        const reverse = mannWhitneyU(neg, pos)!;
        expect(r.u + reverse.u).toBeCloseTo(pos.length * neg.length, 9);
      }),
    );
  });
});

describe('mannWhitneyAuc', () => {
  it('is null below the minimum group size', () => {
    expect(mannWhitneyAuc([0.9, 0.8], [0.1], 2)).toBeNull();
    expect(mannWhitneyAuc([0.9, 0.8], [0.1, 0.2], 2)).toBe(1);
  });
});
