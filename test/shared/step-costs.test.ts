import { describe, expect, it } from 'vitest';
import { atBaselineStepCost } from '../../src/shared/step-costs.js';

describe('atBaselineStepCost', () => {
  const base = { steps: 100, stepTime: { draftMs: 3, verifyMs: 15, prefillMs: 9, otherMs: 1 } };

  it("prices the run's steps at the baseline's decode cost and keeps the run's own prefill", () => {
    // 2800 ms for the baseline; 90 steps at its 19 ms of decoding plus 90 × 9.5 ms of prefill = 2565 ms.
    const run = { steps: 90, stepTime: { draftMs: 4, verifyMs: 16, prefillMs: 9.5, otherMs: 1.2 } };
    expect(atBaselineStepCost(run, base)).toBeCloseTo(2800 / 2565, 10);
  });

  it("ignores what the run's own steps cost: that is the gap to its wall ratio", () => {
    const cheap = { steps: 90, stepTime: { draftMs: 1, verifyMs: 1, prefillMs: 10, otherMs: 0 } };
    const dear = { steps: 90, stepTime: { draftMs: 9, verifyMs: 30, prefillMs: 10, otherMs: 5 } };
    expect(atBaselineStepCost(cheap, base)).toBe(atBaselineStepCost(dear, base));
    expect(atBaselineStepCost(dear, base)).toBeGreaterThan(1);
  });

  it('is 1 for the baseline itself and below 1 for a run of more steps', () => {
    expect(atBaselineStepCost(base, base)).toBeCloseTo(1, 12);
    expect(atBaselineStepCost({ ...base, steps: 110 }, base)).toBeLessThan(1);
  });
});
