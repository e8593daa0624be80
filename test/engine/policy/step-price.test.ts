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
    const price = curvePrice({ target, draft });
    expect(price.verify(1, 1)).toBe(1);
    expect(price.verify(16, 16)).toBeCloseTo(2);
    expect(price.verify(64, 64)).toBeCloseTo(5);
    expect(price.draft(1, 1)).toBeCloseTo(0.05);
    // Spread over up to 16 requests: 16 tokens of one request cost one token plus 15 rows at the
    // slope past 16 ((40 − 16) / 48 ms), less than 16 requests' tokens.
    const spread = curvePrice({ target, draft, spread: 16 });
    expect(spread.verify(16, 1) * 8).toBeCloseTo(8 + 15 * 0.5);
    expect(spread.verify(16, 1)).toBeLessThan(spread.verify(16, 16));
    expect(spread.row).toBeGreaterThan(0);
  });

  it('the curves win over the fit when a cost carries both', () => {
    const both = stepPrice({ knee: 16, gamma: 0.5, curves: { target, draft } }, 0.05);
    expect(both.verify(16, 16)).toBeCloseTo(2);
    expect(stepPrice({ knee: 16, gamma: 0.5 }, 0.05).verify(16, 16)).toBe(1);
  });
});
