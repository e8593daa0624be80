import { describe, expect, it } from 'vitest';
import { mergeTransfers, metricSeries, overlaySeries, stepPoint, thinSeries } from '../../../src/renderer/studio/series.js';
import { sampleRequest, sampleStep } from './fixtures.js';

describe('stepPoint', () => {
  it('sums emitted, accepted and verified draft tokens and the transfers of a step', () => {
    const step = sampleStep(4, [sampleRequest(), sampleRequest({ requestId: '9', accepted: [], emitted: [5] })], {
      transfers: [
        { from: '9', to: '3', tokens: 2 },
        { from: '8', to: '3', tokens: 1 },
      ],
    });
    const p = stepPoint(step);
    expect(p).toMatchObject({ step: 4, roots: 2, base: 8, depth: 3, width: 1, unused: 2, kmax: 16 });
    expect(p.emitted).toBe(4);
    expect(p.accepted).toBe(2);
    expect(p.draftedVerified).toBe(12); // 6 verified non-root nodes per request
    expect(p.transferred).toBe(3);
  });
});

describe('metricSeries', () => {
  it('computes throughput, MAT and utilisation over a trailing window', () => {
    const base = stepPoint(sampleStep(0, [sampleRequest()]));
    const points = [0, 1, 2].map((i) => ({ ...base, step: i, emitted: 10 * (i + 1), accepted: i + 1, draftedVerified: 4, totalMs: 100 }));
    const series = metricSeries(points, 2);
    expect(series[0].throughput).toBeCloseTo(100);
    expect(series[2].throughput).toBeCloseTo(((20 + 30) * 1000) / 200);
    expect(series[2].mat).toBeCloseTo((2 + 3) / 2);
    expect(series[2].utilisation).toBeCloseTo(5 / 8);
  });
});

describe('overlaySeries', () => {
  it('joins two runs by step index, leaving gaps where one run is shorter', () => {
    const a = [{ step: 0, throughput: 10, mat: 1, utilisation: 0.5, verifiedTokens: 8 }, { step: 1, throughput: 12, mat: 1, utilisation: 0.5, verifiedTokens: 8 }];
    const b = [{ step: 0, throughput: 7, mat: 1, utilisation: 0.5, verifiedTokens: 8 }];
    expect(overlaySeries([{ prefix: 'run', points: a }, { prefix: 'compare', points: b }], 'throughput')).toEqual([
      { step: 0, run: 10, compare: 7 },
      { step: 1, run: 12 },
    ]);
  });
});

describe('mergeTransfers', () => {
  it('merges repeated pairs and orders by size', () => {
    expect(
      mergeTransfers([
        { from: '1', to: '2', tokens: 1 },
        { from: '3', to: '2', tokens: 3 },
        { from: '1', to: '2', tokens: 1 },
      ]),
    ).toEqual([
      { from: '3', to: '2', tokens: 3 },
      { from: '1', to: '2', tokens: 2 },
    ]);
  });
});

describe('thinSeries', () => {
  it('keeps recent points exact and thins older ones under the limit', () => {
    const points = Array.from({ length: 1000 }, (_, i) => i);
    const thinned = thinSeries(points, 100);
    expect(thinned.length).toBeLessThanOrEqual(100);
    expect(thinned.slice(-50)).toEqual(points.slice(-50));
    expect(thinned[0]).toBe(0);
  });
});
