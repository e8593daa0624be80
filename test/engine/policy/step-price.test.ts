import { describe, expect, it } from 'vitest';
import { curvePrice, fitPrice, stepPrice } from '../../../src/engine/policy/step-price';

const target = [
  { tokens: 1, ms: 8 },
  { tokens: 16, ms: 16 },
  { tokens: 64, ms: 40 },
];
const draft = [
  { tokens: 1, ms: 0.4 },
  { tokens: 16, ms: 0.8 },
  { tokens: 64, ms: 2 },
];

describe('step price', () => {
  it('a fit: flat to the knee, γ per token past it; a draft forward its one-row price or its rows', () => {
    const price = fitPrice({ knee: 4, gamma: 0.1, draftRow: 0.01 }, 0.05);
    expect(price.verify(4, 1)).toBe(1);
    expect(price.verify(6, 1)).toBeCloseTo(1.2);
    expect(price.draft(2, 1)).toBe(0.05);
    expect(price.draft(10, 1)).toBeCloseTo(0.1);
    expect(fitPrice(undefined, 0).verify(100, 8)).toBe(1);
  });

  it('curves: read as measured, in one-token target forwards, by rows and by requests', () => {
    const price = curvePrice({ target, draft })(undefined);
    expect(price.verify(1, 1)).toBe(1);
    expect(price.verify(16, 16)).toBeCloseTo(2);
    expect(price.verify(64, 64)).toBeCloseTo(5);
    expect(price.draft(1, 1)).toBeCloseTo(0.05);
    // Spread over up to 16 requests: 16 tokens of one request cost one token plus 15 rows at the
    // slope past 16 ((40 − 16) / 48 ms), less than 16 requests' tokens.
    const spread = curvePrice({ target, draft, spread: 16 })(undefined);
    expect(spread.verify(16, 1) * 8).toBeCloseTo(8 + 15 * 0.5);
    expect(spread.verify(16, 1)).toBeLessThan(spread.verify(16, 16));
    expect(spread.row).toBeGreaterThan(0);
  });

  it("curves: one request's forwards off its own curves where the profile timed them, in the one-request one-token forward", () => {
    const single = [
      { tokens: 1, ms: 10 },
      { tokens: 8, ms: 15 },
      { tokens: 12, ms: 15 },
    ];
    const price = curvePrice({ target, draft, spread: 16, oneRequest: { target: single, draft } })(undefined);
    expect(price.verify(1, 1)).toBe(1);
    expect(price.verify(8, 1)).toBeCloseTo(1.5);
    expect(price.verify(12, 1)).toBeCloseTo(1.5);
    // Two requests: the spread curve, in the same unit.
    expect(price.verify(16, 16)).toBeCloseTo(16 / 10);
  });

  it("curves: the step's first draft forwards pay what the draft's cold weights add, in one-token target forwards", () => {
    const prices = curvePrice({ target, draft, draftAfterTargetMs: [0.8, 0.4] })(undefined);
    expect(prices.afterTarget(0)).toBeCloseTo(0.1);
    expect(prices.afterTarget(1)).toBeCloseTo(0.05);
    expect(prices.afterTarget(2)).toBe(0);
    expect(curvePrice({ target, draft })(undefined).afterTarget(0)).toBe(0);
    expect(fitPrice({ knee: 4, gamma: 0.1 }, 0.05).afterTarget(0)).toBe(0);
  });

  it('the curves win over the fit when a cost carries both', () => {
    const both = stepPrice({ knee: 16, gamma: 0.5, curves: { target, draft } }, 0.05)(100);
    expect(both.verify(16, 16)).toBeCloseTo(2);
    expect(stepPrice({ knee: 16, gamma: 0.5 }, 0.05)(100).verify(16, 16)).toBe(1);
  });

  it('curves timed at two contexts: a step is priced at its past, in the base context one-token forward', () => {
    // At 160 rows of past every forward takes half as long again as at 64.
    const slower = (points: typeof target) => points.map((p) => ({ tokens: p.tokens, ms: p.ms * 1.5 }));
    const prices = curvePrice({ target, draft, context: 64, longer: [{ context: 160, target: slower(target), draft: slower(draft) }] });
    // Without a past, or at or below the base context: the base curves.
    for (const past of [undefined, 0, 64]) expect(prices(past).verify(16, 16)).toBeCloseTo(2);
    expect(prices(160).verify(1, 1)).toBeCloseTo(1.5);
    expect(prices(160).verify(16, 16)).toBeCloseTo(3);
    // Halfway between the contexts, halfway between their times; past the longest, the same slope on.
    expect(prices(112).verify(16, 16)).toBeCloseTo(2.5);
    expect(prices(256).verify(16, 16)).toBeCloseTo(4);
    expect(prices(160).draft(16, 16)).toBeCloseTo(0.15);
    expect(prices(160).row).toBeGreaterThan(prices(64).row);
  });
});
