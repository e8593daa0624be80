import { describe, expect, it } from 'vitest';
import {
  BIN_PRIOR_SAMPLES,
  ChildAcceptance,
  confidenceBin,
  CONFIDENCE_EDGES,
  RANK_PRIOR_SAMPLES,
  rankPriorRate,
} from '../../../src/engine/calibrate/child-acceptance';
import { DraftTree } from '../../../src/engine/tree';
import { EchoPolicy } from '../../../src/engine/policy/echo';
import { emptyChildCounts } from '../../../src/engine/calibrate/child-acceptance';
import { runTableStep } from '../policy/echo-harness';
import { parseProfile, profileGates } from '../../../src/engine/calibrate/profile';
import { profileOf } from './profile-fixture';

function candidates(tree: DraftTree, node: number, probs: number[], row: number): void {
  tree.setCandidates(node, row, Int32Array.from(probs, (_, r) => 10 * (node + 1) + r), Float32Array.from(probs, (p) => Math.log(p)));
}

describe('ChildAcceptance', () => {
  it('bins confidences by their lower edges, the last bin running to 1', () => {
    expect(confidenceBin(0)).toBe(0);
    expect(confidenceBin(0.019)).toBe(0);
    expect(confidenceBin(0.02)).toBe(1);
    expect(confidenceBin(0.5)).toBe(CONFIDENCE_EDGES.indexOf(0.45));
    expect(confidenceBin(1)).toBe(CONFIDENCE_EDGES.length - 1);
  });

  it('before any sample, every bin of a rank reads the rank prior', () => {
    const model = new ChildAcceptance('path-prob');
    for (const q of [0.01, 0.3, 0.95]) {
      expect(model.estimate(0, q)).toBeCloseTo(0.6, 12);
      expect(model.estimate(1, q)).toBeCloseTo(0.21, 12);
      expect(model.estimate(7, q)).toBeCloseTo(rankPriorRate(3), 12);
    }
  });

  it('learns each bin, shrinking a sparse one towards its rank', () => {
    const model = new ChildAcceptance('path-prob');
    for (let i = 0; i < 200; i++) model.record(0, 0.95, true);
    for (let i = 0; i < 2; i++) model.record(0, 0.5, false);
    const rankRate = (200 + RANK_PRIOR_SAMPLES * 0.6) / (202 + RANK_PRIOR_SAMPLES);
    // Well seen: near its own rate.
    expect(model.estimate(0, 0.95)).toBeCloseTo((200 + BIN_PRIOR_SAMPLES * rankRate) / (200 + BIN_PRIOR_SAMPLES), 12);
    // Seen twice, both rejected: pulled most of the way back to the rank's rate.
    expect(model.estimate(0, 0.5)).toBeCloseTo((0 + BIN_PRIOR_SAMPLES * rankRate) / (2 + BIN_PRIOR_SAMPLES), 12);
    expect(model.estimate(0, 0.5)).toBeGreaterThan(0.7);
    // Other ranks are untouched.
    expect(model.estimate(1, 0.95)).toBeCloseTo(0.21, 12);
  });

  it('is never lower at a higher confidence, whatever the samples say', () => {
    const model = new ChildAcceptance('path-prob');
    for (let i = 0; i < 100; i++) {
      model.record(1, 0.05, i < 80); // low confidence, often taken
      model.record(1, 0.5, i < 20); // high confidence, rarely
    }
    const low = model.estimate(1, 0.05);
    const high = model.estimate(1, 0.5);
    expect(high).toBeGreaterThanOrEqual(low);
    for (let b = 1; b < CONFIDENCE_EDGES.length; b++) {
      expect(model.estimate(1, CONFIDENCE_EDGES[b])).toBeGreaterThanOrEqual(model.estimate(1, CONFIDENCE_EDGES[b - 1]));
    }
  });

  it('takes its samples from a verified tree: verified nodes whose parent was accepted, labelled by their own acceptance', () => {
    const tree = new DraftTree('r', 1);
    candidates(tree, 0, [0.7, 0.25, 0.05], 0);
    const a = tree.addChild(0, 0); // accepted
    const b = tree.addChild(0, 1); // verified, rejected
    tree.addChild(0, 2); // drafted, not verified: no sample
    candidates(tree, a, [0.95, 0.05], 1);
    const c = tree.addChild(a, 0); // verified, rejected (its parent was accepted)
    candidates(tree, b, [0.8, 0.2], 2);
    const d = tree.addChild(b, 0); // verified, its parent rejected: no sample
    for (const id of [a, b, c, d]) tree.verify(id);
    const model = new ChildAcceptance('path-prob');
    model.observe(tree, [a]);
    expect(model.samples).toBe(3);
    const counts = model.snapshot();
    expect(counts.seen[0][confidenceBin(0.7)]).toBe(1);
    expect(counts.accepted[0][confidenceBin(0.7)]).toBe(1);
    expect(counts.seen[1][confidenceBin(0.25)]).toBe(1);
    expect(counts.accepted[1][confidenceBin(0.25)]).toBe(0);
    expect(counts.seen[0][confidenceBin(0.95)]).toBe(1);
    expect(counts.accepted[0][confidenceBin(0.95)]).toBe(0);
  });

  it('starts from counts it is given, copies them, and refuses counts of another shape', () => {
    const start = emptyChildCounts();
    start.seen[0][9] = 50;
    start.accepted[0][9] = 50;
    const model = new ChildAcceptance('path-prob', start);
    model.record(0, 0.95, false);
    expect(start.seen[0][9]).toBe(50);
    expect(model.snapshot().seen[0][9]).toBe(51);
    expect(() => new ChildAcceptance('path-prob', { seen: [[1]], accepted: [[1]] })).toThrow(/rank groups/);
  });
});

describe('the scheduler values nodes by the measured conditional acceptance and learns from every step', () => {
  // Near-tie at the root (0.5 and 0.45), and a clear chain under the top candidate.
  const table = [{ id: 'A', probs: [[0.5, 0.45, 0.05], [0.9, 0.05, 0.05], [0.9, 0.05]] }];
  const shape = { depth: 3, topk: 3, tokens: 5 };

  it('a share of 2 is a chain while the top root is taken as the prior says, and both roots once the run has seen it rejected', () => {
    const policy = new EchoPolicy({ batch: 1, kmax: 3, shape, taus: {}, childAcceptance: emptyChildCounts() });
    const first = runTableStep(policy, 3, table);
    // Rank prior: the chain's second node (0.6 · 0.6) beats the runner-up (0.21).
    expect(first.widths[0]).toEqual([1, 1]);
    // Steps where the target rejects the root's top candidate every time.
    for (let step = 0; step < 40; step++) {
      const out = runTableStep(policy, 3, table);
      policy.afterVerify(out.ctx, [[]]);
    }
    expect(policy.children!.samples).toBeGreaterThanOrEqual(40);
    expect(runTableStep(policy, 3, table).widths[0]).toEqual([2]);
  });
});

describe('the profile keeps the warm-up\'s conditional acceptance samples', () => {
  const depth = (d: number) => ({ depth: d, accepted: 8, rejected: 8, auc: 0.8, threshold: { tau: 0.3, alternative: 0.5, j: 0.5, truePositiveRate: 0.75, falsePositiveRate: 0.25 }, sweetSpot: true });

  it('round-trips them to the policy options, and refuses counts of another shape', () => {
    const children = emptyChildCounts();
    children.seen[0][9] = 12;
    children.accepted[0][9] = 11;
    const profile = parseProfile(JSON.parse(JSON.stringify(profileOf([depth(0)], { children }))));
    expect(profileGates(profile).childAcceptance).toEqual(children);
    // Profiles from before it have none: the run starts from the rank prior.
    expect(profileGates(profileOf([depth(0)])).childAcceptance).toBeUndefined();
    const bad = JSON.parse(JSON.stringify(profileOf([depth(0)], { children })));
    bad.children.seen = [[1]];
    expect(() => parseProfile(bad, 'p.json')).toThrow(/p\.json: not a valid ECHO profile: children/);
  });
});
