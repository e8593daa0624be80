import { describe, expect, it } from 'vitest';
import { clockFromSpec, curvesClock, draftForwardSizes, measuredCurve, rooflineClock, spreadCurve, tverClock } from '../../../src/engine/cost/clock';
import { fitKnee, suggestKmax, tverMs } from '../../../src/engine/cost/knee';
import { HARDWARE, hardwareByName, MODEL_SIZES, modelByName, rooflineForward, rooflineKnee, weightBytesRead } from '../../../src/engine/cost/roofline';
import { Rng } from '../../../src/engine/rng';
import type { StepEvent } from '../../../src/shared/events';

const TOKENS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512];

describe('knee fit', () => {
  it('finds the ridge of an exact roofline curve max(memory, compute)', () => {
    const fit = fitKnee(TOKENS.map((tokens) => ({ tokens, ms: Math.max(4, 0.125 * tokens) })));
    expect(fit.kmax).toBe(32);
    expect(fit.tArMs).toBe(4);
    // Past the knee the model is the compute line itself: T_ar·γ per token = 0.125 ms.
    expect(fit.tArMs * fit.gamma).toBeCloseTo(0.125, 9);
    expect(tverMs(fit, 512)).toBeCloseTo(64, 9);
    expect(fit.rmsRelativeError).toBeLessThan(1e-9);
  });

  it('lands near the ridge of a noisy roofline curve with launch overhead', () => {
    const rng = new Rng(5);
    const points = TOKENS.map((tokens) => ({ tokens, ms: (Math.max(4, 0.125 * tokens) + 0.5) * (1 + 0.05 * (2 * rng.next() - 1)) }));
    const fit = fitKnee(points);
    // Fixed cost 4.5 ms against 0.125 ms per token: the crossing is at 36 tokens.
    expect(fit.kmax).toBeGreaterThanOrEqual(30);
    expect(fit.kmax).toBeLessThanOrEqual(42);
  });

  it('fits the CPU curve of the design notes (nearly free to ~8, compute-bound past ~16) with a knee between them', () => {
    const fit = fitKnee([
      { tokens: 1, ms: 1.9 },
      { tokens: 8, ms: 3.0 },
      { tokens: 16, ms: 5.7 },
      { tokens: 512, ms: 85 },
    ]);
    expect(fit.kmax).toBeGreaterThanOrEqual(8);
    expect(fit.kmax).toBeLessThanOrEqual(16);
  });

  it('puts the knee at the end of a curve that never turns up; K_max is the knee, then batch + knee', () => {
    const fit = fitKnee(TOKENS.map((tokens) => ({ tokens, ms: 3 })));
    expect(fit.gamma).toBe(0);
    expect(fit.kmax).toBe(512);
    expect([1, 8, 15, 16, 64].map((batch) => suggestKmax({ kmax: 16 }, batch))).toEqual([16, 16, 16, 32, 80]);
    expect(() => fitKnee([{ tokens: 1, ms: 1 }])).toThrow(/at least 3/);
  });
});

describe('roofline', () => {
  it('is memory-bound for one token and compute-bound for many, turning at bytes·FLOPs / (2·params·bandwidth)', () => {
    const hw = HARDWARE.h100;
    const m = MODEL_SIZES['8b'];
    expect(rooflineForward(hw, m, 1).bound).toBe('memory');
    expect(rooflineForward(hw, m, 4096).bound).toBe('compute');
    const ridge = (m.bytesPerParam * hw.peakFlops * hw.computeEfficiency) / (2 * hw.peakBandwidth * hw.memoryEfficiency);
    expect(Math.abs(rooflineKnee(hw, m) - ridge)).toBeLessThanOrEqual(1);
    // 16 GB at 2.68 TB/s effective ≈ 6 ms, plus overhead.
    expect(rooflineForward(hw, m, 1).ms).toBeCloseTo(16e9 / (3.35e12 * 0.8) * 1e3 + 0.3, 6);
  });

  it('reads more of an MoE model as more tokens route to more experts, but never more than all of it', () => {
    const moe = MODEL_SIZES['235b-a22b'];
    const one = weightBytesRead(moe, 1);
    expect(one / moe.bytesPerParam).toBeCloseTo(moe.activeParams, -6);
    expect(weightBytesRead(moe, 64)).toBeGreaterThan(one);
    expect(weightBytesRead(moe, 100000)).toBeCloseTo(moe.totalParams * moe.bytesPerParam, -6);
  });

  it('names what it does not know', () => {
    expect(() => clockFromSpec('tpu')).toThrow(/unknown hardware "tpu" \(known: h100/);
    expect(() => clockFromSpec('h100:13b')).toThrow(/unknown model size "13b"/);
    expect(() => clockFromSpec('measured')).toThrow(/profile-hw/);
  });
});

describe('modelled clocks over a step event', () => {
  const event = {
    verifiedTokens: 7,
    requests: [
      { requestId: 'a', nodes: [{ id: 0, parent: -1, depth: -1 }, { id: 1, parent: 0, depth: 0 }, { id: 2, parent: 0, depth: 0 }, { id: 3, parent: 1, depth: 1 }] },
      { requestId: 'b', nodes: [{ id: 0, parent: -1, depth: -1 }, { id: 1, parent: 0, depth: 0 }] },
    ],
  } as unknown as StepEvent;

  it('counts one draft forward per depth, sized by the distinct parents expanded', () => {
    expect(draftForwardSizes(event)).toEqual([2, 1]);
  });

  it('prices the draft forwards the engine recorded when it did, catch-up rows included', () => {
    const recorded = { ...event, draftRows: [5, 1, 1] } as StepEvent;
    expect(draftForwardSizes(recorded)).toEqual([5, 1, 1]);
    const draft = [
      { tokens: 1, ms: 1 },
      { tokens: 5, ms: 3 },
    ];
    expect(tverClock({ tArMs: 10, gamma: 0.1, kmax: 5 }, draft).stepMs(recorded).draftMs).toBeCloseTo(3 + 1 + 1, 9);
    expect(tverClock({ tArMs: 10, gamma: 0.1, kmax: 5 }, 0.05).stepMs(recorded).draftMs).toBeCloseTo(3 * 0.5, 9);
  });

  it('T_ver clock: flat below the knee, linear past it', () => {
    const clock = tverClock({ tArMs: 10, gamma: 0.1, kmax: 5 }, 0.05);
    const s = clock.stepMs(event);
    expect(s.verifyMs).toBeCloseTo(10 * (1 + 0.1 * 2), 9);
    expect(s.draftMs).toBeCloseTo(2 * 0.05 * 10, 9);
    expect(s.totalMs).toBeCloseTo(s.draftMs + s.verifyMs, 9);
  });

  it('T_ver clock with a measured draft curve: each draft forward costs what the curve says for its rows', () => {
    // A separate draft whose forward grows with its rows: 1 ms for one, 3 ms for two.
    const clock = tverClock({ tArMs: 10, gamma: 0.1, kmax: 5 }, [
      { tokens: 1, ms: 1 },
      { tokens: 2, ms: 3 },
      { tokens: 4, ms: 4 },
    ]);
    const s = clock.stepMs(event);
    expect(s.verifyMs).toBeCloseTo(12, 9);
    expect(s.draftMs).toBeCloseTo(3 + 1, 9); // forwards of 2 and 1 rows
    expect(clock.label).toMatch(/draft forward from its measured curve \(1–4 rows\)/);
    expect(tverClock({ tArMs: 10, gamma: 0.1, kmax: 5 }).label).toMatch(/draft forward 0\.05 × T_ar/);
  });

  it('measured clock: reads the draft curve of the hardware profile, not a share of the target', () => {
    const target = TOKENS.map((tokens) => ({ tokens, ms: Math.max(4, 0.125 * tokens) }));
    const draft = TOKENS.map((tokens) => ({ tokens, ms: 0.5 + 0.25 * tokens }));
    const s = clockFromSpec('measured', { target, draft }).stepMs(event);
    expect(s.verifyMs).toBeCloseTo(4, 9);
    expect(s.draftMs).toBeCloseTo(0.5 + 0.25 * 2 + (0.5 + 0.25 * 1), 9);
  });

  it('curves clock: verification and each draft forward read off their own measured curves', () => {
    const s = curvesClock({
      target: [
        { tokens: 1, ms: 2 },
        { tokens: 8, ms: 9 },
      ],
      draft: [
        { tokens: 1, ms: 0.5 },
        { tokens: 2, ms: 0.75 },
      ],
    }).stepMs(event);
    expect(s.verifyMs).toBeCloseTo(8, 9); // 7 tokens, between 1 and 8
    expect(s.draftMs).toBeCloseTo(0.75 + 0.5, 9);
  });

  // Measured over up to 4 requests: 1 ms per request of one row, then 0.25 ms per extra row.
  const spreadPoints = [
    { tokens: 1, ms: 1 },
    { tokens: 2, ms: 2 },
    { tokens: 4, ms: 4 },
    { tokens: 8, ms: 5 },
    { tokens: 16, ms: 7 },
  ];

  it('spread curve: a forward costs its requests, one row each, plus its extra rows at the cost per row with requests held', () => {
    const ms = spreadCurve(spreadPoints, 4);
    // 8 rows over 2 requests: 2 requests (2 ms) and 6 more rows (1.5 ms), not 8 rows over 4 requests (5 ms).
    expect(ms(8, 2)).toBeCloseTo(3.5, 9);
    expect(ms(8, null)).toBeCloseTo(5, 9); // no request count: read as measured
    expect(ms(10, 10)).toBeCloseTo(5.5, 9); // more requests than measured: held at 4, as the curve was
    expect(ms(3, 5)).toBeCloseTo(3, 9); // never more requests than rows
    expect(ms(1, 1)).toBe(1);
  });

  it('curves clock over a spread: verification over the step\'s requests, each draft forward over its own', () => {
    const recorded = { ...event, draftRows: [5, 1], draftRequests: [2, 1] } as StepEvent;
    const clock = curvesClock({ target: spreadPoints, draft: spreadPoints }, 'spread', 4);
    const s = clock.stepMs(recorded);
    expect(s.verifyMs).toBeCloseTo(2 + 0.25 * 5, 9); // 7 tokens over the step's 2 requests
    expect(s.draftMs).toBeCloseTo(2 + 0.25 * 3 + 1, 9);
    // Without the spread, rows alone: 7 and 5 rows read as measured.
    const flat = curvesClock({ target: spreadPoints, draft: spreadPoints }).stepMs(recorded);
    expect(flat.verifyMs).toBeCloseTo(4.75, 9);
    expect(flat.draftMs).toBeCloseTo(4.25 + 1, 9);
  });

  it('curves clock timed at two contexts: each step read at its own past, older steps at the base context', () => {
    const twice = spreadPoints.map((p) => ({ tokens: p.tokens, ms: 2 * p.ms }));
    const clock = clockFromSpec('curves', { target: spreadPoints, draft: spreadPoints, slots: 4, context: 64, longer: [{ context: 128, target: twice, draft: twice }] });
    expect(clock.label).toContain('between 64, 128 rows');
    const recorded = { ...event, draftRows: [5, 1], draftRequests: [2, 1] } as StepEvent;
    const base = clock.stepMs(recorded);
    expect(base.verifyMs).toBeCloseTo(2 + 0.25 * 5, 9);
    expect(clock.stepMs({ ...recorded, past: 40 }).totalMs).toBeCloseTo(base.totalMs, 9);
    // At 96 rows, halfway: 1.5 × every forward; at 128, twice.
    expect(clock.stepMs({ ...recorded, past: 96 }).verifyMs).toBeCloseTo(1.5 * base.verifyMs, 9);
    expect(clock.stepMs({ ...recorded, past: 128 }).draftMs).toBeCloseTo(2 * base.draftMs, 9);
    // The clock's costs carry both contexts, so a policy priced by it reads the same times.
    expect(clock.costs.curves?.longer?.[0].context).toBe(128);
  });

  it("curves clock: a step of one request is read off the profile's one-request curves, at every context", () => {
    // One request's forward is not the spread curve's shape: 8 rows cost what 12 do.
    const single = [
      { tokens: 1, ms: 1 },
      { tokens: 8, ms: 4 },
      { tokens: 12, ms: 4 },
      { tokens: 16, ms: 5 },
    ];
    const oneRequest = { target: single, draft: single.map((p) => ({ tokens: p.tokens, ms: p.ms / 10 })) };
    const twice = (points: typeof single) => points.map((p) => ({ tokens: p.tokens, ms: 2 * p.ms }));
    const profile = { target: spreadPoints, draft: spreadPoints, slots: 4, context: 64 };
    const longer = [{ context: 128, target: twice(spreadPoints), draft: twice(spreadPoints), oneRequest: { target: twice(oneRequest.target), draft: twice(oneRequest.draft) } }];
    const clock = clockFromSpec('curves', { ...profile, oneRequest, longer });
    expect(clock.label).toContain("one request's forwards off its own curves");
    const alone = { ...event, requests: [event.requests[0]], verifiedTokens: 8, draftRows: [4], draftRequests: [1] } as StepEvent;
    expect(clock.stepMs(alone)).toMatchObject({ verifyMs: 4, draftMs: expect.closeTo(0.1 + (3 / 7) * 0.3, 9) });
    // At 96 rows of past, halfway to the longer context's one-request curve.
    expect(clock.stepMs({ ...alone, past: 96 }).verifyMs).toBeCloseTo(6, 9);
    // Two requests: the spread curve, as before.
    const spreadOnly = clockFromSpec('curves', { ...profile, longer: longer.map(({ oneRequest: _, ...l }) => l) });
    expect(clock.stepMs(event).verifyMs).toBeCloseTo(spreadOnly.stepMs(event).verifyMs, 9);
    // Without the one-request curves, one request is read off the spread one: 1 ms and 7 rows at 0.25.
    expect(spreadOnly.stepMs(alone).verifyMs).toBeCloseTo(2.75, 9);
    // The prices a policy reads carry them, at both contexts.
    expect(clock.costs.curves?.oneRequest?.target).toEqual(single);
    expect(clock.costs.curves?.longer?.[0].oneRequest?.target).toEqual(twice(single));
  });

  it("curves and measured clocks: a step's draft forwards after the target's cost their measured extra, in order, once a step", () => {
    const recorded = { ...event, draftRows: [5, 1, 1], draftRequests: [2, 1, 1] } as StepEvent;
    const profile = { target: spreadPoints, draft: spreadPoints, slots: 4 };
    const warm = clockFromSpec('curves', profile);
    const cold = clockFromSpec('curves', { ...profile, draftAfterTargetMs: [0.5, 0.25] });
    // The first two forwards pay 0.5 and 0.25 ms more; the third, past what was timed, nothing.
    expect(cold.stepMs(recorded).draftMs).toBeCloseTo(warm.stepMs(recorded).draftMs + 0.75, 9);
    expect(cold.stepMs(recorded).verifyMs).toBeCloseTo(warm.stepMs(recorded).verifyMs, 9);
    expect(cold.stepMs({ ...recorded, draftRows: [3], draftRequests: [2] }).draftMs).toBeCloseTo(warm.stepMs({ ...recorded, draftRows: [3], draftRequests: [2] }).draftMs + 0.5, 9);
    // A step that drafts nothing pays nothing for a cold draft.
    expect(cold.stepMs({ ...recorded, draftRows: [], draftRequests: [] }).draftMs).toBe(0);
    expect(cold.label).toContain("a step's draft forwards after the target's +0.50, +0.25 ms");
    // The prices a policy reads carry it too.
    expect(cold.costs.curves?.draftAfterTargetMs).toEqual([0.5, 0.25]);
    const target = TOKENS.map((tokens) => ({ tokens, ms: Math.max(4, 0.125 * tokens) }));
    const measured = clockFromSpec('measured', { target, draft: spreadPoints, slots: 4, draftAfterTargetMs: [0.5, 0.25] });
    expect(measured.stepMs(recorded).draftMs).toBeCloseTo(clockFromSpec('measured', { target, draft: spreadPoints, slots: 4 }).stepMs(recorded).draftMs + 0.75, 9);
  });

  it('measured clock: a profile that says how many requests it spread over prices draft forwards by them', () => {
    const recorded = { ...event, draftRows: [8, 1], draftRequests: [2, 1] } as StepEvent;
    const target = TOKENS.map((tokens) => ({ tokens, ms: Math.max(4, 0.125 * tokens) }));
    const clock = clockFromSpec('measured', { target, draft: spreadPoints, slots: 4 });
    expect(clock.stepMs(recorded).draftMs).toBeCloseTo(3.5 + 1, 9);
    expect(clock.label).toMatch(/over up to 4 requests/);
  });

  it('curves clock from a profile: both forwards off its curves, by rows and requests', () => {
    const recorded = { ...event, draftRows: [8, 1], draftRequests: [2, 1] } as StepEvent;
    const s = clockFromSpec('curves', { target: spreadPoints, draft: spreadPoints, slots: 4 }).stepMs(recorded);
    expect(s.verifyMs).toBeCloseTo(2 + 0.25 * 5, 9);
    expect(s.draftMs).toBeCloseTo(3.5 + 1, 9);
    expect(() => clockFromSpec('curves')).toThrow(/--hw curves needs a hardware profile/);
  });

  it('roofline clock: a bigger model on the same hardware takes longer', () => {
    const small = rooflineClock(HARDWARE.h100, MODEL_SIZES['8b']).stepMs(event);
    const big = rooflineClock(HARDWARE.h100, MODEL_SIZES['70b']).stepMs(event);
    expect(big.verifyMs).toBeGreaterThan(small.verifyMs * 5);
    expect(clockFromSpec('a100:70b').label).toMatch(/A100.*70B/);
  });
});

describe('measured curve', () => {
  it('interpolates between sizes, holds the smallest below them and extends the last slope past them', () => {
    const ms = measuredCurve([
      { tokens: 16, ms: 4 },
      { tokens: 1, ms: 1 },
      { tokens: 4, ms: 2 },
    ]);
    expect(ms(1)).toBe(1);
    expect(ms(0.5)).toBe(1);
    expect(ms(2)).toBeCloseTo(1 + 1 / 3, 9);
    expect(ms(10)).toBeCloseTo(3, 9);
    expect(ms(28)).toBeCloseTo(6, 9); // slope 1/6 ms per row past 16
  });

  it('never gets cheaper with more rows, whatever a noisy median says', () => {
    const ms = measuredCurve([
      { tokens: 1, ms: 2 },
      { tokens: 2, ms: 1.5 },
      { tokens: 4, ms: 3 },
    ]);
    expect(ms(2)).toBe(2);
    expect(ms(3)).toBeCloseTo(2.5, 9);
    for (let n = 1; n < 8; n += 0.5) expect(ms(n + 0.5)).toBeGreaterThanOrEqual(ms(n));
    expect(() => measuredCurve([])).toThrow(/at least one point/);
  });

  it("gives each clock's device prices: the knee and γ of its target, its draft forward's share of a one-token target forward", () => {
    const roofline = clockFromSpec('h100:70b');
    expect(roofline.costs.knee).toBe(rooflineKnee(hardwareByName('h100'), modelByName('70b')));
    const t1 = rooflineForward(hardwareByName('h100'), modelByName('70b'), 1).ms;
    const draft = { ...modelByName('70b'), totalParams: 0.05 * 70.6e9, activeParams: 0.05 * 70.6e9, kvBytesPerToken: 0.05 * modelByName('70b').kvBytesPerToken };
    expect(roofline.costs.draftForward).toBeCloseTo(rooflineForward(hardwareByName('h100'), draft, 1).ms / t1, 2);
    const fit = { tArMs: 10, gamma: 0.1, kmax: 12 };
    expect(tverClock(fit, 0.2).costs).toEqual({ knee: 12, gamma: 0.1, draftForward: 0.2, draftRow: 0 });
    const target = [1, 2, 4, 8, 16, 32, 64].map((tokens) => ({ tokens, ms: 2 * Math.max(4, tokens) }));
    const curves = curvesClock({ target, draft: target.map((p) => ({ tokens: p.tokens, ms: p.ms / 4 })) }).costs;
    expect([curves.knee, curves.draftForward]).toEqual([4, 0.25]);
  });
});
