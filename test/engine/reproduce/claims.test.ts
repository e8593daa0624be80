// The arithmetic behind a reproduction's verdicts and its hand-off to serving engines: the A/A
// band, ratio verdicts, the AUC's standard error, and the one τ SGLang takes from the τ_d.
import { describe, expect, it } from 'vitest';
import { aaHalfWidth, aucStandardError, ratioVerdict } from '../../../src/engine/reproduce/claims';
import { formatServingHandOff, servingHandOff, singleThreshold } from '../../../src/engine/serving-flags';
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

describe('hand-off to serving engines', () => {
  const profile = { taus: { '0': 0.3, '7': 0.12, '3': 0.12 }, denseTaus: { '0': 0.3, '1': 0.2, '3': 0.12, '7': 0.12 }, confidence: 'path-prob' };

  it('takes the smallest sweet-spot τ_d as the one threshold (the shallowest on a tie)', () => {
    expect(singleThreshold(profile.taus)).toEqual({ tau: 0.12, depth: 3 });
    expect(() => singleThreshold({})).toThrow(/no sweet spot/);
  });

  it("writes SGLang's flags and vLLM's config for each load, and says what neither can express", () => {
    const low = servingHandOff(profile, { load: 'low', draftModel: 'draft-dir' });
    expect(low.sglang).toEqual([
      '--speculative-algorithm EAGLE3',
      '--speculative-draft-model-path draft-dir',
      '--speculative-eagle-topk 10',
      '--speculative-num-steps 8',
      '--speculative-num-draft-tokens 61',
      '--speculative-echo-threshold 0.12',
    ]);
    expect(low.vllm).toEqual({ method: 'eagle3', model: 'draft-dir', num_speculative_tokens: 8 });
    const high = servingHandOff(profile, { load: 'high', draftModel: 'draft-dir' });
    expect(high.sglang).toContain('--speculative-num-draft-tokens 6');
    const text = formatServingHandOff(high);
    expect(text).toMatch(/cannot express: one threshold for every gate: the per-depth τ_d \(d0:0.3 d3:0.12 d7:0.12\)/);
    expect(text).toMatch(/vLLM: --speculative-config '\{"method":"eagle3","model":"draft-dir","num_speculative_tokens":3\}'/);
    expect(text).toMatch(/cannot express: no confidence gate at all/);
  });
});
