// The budget explanation on hand-made greedy steps whose target path is known: false cuts and
// keeps, the oracle gate (K_max included), the random gate's exact expectation, the pricing.
import { describe, expect, it } from 'vitest';
import type { GateCheck, TreeNode } from '../../../src/shared/events.js';
import { explainBudget, hostMsPerStep, verifySlope, wallPricer, type ExplainRequestStep, type ExplainStep, type StepPricer } from '../../../src/engine/metrics/budget-explanation.js';

/** Nodes from [parent, depth, token, q, verified] rows; the root first. */
function nodes(root: number, rows: Array<[number, number, number, number, boolean]>): TreeNode[] {
  const out: TreeNode[] = [{ id: 0, parent: -1, depth: -1, token: root, logq: 0, pathScore: 0, grant: 'root', verified: true }];
  for (const [parent, depth, token, q, verified] of rows) {
    out.push({ id: out.length, parent, depth, token, logq: Math.log(q), pathScore: out[parent].pathScore + Math.log(q), grant: 'base', verified });
  }
  return out;
}

function request(id: string, tree: TreeNode[], accepted: number[], bonus: number, emitted: number[], gates: GateCheck[], expansions: ExplainRequestStep['expansions'], finished?: 'eos' | 'length'): ExplainRequestStep {
  return { requestId: id, nodes: tree, gates, confidences: [], accepted, bonusToken: bonus, emitted, expansions, ...(finished ? { finished } : {}) };
}

function step(index: number, kmax: number, requests: ExplainRequestStep[]): ExplainStep {
  const verifiedTokens = requests.reduce((a, r) => a + r.nodes.filter((n) => n.verified).length, 0);
  return {
    type: 'step',
    step: index,
    t: 0,
    kmax,
    verifiedTokens,
    requests,
    timings: { draftMs: 2, packMs: 0, verifyMs: 5, commitMs: 0, totalMs: 10 + verifiedTokens },
    budget: { roots: requests.length, base: verifiedTokens - requests.length, depth: 0, width: 0, unused: kmax - verifiedTokens },
    transfers: [],
    paddingWaste: 0,
    draftRows: [requests.length, 2],
  };
}

const lq = (...qs: number[]) => qs.map(Math.log);

/**
 * Three requests. a: the target's path is 1 2 3 | 4 5; step 0 verifies 1 2 and its gate cuts
 * layer 2, whose candidate 3 the target would accept (a false cut, one token lost). b: its gate
 * keeps layer 0 and the tree verifies 11 while the target wants 12, which the draft proposed
 * second (the layer was right, the node was not). c: the gate keeps layer 0 and nothing in it is
 * accepted (a false keep). Step 1: a's gate keeps layer 0, accepted.
 */
function run(kmax = 10): ExplainStep[] {
  const a0 = request(
    'a',
    nodes(100, [[0, 0, 1, 0.9, true], [1, 1, 2, 0.8, true]]),
    [1, 2],
    3,
    [1, 2, 3],
    [{ depth: 2, confidence: 0.05, tau: 0.2, pass: false }],
    [
      { node: 0, tokens: [1, 5], logq: lq(0.9, 0.05) },
      { node: 1, tokens: [2, 6], logq: lq(0.8, 0.1) },
      { node: 2, tokens: [3, 7], logq: lq(0.1, 0.05) },
    ],
  );
  const b0 = request('b', nodes(200, [[0, 0, 11, 0.6, true]]), [], 12, [12], [{ depth: 0, confidence: 0.6, tau: 0.2, pass: true }], [{ node: 0, tokens: [11, 12], logq: lq(0.6, 0.35) }], 'eos');
  const c0 = request('c', nodes(300, [[0, 0, 21, 0.5, true]]), [], 23, [23], [{ depth: 0, confidence: 0.5, tau: 0.2, pass: true }], [{ node: 0, tokens: [21, 22], logq: lq(0.5, 0.2) }], 'eos');
  const a1 = request('a', nodes(3, [[0, 0, 4, 0.7, true]]), [1], 5, [4, 5], [{ depth: 0, confidence: 0.7, tau: 0.2, pass: true }], [{ node: 0, tokens: [4, 8], logq: lq(0.7, 0.15) }], 'length');
  return [step(0, kmax, [a0, b0, c0]), step(1, kmax, [a1])];
}

/** 10 ms a step plus 1 ms per verified token, 2 of them drafting. */
const price: StepPricer = (_event, verifiedTokens) => ({ totalMs: 10 + verifiedTokens, draftMs: 2 });

describe('budget explanation', () => {
  it("reads the target's verdict on cut candidates off the run's output: false cuts, false keeps, lost tokens", () => {
    const x = explainBudget(run(), { price });
    expect(x.candidatesSeen).toBe(true);
    expect(x.unknownVerdicts).toBe(0);
    expect(x.reach).toBe(3 + 1 + 0 + 1); // a: 1 2 3; b: 12; c: none; a: 4
    expect(x.gates).toEqual({ checks: 4, passes: 3, waived: 0, keepRate: 0.75, keptAccepted: 2, falseKeeps: 1, falseCuts: 1, rightCuts: 0, unknown: 0, lostTokens: 1, keptRejectedNodes: 2 });
    // Every candidate once: 6 for a (step 0), 2 each for b and c, 2 for a (step 1).
    expect(x.drafted).toBe(12);
    expect(x.byDepth.map((d) => [d.drafted, d.verified, d.accepted, d.targetAccepts])).toEqual([
      [8, 4, 2, 3],
      [2, 1, 1, 1],
      [2, 0, 0, 1],
    ]);
    // Path probabilities: 0.9, 0.72, 0.072 (cut), 0.6, 0.35 (b's 12), 0.7 …, in bins finer below 0.1.
    expect(x.byConfidence.map((b) => b.lo)).toEqual([0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.4, 0.6, 0.8]);
    const bin = (lo: number) => x.byConfidence.find((b) => b.lo === lo)!;
    expect(bin(0.8)).toMatchObject({ drafted: 1, verified: 1, accepted: 1, targetAccepts: 1 }); // 0.9
    expect(bin(0.2)).toMatchObject({ drafted: 2, verified: 0, targetAccepts: 1 }); // b's 12 (0.35), c's 22 (0.2)
    expect(bin(0.03)).toMatchObject({ drafted: 4, verified: 0, accepted: 0, targetAccepts: 1 }); // 0.045, 0.09, 0.072 (the cut 3), 0.036
    expect(x.byConfidence.reduce((a, b) => a + b.drafted, 0)).toBe(12);
  });

  it('bounds the run by an oracle gate that verifies exactly what the target accepts', () => {
    const x = explainBudget(run(), { price });
    expect(x.actual).toMatchObject({ accepted: 3, verifiedTokens: 9, emitted: 7, ms: 17 + 12 });
    // a keeps 1 2 3 (it may emit 5 more), b keeps nothing (it ends at its bonus), c nothing; a then keeps 4.
    expect(x.oracle).toMatchObject({ accepted: 4, verifiedTokens: 8, emitted: 8, ms: 16 + 12, acceptedPerVerified: 1 });
    expect(x.oracle.throughput).toBeCloseTo(8 / 0.028, 9);
    // Under K_max 5 the oracle's step 0 (6 tokens) drops its deepest node.
    expect(explainBudget(run(5), { price }).oracle).toMatchObject({ accepted: 3, verifiedTokens: 7, emitted: 7 });
    expect(x.freeDrafting).toMatchObject({ emitted: 7, ms: 29 - 4 });
    expect(x.draft).toMatchObject({ forwards: 4, forwardsPerStep: 2 });
    expect(x.draft.share).toBeCloseTo(4 / 29, 12);
  });

  it("computes the random gate's expectation at the run's keep rate, exactly", () => {
    const x = explainBudget(run(), { price });
    // r = 0.75. a, step 0: cut as the run did (0.25: 2 accepted, 2 verified) or kept (0.75: the
    // cut layer's best candidate, 3, joins: 3 and 3). b, c: cut (0.25: nothing verified) or kept
    // (0.75: their node, rejected). a, step 1: cut (0.25) or kept (0.75: 4 accepted).
    expect(x.random!.accepted).toBeCloseTo(2.75 + 0.75, 12);
    expect(x.random!.verifiedTokens).toBeCloseTo(2.75 + 0.75 + 0.75 + 0.75 + 4, 12);
    expect(x.random!.emitted).toBeCloseTo(0.25 * 3 + 0.75 * 4 + 1 + 1 + (0.25 * 1 + 0.75 * 2), 12);
    expect(x.random!.ms).toBeCloseTo(10 + 3 + 2.75 + 0.75 + 0.75 + (10 + 1 + 0.75), 12);
  });

  it('has no gate account or random bound for a policy without gates, and reaches no further than it verified without candidates', () => {
    const plain = run().map((s) => ({ ...s, requests: s.requests.map((r) => ({ ...r, gates: [], expansions: undefined })) }));
    const x = explainBudget(plain, { price });
    expect(x.gates).toBeNull();
    expect(x.random).toBeNull();
    expect(x.candidatesSeen).toBe(false);
    expect(x.reach).toBe(2 + 0 + 0 + 1);
  });

  it("prices verification on the wall clock by the steps' own slope", () => {
    const events = [4, 8, 12].map((k) => ({ verifiedTokens: k, timings: { draftMs: 0, packMs: 0, verifyMs: 3 + 0.5 * k, commitMs: 0, totalMs: 20 } }));
    expect(verifySlope(events)).toBeCloseTo(0.5, 12);
    expect(verifySlope(events.slice(0, 1))).toBe(0);
    const x = explainBudget(run(), { price: wallPricer(0.5) });
    // The oracle verified 1 token fewer in step 0: 0.5 ms cheaper than the measured 17.
    expect(x.oracle.ms).toBeCloseTo(29 - 0.5, 12);
  });

  it("measures the engine's own work a step outside the models' run(), over the steps that prefilled nothing", () => {
    const timings = (totalMs: number, modelMs: number | undefined, prefillMs?: number) => ({
      timings: { draftMs: 0, packMs: 0, verifyMs: 0, commitMs: 0, totalMs, ...(modelMs !== undefined ? { modelMs } : {}), ...(prefillMs !== undefined ? { prefillMs } : {}) },
    });
    // 1 ms and 0.5 ms of host work; the step that prefilled (its prefill's host share unknown) is left out.
    expect(hostMsPerStep([timings(10, 9), timings(8, 7.5), timings(30, 20, 12)])).toBeCloseTo(0.75, 12);
    // Steps that did not record their model time say nothing.
    expect(hostMsPerStep([timings(10, undefined)])).toBeNull();
    expect(explainBudget(run()).hostMsPerStep).toBeNull();
  });
});
