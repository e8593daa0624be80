// The arithmetic behind a reproduction's verdicts: the A/A
// band, ratio verdicts, the AUC's standard error, the paper's own ratios.
import { describe, expect, it } from 'vitest';
import { aaHalfWidth, aucStandardError, ratioVerdict } from '../../../src/engine/reproduce/claims';
import { paperHighLoadRatio, paperTable1Ratio } from '../../../src/engine/reproduce/paper';

describe('verdicts', () => {
  it('reads a ratio against the A/A band: above it holds, inside it or below it does not', () => {
    expect(aaHalfWidth([0.98, 1.01, 1.03])).toBeCloseTo(0.03, 12);
    expect(ratioVerdict(1.05, 0.03).verdict).toBe('holds');
    expect(ratioVerdict(1.02, 0.03)).toMatchObject({ verdict: 'does not hold', because: expect.stringMatching(/within the A\/A band/) });
    // A band wider than the paper's effect could not have shown it.
    expect(ratioVerdict(1.02, 0.03, 0.02)).toMatchObject({ verdict: 'not measurable here', because: expect.stringMatching(/wider than the paper's effect \(2.0 %\)/) });
    expect(ratioVerdict(1.02, 0.03, 0.05).verdict).toBe('does not hold');
    expect(ratioVerdict(0.9, 0.03)).toMatchObject({ verdict: 'does not hold', because: expect.stringMatching(/reversed/) });
    expect(ratioVerdict(1.2, NaN).verdict).toBe('not measurable here');
  });

  it("gives an AUC's standard error that shrinks with the samples", () => {
    expect(aucStandardError(0.8, 400, 400)).toBeLessThan(aucStandardError(0.8, 40, 40));
    // By hand: Q1 = 0.8/1.2, Q2 = 1.28/1.8, SE² = (0.16 + 49(Q1 − 0.64) + 49(Q2 − 0.64)) / 2500.
    expect(aucStandardError(0.8, 50, 50)).toBeCloseTo(0.0445, 4);
  });

  it("reads the paper's own ratios off its printed numbers", () => {
    expect(paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'static')).toBeCloseTo(11551 / 10703, 9);
    expect(paperTable1Ratio('Qwen3-235B', 'ECHO', 'EAGLE3')).toBeCloseTo(2.02 / 1.69, 9);
    expect(paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'fixed')).toBeNull();
  });
});
