import { describe, expect, it } from 'vitest';
import type { RequestStep, StepEvent, TreeNode } from '../../../src/shared/events.js';
import {
  RunMetricsAccumulator,
  computeRunMetrics,
  metricsAsRecorded,
  speedupVsAr,
  traceMetrics,
  withSpeedupVsAr,
} from '../../../src/engine/metrics/run-metrics.js';
import { syntheticRun } from './synthetic-run.js';

const root: TreeNode = { id: 0, parent: -1, depth: -1, token: 7, logq: 0, pathScore: 0, grant: 'root', verified: true };
function node(id: number, parent: number, depth: number, verified: boolean): TreeNode {
  return { id, parent, depth, token: 100 + id, logq: -0.1, pathScore: -0.1 * (depth + 1), grant: 'base', verified };
}
function step(stepIndex: number, t: number, totalMs: number, verifiedTokens: number, paddingWaste: number, requests: RequestStep[]): StepEvent {
  return {
    type: 'step',
    step: stepIndex,
    t,
    kmax: 8,
    verifiedTokens,
    requests,
    timings: { draftMs: 1, packMs: 1, verifyMs: totalMs - 3, commitMs: 1, totalMs },
    budget: { roots: requests.length, base: verifiedTokens - requests.length, depth: 0, width: 0, unused: 8 - verifiedTokens },
    transfers: [],
    paddingWaste,
  };
}

/** Two steps, two requests; every expected number below is worked out by hand. */
const handRun: StepEvent[] = [
  step(0, 10, 8, 6, 0.2, [
    {
      requestId: 'A',
      nodes: [root, node(1, 0, 0, true), node(2, 1, 1, true), node(3, 0, 0, true)],
      gates: [],
      confidences: [0.9, 0.6],
      accepted: [1, 2],
      bonusToken: 5,
      emitted: [101, 102, 5],
    },
    {
      requestId: 'B',
      nodes: [root, node(1, 0, 0, true), node(2, 1, 1, false)],
      gates: [{ depth: 0, confidence: 0.3, tau: 0.4, pass: false }],
      confidences: [0.3, 0.7],
      accepted: [],
      bonusToken: 9,
      emitted: [9],
      finished: 'length',
    },
  ]),
  step(1, 20, 9, 2, 0, [
    {
      requestId: 'A',
      nodes: [root, node(1, 0, 0, true)],
      gates: [],
      confidences: [0.8],
      accepted: [1],
      bonusToken: 6,
      emitted: [101, 6],
      finished: 'eos',
    },
  ]),
];

describe('RunMetricsAccumulator', () => {
  it('computes every metric of a hand-worked run', () => {
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    for (const e of handRun) acc.addStep(e);
    const m = acc.metrics();
    expect(m.policy).toBe('echo');
    expect(m.steps).toBe(2);
    expect(m.requests).toBe(2);
    expect(m.generatedTokens).toBe(6); // 3 + 1 + 2
    expect(m.wallMs).toBe(20);
    expect(m.throughput).toBeCloseTo(300, 9); // 6 tokens / 0.020 s
    expect(m.decodeThroughput).toBeCloseTo(6 / 0.017, 9); // the steps took 8 + 9 ms; 3 ms between them
    // Per step: drafting 1 ms, verification (8 − 3 + 9 − 3) / 2, no prefill, packing and committing 2.
    expect(m.stepTime).toEqual({ draftMs: 1, verifyMs: 5.5, prefillMs: 0, otherMs: 2 });
    expect(m.meanAcceptedTokens).toBeCloseTo(1, 9); // (2 + 0 + 1) / 3 request-steps
    expect(m.meanAcceptanceLength).toBeCloseTo(2, 9); // 6 / 3
    expect(m.draftUtilisation).toBeCloseTo(0.6, 9); // 3 accepted / 5 verified draft nodes
    expect(m.verifiedTokensPerStep).toBe(4); // (6 + 2) / 2
    expect(m.acceptancePerPosition.map((x) => +x.toFixed(9))).toEqual([+(2 / 3).toFixed(9), +(1 / 3).toFixed(9)]);
    expect(m.paddingWaste).toBeCloseTo(0.1, 9);
    // TPOT: A spans 2 → 20 ms for 5 tokens = 3.6; B spans 2 → 10 ms for 1 token = 8.
    expect(m.tpotP50Ms).toBeCloseTo(5.8, 9);
    expect(m.tpotP99Ms).toBeCloseTo(3.6 + 4.4 * 0.99, 9);
    expect(m.speedupVsAr).toBeUndefined();
  });

  it('reports each request on its own', () => {
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    for (const e of handRun) acc.addStep(e);
    expect(acc.perRequest()).toEqual([
      { requestId: 'A', steps: 2, generatedTokens: 5, meanAcceptedTokens: 1.5, tpotMs: 3.6, finished: 'eos' },
      { requestId: 'B', steps: 1, generatedTokens: 1, meanAcceptedTokens: 0, tpotMs: 8, finished: 'length' },
    ]);
  });

  it('excludes prefill from time per output token', () => {
    const withPrefill = structuredClone(handRun);
    withPrefill[0].timings.prefillMs = 1; // A and B were admitted just before step 0
    const m = computeRunMetrics(withPrefill, { policy: 'echo' }).metrics;
    // A: 3 → 20 ms for 5 tokens = 3.4; B: 3 → 10 ms for 1 token = 7.
    expect(m.tpotP50Ms).toBeCloseTo((3.4 + 7) / 2, 9);
    expect(m.throughput).toBeCloseTo(300, 9); // wall time still counts the prefill
    expect(m.decodeThroughput).toBeCloseTo(6 / 0.016, 9); // decoding does not
    expect(m.stepTime!.prefillMs).toBe(0.5);
    expect(m.stepTime!.otherMs).toBe(1.5); // the prefill is inside the step's total, not left over
  });

  it('labels confidences by whether the accepted path reached the depth', () => {
    const acc = new RunMetricsAccumulator({ policy: 'echo', bins: 10 });
    for (const e of handRun) acc.addStep(e);
    const [d0, d1, ...rest] = acc.histograms();
    expect(rest).toEqual([]);
    expect(d0.depth).toBe(0);
    expect(d0.edges).toHaveLength(11);
    expect(d0.edges[10]).toBe(1);
    // depth 0: accepted 0.9 (A, step 0) and 0.8 (A, step 1); rejected 0.3 (B).
    expect(d0.accepted[9]).toBe(1);
    expect(d0.accepted[8]).toBe(1);
    expect(d0.rejected[3]).toBe(1);
    expect(d0.accepted.reduce((a, b) => a + b)).toBe(2);
    expect(d0.auc).toBe(1);
    // depth 1: accepted 0.6 (A); B drafted depth 1 but never verified it: no outcome, no AUC.
    expect(d1.accepted[6]).toBe(1);
    expect(d1.rejected.reduce((a, b) => a + b)).toBe(0);
    expect(d1.unverified?.[7]).toBe(1);
    expect(d1.auc).toBeNull();
    expect(acc.confidenceSamples(0).accepted).toEqual(Float64Array.from([0.9, 0.8]));
  });

  it("counts a layer a gate cut before it was verified as unverified, apart from both labels and the AUC", () => {
    // A: confident, accepted at depth 0. B: its gate cut depth 0 and nothing of that layer was
    // verified, so whether it would have been accepted is unknown. C: accepted.length 0 with a
    // verified depth-0 node: a real rejection.
    const cut = step(0, 10, 8, 3, 0, [
      { requestId: 'A', nodes: [root, node(1, 0, 0, true)], gates: [], confidences: [0.9], accepted: [1], bonusToken: 5, emitted: [101, 5] },
      {
        requestId: 'B',
        nodes: [root, node(1, 0, 0, false)],
        gates: [{ depth: 0, confidence: 0.05, tau: 0.3, pass: false }],
        confidences: [],
        accepted: [],
        bonusToken: 9,
        emitted: [9],
      },
      { requestId: 'C', nodes: [root, node(1, 0, 0, true)], gates: [], confidences: [0.95], accepted: [], bonusToken: 4, emitted: [4] },
    ]);
    const acc = new RunMetricsAccumulator({ policy: 'echo', bins: 10 });
    acc.addStep(cut);
    const [d0] = acc.histograms();
    expect(d0.unverified?.[0]).toBe(1);
    expect(d0.rejected[9]).toBe(1);
    expect(d0.rejected.reduce((a, b) => a + b)).toBe(1);
    // Counted as rejected, B's 0.05 would lift the AUC to 0.5; C alone above A gives 0.
    expect(d0.auc).toBe(0);
    expect(acc.confidenceSamples(0)).toEqual({ accepted: Float64Array.from([0.9]), rejected: Float64Array.from([0.95]) });
  });

  it('leaves a cut layer unlabelled even where the accepted path broke above it', () => {
    // D's depth 0 was verified and rejected, so its cut depth 1 could never have been accepted;
    // yet labelling only such cuts would leave the samples below τ with rejections alone (those
    // whose path reached the cut have no label), and the AUC would rise with τ all the same.
    const cut = step(0, 10, 8, 4, 0, [
      {
        requestId: 'D',
        nodes: [root, node(1, 0, 0, true)],
        gates: [{ depth: 1, confidence: 0.02, tau: 0.1, pass: false }],
        confidences: [0.4],
        accepted: [],
        bonusToken: 9,
        emitted: [9],
      },
      {
        requestId: 'E',
        nodes: [root, node(1, 0, 0, true)],
        gates: [{ depth: 1, confidence: 0.03, tau: 0.1, pass: false }],
        confidences: [0.8],
        accepted: [1],
        bonusToken: 9,
        emitted: [101, 9],
      },
    ]);
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    acc.addStep(cut);
    expect(acc.confidenceSamples(1)).toEqual({ accepted: new Float64Array(0), rejected: new Float64Array(0) });
    expect(acc.histograms()[1].unverified?.reduce((a, b) => a + b)).toBe(2);
  });

  it('treats a drafted layer the budget left out like a cut one: no outcome where the path reached it', () => {
    // F drafted depth 1 but the global selection verified only its root (EAGLE-2 at high load),
    // which was accepted: depth 1 has no outcome. Were it counted rejected, its 0.6 would be a
    // rejection above every accepted sample.
    const dropped = step(0, 10, 8, 2, 0, [
      {
        requestId: 'F',
        nodes: [root, node(1, 0, 0, true), node(2, 1, 1, false)],
        gates: [],
        confidences: [0.9, 0.6],
        accepted: [1],
        bonusToken: 9,
        emitted: [101, 9],
      },
    ]);
    const acc = new RunMetricsAccumulator({ policy: 'eagle2' });
    acc.addStep(dropped);
    expect(acc.confidenceSamples(1)).toEqual({ accepted: new Float64Array(0), rejected: new Float64Array(0) });
    expect(acc.histograms()[1].unverified?.reduce((a, b) => a + b)).toBe(1);
    expect(acc.confidenceSamples(0).accepted).toEqual(Float64Array.from([0.9]));
  });

  it('labels a cut layer by its outcome when width expansion verified nodes there after all', () => {
    const widened = structuredClone(handRun[1]);
    widened.requests[0].confidences = [];
    widened.requests[0].gates = [{ depth: 0, confidence: 0.05, tau: 0.3, pass: false }];
    widened.requests[0].nodes = [root, { ...node(1, 0, 0, true), grant: 'width' }];
    widened.requests[0].accepted = [];
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    acc.addStep(widened);
    expect(acc.confidenceSamples(0)).toEqual({ accepted: new Float64Array(0), rejected: Float64Array.from([0.05]) });
    expect(acc.histograms()[0].unverified?.every((n) => n === 0)).toBe(true);
  });

  it('gives AUC null when a depth has only one label', () => {
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    acc.addStep(handRun[1]);
    expect(acc.histograms()[0].auc).toBeNull();
  });

  it('refuses steps out of order', () => {
    const acc = new RunMetricsAccumulator({ policy: 'echo' });
    acc.addStep(handRun[1]);
    expect(() => acc.addStep(handRun[0])).toThrow(/step 0 arrived after step 1/);
  });

  it('is all zeros, not NaN, before any step', () => {
    const m = new RunMetricsAccumulator({ policy: 'ar' }).metrics();
    for (const [key, value] of Object.entries(m)) if (typeof value === 'number') expect(value, key).toBe(0);
  });

  it('stays consistent on a synthetic run', () => {
    const events = syntheticRun({ seed: 3, batch: 4, requests: 9, maxNewTokens: 40, depth: 4, kmax: 24 });
    const { metrics: m, histograms } = computeRunMetrics(events, { policy: 'echo' });
    expect(m.requests).toBe(9);
    expect(m.steps).toBe(events.length);
    // Every request-step emits its accepted tokens plus one bonus, except where length cut it.
    expect(m.meanAcceptanceLength).toBeLessThanOrEqual(m.meanAcceptedTokens + 1 + 1e-12);
    expect(m.meanAcceptanceLength).toBeGreaterThan(m.meanAcceptedTokens);
    expect(m.generatedTokens).toBe(9 * 40);
    // Acceptance per position is non-increasing and starts at P(accepted length ≥ 1).
    for (let p = 1; p < m.acceptancePerPosition.length; p++) {
      expect(m.acceptancePerPosition[p]).toBeLessThanOrEqual(m.acceptancePerPosition[p - 1]);
    }
    // Σ_p P(L > p) = E[L] = MAT.
    expect(m.acceptancePerPosition.reduce((a, b) => a + b, 0)).toBeCloseTo(m.meanAcceptedTokens, 9);
    expect(m.draftUtilisation).toBeGreaterThan(0);
    expect(m.draftUtilisation).toBeLessThanOrEqual(1);
    expect(m.verifiedTokensPerStep).toBeLessThanOrEqual(24);
    expect(m.tpotP50Ms).toBeLessThanOrEqual(m.tpotP99Ms);
    // The generator accepts more often when confident, so depth 0 separates.
    expect(histograms[0].auc).toBeGreaterThan(0.6);
  });
});

describe("a trace's metrics as recorded", () => {
  const events = syntheticRun({ seed: 5, batch: 2, requests: 4, maxNewTokens: 12, depth: 3, kmax: 12 });
  const stepsWallMs = computeRunMetrics(events, { policy: 'echo' }).metrics.wallMs;
  const end = { metrics: { wallMs: stepsWallMs + 250, speedupVsAr: 1.75 } };

  it("takes the summary line's wall clock and speedup once the fold has reached the end, and only then", () => {
    const whole = traceMetrics(events, { policy: 'echo', end });
    expect(whole.metrics.wallMs).toBe(stepsWallMs + 250);
    expect(whole.metrics.throughput).toBeCloseTo(whole.metrics.generatedTokens / ((stepsWallMs + 250) / 1000), 9);
    expect(whole.metrics.speedupVsAr).toBe(1.75);
    expect(Object.keys(whole.metrics).at(-1)).toBe('speedupVsAr');
    expect(whole.requests).toEqual(computeRunMetrics(events, { policy: 'echo' }).requests);
    const cut = traceMetrics(events, { policy: 'echo' });
    expect(cut.metrics).toEqual(computeRunMetrics(events, { policy: 'echo' }).metrics);
    expect(cut.metrics).not.toHaveProperty('speedupVsAr');
    // A summary without a measured speedup (no --compare-ar) adds none.
    expect(traceMetrics(events, { policy: 'echo', end: { metrics: { wallMs: 9000 } } }).metrics).not.toHaveProperty('speedupVsAr');
  });

  it('gives a replay folding step by step the numbers the whole trace gives', () => {
    const fold = new RunMetricsAccumulator({ policy: 'echo' });
    for (const event of events.slice(0, 5)) fold.addStep(event);
    expect(metricsAsRecorded(fold)).toEqual(traceMetrics(events.slice(0, 5), { policy: 'echo' }).metrics);
    for (const event of events.slice(5)) fold.addStep(event);
    expect(metricsAsRecorded(fold, end)).toEqual(traceMetrics(events, { policy: 'echo', end }).metrics);
  });
});

describe('speedupVsAr', () => {
  const base = computeRunMetrics(handRun, { policy: 'echo' }).metrics;
  it('is the throughput ratio over an ar run', () => {
    const ar = { ...base, policy: 'ar', throughput: 100 };
    expect(speedupVsAr(base, ar)).toBeCloseTo(3, 9);
    expect(withSpeedupVsAr(base, ar).speedupVsAr).toBeCloseTo(3, 9);
  });
  it('refuses a baseline that is not ar or has no throughput', () => {
    expect(() => speedupVsAr(base, base)).toThrow(/must be an 'ar' run, got policy 'echo'/);
    expect(() => speedupVsAr(base, { ...base, policy: 'ar', throughput: 0 })).toThrow(/no throughput/);
  });
});
