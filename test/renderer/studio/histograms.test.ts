import { describe, expect, it } from 'vitest';
import { calibrationReason, histogramBins, isSweetSpot, pointerFromTau, sampleCount, sweetSpot, tauFromPointer, tausInUse, unverifiedCount } from '../../../src/renderer/studio/histograms.js';
import { stepTau } from '../../../src/renderer/studio/histograms.js';
import { textSegment } from '../../../src/renderer/studio/requestText.js';
import { sampleRequest, sampleStep } from './fixtures.js';

describe('histogramBins', () => {
  it('normalises each class to shares so shapes compare across counts', () => {
    const bins = histogramBins({ depth: 0, edges: [0, 0.5, 1], accepted: [1, 3], rejected: [10, 0], auc: 0.9 });
    expect(bins.map((b) => b.label)).toEqual(['0.25', '0.75']);
    expect(bins.map((b) => b.accepted)).toEqual([0.25, 0.75]);
    expect(bins.map((b) => b.rejected)).toEqual([1, 0]);
    expect(bins[1].acceptedCount).toBe(3);
    // A histogram from before unverified layers were counted apart has none.
    expect(bins.map((b) => b.unverified)).toEqual([0, 0]);
  });

  it('shows layers never verified as their own class', () => {
    const h = { depth: 2, edges: [0, 0.5, 1], accepted: [0, 4], rejected: [2, 2], unverified: [6, 2], auc: 0.75 };
    const bins = histogramBins(h);
    expect(bins.map((b) => b.unverified)).toEqual([0.75, 0.25]);
    expect(bins.map((b) => b.unverifiedCount)).toEqual([6, 2]);
    expect(bins.map((b) => b.rejected)).toEqual([0.5, 0.5]);
    expect(sampleCount(h)).toBe(16);
    expect(unverifiedCount(h)).toBe(8);
  });

  it('marks sweet spots by AUC and never when AUC is unknown', () => {
    expect(isSweetSpot({ depth: 0, edges: [], accepted: [], rejected: [], auc: 0.8 })).toBe(true);
    expect(isSweetSpot({ depth: 0, edges: [], accepted: [], rejected: [], auc: 0.6 })).toBe(false);
    expect(isSweetSpot({ depth: 0, edges: [], accepted: [], rejected: [], auc: null })).toBe(false);
  });
});

describe('τ drag mapping', () => {
  it('maps pointer x over the plot to τ in [0, 1], clamped and rounded', () => {
    expect(tauFromPointer(150, 100, 200)).toBe(0.25);
    expect(tauFromPointer(10, 100, 200)).toBe(0);
    expect(tauFromPointer(999, 100, 200)).toBe(1);
    expect(tauFromPointer(100 + 200 / 3, 100, 200)).toBe(0.33);
    expect(pointerFromTau(0.25, 100, 200)).toBe(150);
  });

  it('reads the τ the engine used from the gate checks', () => {
    const step = sampleStep(0, [sampleRequest()]);
    expect(tausInUse(step)).toEqual({ '0': 0.3, '2': 0.35 });
    expect(tausInUse(null)).toEqual({});
  });
});

describe('textSegment', () => {
  it('splits emitted text into the accepted tokens and the bonus', () => {
    expect(textSegment(4, sampleRequest())).toEqual({ step: 4, accepted: ' t1 t3', bonus: ' bonus', acceptedCount: 2 });
  });

  it('keeps the engine text whole when it is not the concatenation of the pieces', () => {
    expect(textSegment(1, sampleRequest({ emittedText: 'merged text' }))).toEqual({ step: 1, accepted: 'merged text', bonus: '', acceptedCount: 2 });
  });
});

describe('sweetSpot', () => {
  const counts = (n: number) => [n];
  const live = (auc: number, n = 30) => ({ depth: 3, edges: [0, 1], accepted: counts(n), rejected: counts(n), auc });
  const calibration = {
    source: 'warm-up' as const,
    confidence: 'path-prob' as const,
    delta: 0.75,
    depths: [{ depth: 3, accepted: 90, rejected: 80, auc: 0.82, tau: 0.0004225, sweetSpot: true }],
  };

  it("takes the calibration's verdict for a depth it measured, whatever this run's AUC", () => {
    expect(sweetSpot(live(0.33), calibration, false)).toEqual({ on: true, source: 'calibration' });
    expect(sweetSpot({ ...live(0.9), depth: 4 }, calibration, false)).toEqual({ on: true, source: 'live' });
  });

  it('does not blink as a live AUC wobbles around the bar, and waits for samples of both classes', () => {
    const shown: boolean[] = [];
    let was = false;
    for (const auc of [0.76, 0.74, 0.77, 0.72, 0.76, 0.69, 0.74]) {
      was = sweetSpot(live(auc), undefined, was).on;
      shown.push(was);
    }
    expect(shown).toEqual([true, true, true, true, true, false, false]);
    expect(sweetSpot(live(0.95, 5), undefined, false).on).toBe(false);
  });

  it('names where a calibration reason comes from', () => {
    expect(calibrationReason(calibration, 3)).toBe('calibration (warm-up, before the run): AUC 0.82 > δ 0.75 and τ 4.23e-4 passed the test: gated');
  });
});

describe('stepTau (the τ line\'s arrow keys)', () => {
  it('steps 0.01 from 0.01 up, and by half again below it, so a calibrated τ of 4e-4 can be moved', () => {
    expect(stepTau(0.3, 1)).toBe(0.31);
    expect(stepTau(0.3, -1)).toBe(0.29);
    expect(stepTau(1, 1)).toBe(1);
    expect(stepTau(0.02, -1)).toBe(0.01);
    expect(stepTau(4.23e-4, 1)).toBe(6.34e-4); // 6.345e-4 in binary rounds down
    expect(stepTau(4.23e-4, -1)).toBe(2.82e-4);
    expect(stepTau(0.009, 1)).toBe(0.01);
    expect(stepTau(1e-4, -1)).toBe(0);
    expect(stepTau(0, 1)).toBe(1e-4);
    expect(stepTau(0, -1)).toBe(0);
  });
});
