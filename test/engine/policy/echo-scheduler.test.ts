import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DddPolicy } from '../../../src/engine/policy/ddd';
import { DensePolicy } from '../../../src/engine/policy/dense';
import { EchoPolicy } from '../../../src/engine/policy/echo';
import { bestRootTokens, ElasticScheduler, PROBE_REQUESTS, REFRESH_STEPS } from '../../../src/engine/policy/echo-scheduler';
import { baseQuota } from '../../../src/engine/policy/warmup-tree';
import { FixedPolicy } from '../../../src/engine/policy/fixed';
import { StaticPolicy } from '../../../src/engine/policy/static';
import { confident, grantsOf, runTableStep, unsure, type TableRequest } from './echo-harness';
import type { PolicyOptions } from '../../../src/engine/policy/types';
import { CONFIDENCE_EDGES, emptyChildCounts, RANK_GROUPS, type ChildCounts } from '../../../src/engine/calibrate/child-acceptance';

/** The paper's high-load shape (depth 3, top-k 3, 5 tokens), which small hand-made tables fit. */
const HIGH_LOAD = { depth: 3, topk: 3, tokens: 5 };

/** Warm-up counts whose estimates are `rate(rank, confidence)` (1,000 samples per bin: the priors do not move them). */
function measuredChildren(rate: (rank: number, confidence: number) => number): ChildCounts {
  const counts = emptyChildCounts();
  for (let g = 0; g < RANK_GROUPS; g++) {
    for (let b = 0; b < CONFIDENCE_EDGES.length; b++) {
      counts.seen[g][b] = 1000;
      counts.accepted[g][b] = Math.round(1000 * rate(g, CONFIDENCE_EDGES[b]));
    }
  }
  return counts;
}

function echo(options: Partial<PolicyOptions> & { kmax: number; batch: number }): EchoPolicy {
  return new EchoPolicy(options);
}

describe('baseQuota', () => {
  it('spends a share on depth first, then widens the shallowest layers', () => {
    expect(baseQuota({ depth: 3, topk: 3, tokens: 5 }, 5, 6)).toEqual([3, 1, 1]);
    expect(baseQuota({ depth: 3, topk: 3, tokens: 5 }, 2, 6)).toEqual([1, 1]);
    expect(baseQuota({ depth: 8, topk: 10, tokens: 60 }, 60, 11)).toEqual([10, 10, 10, 10, 10, 8, 1, 1]);
    expect(baseQuota({ depth: 8, topk: 10, tokens: 60 }, 0, 11)).toEqual([]);
  });
});

describe('bestRootTokens', () => {
  it("bounds n tokens by the batch's best roots, each good for a chain of its own value", () => {
    // Two bins of equal mass: of 4 roots, 2 are accepted 90 % of the time and 2 are 20 %.
    expect(bestRootTokens([0.2, 0.9], 4, 1)(3)).toBeCloseTo(2 * 0.9 + 0.2);
    expect(bestRootTokens([0.2, 0.9], 4, 3)(3)).toBeCloseTo(3 * 0.9);
    expect(bestRootTokens([0.2, 0.9], 4, 1)(10)).toBeCloseTo(2 * 0.9 + 2 * 0.2);
  });
});

/** A probe's step: PROBE_REQUESTS requests drafted their root layer, every other one waited ('not-probed'). */
function probedOnly(out: ReturnType<typeof runTableStep>): boolean {
  const drafted = out.draftedDepths.filter((d) => d[0] === 0).length;
  const waited = out.requests.filter((r) => r.stop?.reason === 'not-probed').length;
  return drafted === PROBE_REQUESTS && waited === out.requests.length - PROBE_REQUESTS;
}

describe('ECHO elastic scheduler on hand-made confidence tables', () => {
  it('Priority 1 before 2: a confident request takes the pool for depth while it can deepen, leaving no width', () => {
    // Shares buy [1, 1] each; slack 2; B fails the root gate and releases 2. A can go 4 layers
    // past its base, which uses all 4 tokens of the pool.
    const policy = echo({ batch: 2, kmax: 8, shape: { depth: 2, topk: 2, tokens: 2 }, taus: { '0': 0.5 }, maxDepth: 6, maxWidth: 3 });
    const out = runTableStep(policy, 8, [confident('A'), unsure('B')]);
    const [a, b] = out.requests;
    expect(out.widths[0]).toEqual([1, 1, 1, 1, 1, 1]);
    expect(grantsOf(a, 'depth')).toHaveLength(4);
    expect(b.tree.verifiedCount).toBe(0);
    expect(policy.schedules()[1]).toMatchObject({ stop: 'truncated', truncatedAt: 0 });
    expect(out.verifiedTokens).toBe(8);
  });

  it('width only when nothing can deepen: once A reaches max depth, the rest widens B at its truncation depth', () => {
    // The paper's rules alone (cuts: 'bare'): A's two extra layers leave the pool 2 tokens that
    // no depth can use, which a priced cut would leave B deepening with.
    const policy = echo({ batch: 2, kmax: 8, shape: { depth: 2, topk: 2, tokens: 2 }, taus: { '0': 0.5 }, maxDepth: 4, maxWidth: 3, cuts: 'bare' as const });
    const out = runTableStep(policy, 8, [confident('A'), unsure('B')]);
    const [a, b] = out.requests;
    expect(out.widths[0]).toEqual([1, 1, 1, 1]);
    expect(grantsOf(a, 'depth')).toHaveLength(2);
    // B's root layer, its best two candidates, both as width.
    expect(out.widths[1]).toEqual([2]);
    expect(grantsOf(b, 'width')).toHaveLength(2);
    expect(b.tree.rank.slice(1)).toEqual([0, 1]);
    expect(out.verifiedTokens).toBe(8);
  });

  it('a request near its end drafts no layer it cannot emit, and spends its share on width instead', () => {
    // A can emit 3 more tokens: layers 0 and 1 (two draft tokens and the bonus). Its share of 5
    // goes to its five most likely nodes within those two layers: 0.95 and 0.025 at the root,
    // 0.9025, 0.02375 and 0.02375 below them (the root's third candidate, 0.0125, loses).
    const policy = echo({ batch: 1, kmax: 6, shape: { depth: 3, topk: 3, tokens: 5 }, taus: {}, maxDepth: 6 });
    const out = runTableStep(policy, 6, [{ ...confident('A'), remaining: 3 }]);
    expect(out.draftedDepths[0]).toEqual([0, 1]);
    expect(out.widths[0]).toEqual([2, 3]);
    expect(policy.schedules()[0]).toMatchObject({ share: 5, granted: 5, stop: 'max-depth' });
  });

  it('high load: a truncated request releases its share and confident requests deepen with it', () => {
    // Four requests, K_max 12: each share buys [1, 1] and nothing is left over. C and D fail
    // the root gate; their four tokens become two extra layers for A and for B.
    const policy = echo({ batch: 4, kmax: 12, shape: HIGH_LOAD, taus: { '0': 0.5 }, maxDepth: 6 });
    const out = runTableStep(policy, 12, [confident('A'), confident('B'), unsure('C'), unsure('D')]);
    const [a, b, c, d] = out.requests;
    expect(out.widths[0]).toEqual([1, 1, 1, 1]);
    expect(out.widths[1]).toEqual([1, 1, 1, 1]);
    expect(c.tree.verifiedCount + d.tree.verifiedCount).toBe(0);
    for (const r of [a, b]) {
      const paidBy = grantsOf(r, 'depth').map((id) => r.tree.paidBy[id]);
      expect(paidBy).toEqual(['C', 'D']);
      expect(grantsOf(r, 'base')).toHaveLength(2);
    }
    expect(out.ctx.transfers).toEqual(
      expect.arrayContaining([
        { from: 'C', to: 'A', tokens: 1 },
        { from: 'C', to: 'B', tokens: 1 },
        { from: 'D', to: 'A', tokens: 1 },
        { from: 'D', to: 'B', tokens: 1 },
      ]),
    );
    expect(out.verifiedTokens).toBe(12);
  });

  it('high load: the tokens of K_max that do not split evenly go to the most confident requests', () => {
    // Four requests, K_max 6: the roots take 4, and the 2 draft tokens cannot be split evenly.
    // Static-style shares would give them to A and B (the first two); ECHO grants them to the
    // batch's most valuable nodes after drafting every root: D's root (0.9) and the layer under
    // it (0.81), both worth more than B's root (0.7).
    const policy = echo({ batch: 4, kmax: 6, shape: HIGH_LOAD, taus: {}, maxDepth: 6 });
    const out = runTableStep(policy, 6, [unsure('A'), confident('B', 0.7), unsure('C'), confident('D', 0.9)]);
    expect(out.widths).toEqual([[], [], [], [1, 1]]);
    // With B surer than D's second layer (0.85 > 0.9² = 0.81), the two tokens go to B's root and D's.
    const surer = runTableStep(echo({ batch: 4, kmax: 6, shape: HIGH_LOAD, taus: {}, maxDepth: 6 }), 6, [unsure('A'), confident('B', 0.85), unsure('C'), confident('D', 0.9)]);
    expect(surer.widths).toEqual([[], [1], [], [1]]);
    expect(out.verifiedTokens).toBe(6);
    // With one token left, the most confident (D) wins it.
    const one = runTableStep(echo({ batch: 4, kmax: 5, shape: HIGH_LOAD, taus: {}, maxDepth: 6 }), 5, [unsure('A'), confident('B', 0.7), unsure('C'), confident('D', 0.9)]);
    expect(one.widths).toEqual([[], [], [], [1]]);
  });

  it('path-margin ranks and gates by how clearly the draft prefers its token, not by the token\'s probability', () => {
    // A's root token has the larger probability (0.30 vs 0.20) but a near-tie runner-up (0.29);
    // B's stands alone (0.01). One draft token to grant: path-prob gives it to A, path-margin to B.
    const table: TableRequest[] = [
      { id: 'A', probs: [[0.3, 0.29, 0.01]] },
      { id: 'B', probs: [[0.2, 0.01, 0.01]] },
    ];
    const byProb = runTableStep(echo({ batch: 2, kmax: 3, shape: HIGH_LOAD, taus: {}, maxDepth: 4 }), 3, table);
    expect(byProb.widths).toEqual([[1], []]);
    const marginPolicy = echo({ batch: 2, kmax: 3, shape: HIGH_LOAD, taus: {}, maxDepth: 4, confidence: 'path-margin' });
    const byMargin = runTableStep(marginPolicy, 3, table);
    expect(byMargin.widths).toEqual([[], [1]]);
    // The step reports c_{i,d} in the signal the policy ranks with (A's layer stayed empty).
    expect(byMargin.requests[1].confidences[0]).toBeCloseTo(0.2 / 0.21, 5);
    expect(byProb.requests[0].confidences[0]).toBeCloseTo(0.3, 5);
    // A gate at 0.6 truncates A (0.51) and passes B (0.95) under the margin; under path-prob it
    // would truncate both.
    const gated = runTableStep(echo({ batch: 2, kmax: 6, shape: HIGH_LOAD, taus: { '0': 0.6 }, maxDepth: 4, confidence: 'path-margin' }), 6, table);
    expect(gated.requests.map((r) => r.gates.map((g) => g.pass))).toEqual([[false], [true]]);
    expect(gated.requests[1].gates[0].confidence).toBeCloseTo(0.2 / 0.21, 5);
  });

  it('path-margin keeps a runner-up candidate per node even when the shape has top-k 1', () => {
    expect(echo({ batch: 1, kmax: 4, shape: { depth: 3, topk: 1, tokens: 3 }, maxWidth: 1, taus: {} }).candidatesPerNode).toBe(1);
    expect(echo({ batch: 1, kmax: 4, shape: { depth: 3, topk: 1, tokens: 3 }, maxWidth: 1, taus: {}, confidence: 'path-margin' }).candidatesPerNode).toBe(2);
  });

  it('low load: a truncated request gets its released budget back as width at its truncation depth', () => {
    const policy = echo({ batch: 1, kmax: 81, taus: { '0': 0.2 }, cuts: 'bare' as const });
    const out = runTableStep(policy, 81, [unsure('solo')]);
    const [solo] = out.requests;
    expect(out.widths[0]).toEqual([10]); // the low-load shape's top-k, as max width
    expect(grantsOf(solo, 'width')).toHaveLength(10);
    expect(out.ctx.transfers).toEqual([]);
    expect(solo.gates).toEqual([{ depth: 0, confidence: expect.closeTo(0.15, 6), tau: 0.2, pass: false }]);
  });

  it('a priced cut: alone in the batch a failed gate cuts nothing, since nobody else could spend what it frees', () => {
    const policy = echo({ batch: 1, kmax: 81, taus: { '0': 0.2 } });
    const out = runTableStep(policy, 81, [unsure('solo')]);
    const [solo] = out.requests;
    expect(solo.gates).toEqual([{ depth: 0, confidence: expect.closeTo(0.15, 6), tau: 0.2, pass: false, waived: true }]);
    expect(policy.schedules()[0].truncatedAt).toBe(-1);
    expect(out.widths[0].length).toBeGreaterThan(1); // it went on deepening past the failed gate
    // The bare rule truncates the same request at the root.
    const bare = echo({ batch: 1, kmax: 81, taus: { '0': 0.2 }, cuts: 'bare' as const });
    runTableStep(bare, 81, [unsure('solo')]);
    expect(bare.schedules()[0].truncatedAt).toBe(0);
  });

  it('a priced cut: a failed request is cut when confident requests can use its budget, and kept when they cannot', () => {
    // B fails the root gate (0.45 ≤ 0.5). With K_max 8, A's next layers (0.95 each without a value
    // model) would take every token B frees, so B is cut and A deepens with B's share.
    const b = { id: 'B', probs: Array.from({ length: 12 }, () => [0.45, 0.3, 0.1]) };
    const tight = echo({ batch: 2, kmax: 8, shape: { depth: 2, topk: 2, tokens: 2 }, taus: { '0': 0.5 }, maxDepth: 6 });
    const cut = runTableStep(tight, 8, [confident('A'), b]);
    expect(cut.requests[1].gates[0]).toMatchObject({ pass: false });
    expect(cut.requests[1].gates[0].waived).toBeUndefined();
    expect(tight.schedules()[1].truncatedAt).toBe(0);
    expect(grantsOf(cut.requests[0], 'depth').map((id) => cut.requests[0].tree.paidBy[id])).toContain('B');
    // With K_max 40 and A able to go only 3 layers deep, what B frees would buy nothing better
    // than B's own root (0.45): the cut is waived and B keeps deepening.
    const loose = echo({ batch: 2, kmax: 40, shape: { depth: 2, topk: 2, tokens: 2 }, taus: { '0': 0.5 }, maxDepth: 3 });
    const kept = runTableStep(loose, 40, [confident('A'), b]);
    expect(kept.requests[1].gates[0]).toMatchObject({ pass: false, waived: true });
    expect(loose.schedules()[1].truncatedAt).toBe(-1);
    expect(kept.widths[1].length).toBeGreaterThan(1);
  });

  it('deepens the most confident request first while the budget lasts', () => {
    // Shares buy one node each; D's release pays for one more layer, which goes to A (more
    // confident) even though C comes first in the batch.
    const policy = echo({ batch: 3, kmax: 6, shape: { depth: 1, topk: 1, tokens: 1 }, taus: { '0': 0.5 }, maxDepth: 3 });
    const out = runTableStep(policy, 6, [confident('C', 0.8), confident('A', 0.95), unsure('D')]);
    expect(out.widths.map((w) => w.length)).toEqual([1, 2, 0]);
    expect(out.requests[1].tree.paidBy[2]).toBe('D');
    expect(policy.schedules()[0].stop).toBe('no-budget');
  });

  it('once no request waits, deepens the request with the most steps left, not the most confident', () => {
    // Shares buy one node each; the pool pays one more layer. While requests wait, it goes to A
    // (more confident); once none wait, to B, whose 60 tokens left end the run long after A's 8.
    const table = () => [{ ...confident('A', 0.95), remaining: 8 }, { ...confident('B', 0.85), remaining: 60 }];
    const shape = { depth: 1, topk: 1, tokens: 1 };
    const deepened = (waiting: number) => {
      const policy = echo({ batch: 2, kmax: 5, shape, taus: { '0': 0.01 }, maxDepth: 3 });
      return runTableStep(policy, 5, table(), { waiting }).widths.map((w) => w.length);
    };
    expect(deepened(1)).toEqual([2, 1]);
    expect(deepened(0)).toEqual([1, 2]);
    // ddd keeps its published rule: no reallocation, so no weights either.
    const ddd = new DddPolicy({ batch: 2, kmax: 5, shape: { depth: 1, topk: 1, tokens: 1 }, maxDepth: 3, dddThreshold: Math.log(0.01) });
    const { requests } = runTableStep(ddd, 5, table(), { waiting: 0 });
    expect(requests.map((r) => r.drainWeight)).toEqual([undefined, undefined]);
  });

  it("once no request waits, weighs each request's steps left by the tokens it has emitted per step", () => {
    // Both have 30 tokens left; A emitted 4 a step so far, B 1: B needs the most steps, and the
    // pool deepens B though A is as confident and comes first in the batch.
    const policy = echo({ batch: 2, kmax: 5, shape: { depth: 1, topk: 1, tokens: 1 }, taus: { '0': 0.01 }, maxDepth: 3 });
    const table = [{ ...confident('A', 0.9), remaining: 30 }, { ...confident('B', 0.9), remaining: 30 }];
    for (let step = 0; step < 3; step++) {
      const { ctx } = runTableStep(policy, 5, table, { step, waiting: 1 });
      policy.afterVerify(ctx, [[1, 2, 3], []]);
    }
    expect(runTableStep(policy, 5, table, { step: 3, waiting: 1 }).widths.map((w) => w.length)).toEqual([2, 1]);
    expect(runTableStep(policy, 5, table, { step: 4, waiting: 0 }).widths.map((w) => w.length)).toEqual([1, 2]);
  });

  it('gates only at D_sig: a weak layer between sweet spots is not checked', () => {
    // c_0 = 0.9, c_1 = 0.27 (weak, ungated), c_2 = 0.243 (> τ_2 = 0.2).
    const table: TableRequest[] = [{ id: 'A', probs: [[0.9, 0.05], [0.3, 0.2], [0.9, 0.05]] }];
    const options = { batch: 1, kmax: 4, shape: { depth: 3, topk: 1, tokens: 3 }, taus: { '0': 0.5, '2': 0.2 }, maxDepth: 3, cuts: 'bare' as const };
    const sparse = runTableStep(new EchoPolicy(options), 4, table);
    expect(sparse.requests[0].gates.map((g) => g.depth)).toEqual([0, 2]);
    expect(sparse.requests[0].gates.every((g) => g.pass)).toBe(true);
    expect(sparse.widths[0]).toEqual([1, 1, 1]);

    // The same table under dense gating: depth 1 inherits τ_0 = 0.5 and the request stops there.
    const dense = runTableStep(new DensePolicy(options), 4, table);
    expect(dense.requests[0].gates.map((g) => [g.depth, g.pass])).toEqual([
      [0, true],
      [1, false],
    ]);
    expect(dense.widths[0][0]).toBe(1);
    expect(dense.widths[0].length).toBe(2); // truncated at depth 1, then widened there
  });

  it('fixed uses one τ (the mean of the τ_d unless given) at the same sweet spots', () => {
    const table: TableRequest[] = [{ id: 'A', probs: [[0.9, 0.05], [0.9, 0.05], [0.4, 0.3]] }];
    const options = { batch: 1, kmax: 4, shape: { depth: 3, topk: 1, tokens: 3 }, taus: { '0': 0.2, '2': 0.3 }, maxDepth: 3 };
    // c_2 = 0.324: passes τ_2 = 0.3 in echo, fails fixed τ = 0.5 given explicitly.
    expect(runTableStep(new EchoPolicy(options), 4, table).requests[0].gates.map((g) => g.pass)).toEqual([true, true]);
    const fixed = runTableStep(new FixedPolicy({ ...options, tau: 0.5 }), 4, table);
    expect(fixed.requests[0].gates.map((g) => [g.depth, g.tau, g.pass])).toEqual([
      [0, 0.5, true],
      [2, 0.5, false],
    ]);
    expect(new FixedPolicy(options).rules.gate).toEqual({ signal: 'best-path', taus: new Map([[0, 0.25], [2, 0.25]]) });
  });

  it('ddd stops deepening where the beam mass falls below the threshold, and never widens', () => {
    // Beam (top-2) mass: depth 0: 0.6 + 0.3; depth 1: 0.54 + 0.27 + …; drops under 0.25 at depth 3.
    const table: TableRequest[] = [{ id: 'A', probs: [[0.6, 0.3], [0.9, 0.05], [0.6, 0.2], [0.3, 0.2]] }];
    const policy = new DddPolicy({ batch: 1, kmax: 20, shape: { depth: 2, topk: 2, tokens: 4 }, maxDepth: 6, dddThreshold: Math.log(0.25) });
    const out = runTableStep(policy, 20, table);
    const gates = out.requests[0].gates;
    expect(gates.map((g) => g.pass)).toEqual([true, true, true, false]);
    expect(gates[0].confidence).toBeCloseTo(0.9, 5);
    expect(out.widths[0].length).toBe(3);
    expect(grantsOf(out.requests[0], 'width')).toHaveLength(0);
  });

  it('at a gated depth expands only the nodes whose children the budget could still reach', () => {
    // Draft budget K_max − B = 2: the root's runner-ups (0.025, 0.0125) cannot have a child among
    // the best two, so the gated layer 1 drafts from the top node alone (one row, not the beam's 3).
    const policy = echo({ batch: 1, kmax: 3, shape: { depth: 3, topk: 3, tokens: 2 }, taus: { '1': 0.01 }, maxDepth: 4 });
    const out = runTableStep(policy, 3, [confident('A')]);
    expect(out.draftRows[0].slice(0, 2)).toEqual([1, 1]);
    expect(out.requests[0].gates.map((g) => g.depth)).toEqual([1]);
    expect(out.verifiedTokens).toBe(3);
  });

  it('expects each expanded node to add a child, so a layer does not expand every node while few are drafted', () => {
    // Draft budget 5, four root candidates (values 0.73, then 0.09 each). Before anything deeper is
    // drafted, the bar is open (4 nodes < 5); once the top node is expanded it is expected to add a
    // child worth 0.73 × 0.8, which fills the five best, and no runner-up's child (≤ 0.09 × 0.8) can
    // beat the fifth (0.09): layer 1 drafts one row, not four.
    const childAcceptance = measuredChildren((rank) => (rank === 0 ? 0.8 : 0.1));
    const table: TableRequest[] = [{ id: 'A', probs: Array.from({ length: 6 }, () => [0.6, 0.2, 0.1, 0.05]) }];
    const policy = echo({ batch: 1, kmax: 6, shape: { depth: 3, topk: 4, tokens: 5 }, taus: {}, maxDepth: 4, childAcceptance });
    const out = runTableStep(policy, 6, table);
    expect(out.draftRows[0].slice(0, 2)).toEqual([1, 1]);
    expect(out.verifiedTokens).toBe(6);
  });

  it('expands no node holding an end-of-sequence token, and lets its expected children raise no bar', () => {
    // As above, but the top root candidate (token 0) ends the sequence: nothing below it can be
    // emitted, so layer 1 drafts from the runner-ups instead of from nothing.
    const childAcceptance = measuredChildren((rank) => (rank === 0 ? 0.8 : 0.1));
    const table: TableRequest[] = [{ id: 'A', probs: Array.from({ length: 6 }, () => [0.6, 0.2, 0.1, 0.05]) }];
    const policy = echo({ batch: 1, kmax: 6, shape: { depth: 3, topk: 4, tokens: 5 }, taus: {}, maxDepth: 4, childAcceptance });
    const out = runTableStep(policy, 6, table, { ends: new Set([0]) });
    expect(out.draftRows[0][1]).toBeGreaterThan(0);
    const tree = out.requests[0].tree;
    for (let id = 1; id < tree.size; id++) if (tree.depth[id] === 1) expect(tree.token[tree.parent[id]]).not.toBe(0);
  });

  it('keeps out of the tree the candidates no grant could reach, as candidates its parent can still be widened with', () => {
    // Draft budget 5 as above. Layer 0's four candidates all enter (fewer than 5 are at hand); below
    // it each expanded node's runner-ups fall under the fifth best drafted value, so only its top
    // candidate becomes a node. The grants are the five best all the same.
    const childAcceptance = measuredChildren((rank) => (rank === 0 ? 0.8 : 0.1));
    const table: TableRequest[] = [{ id: 'A', probs: Array.from({ length: 6 }, () => [0.6, 0.2, 0.1, 0.05]) }];
    const policy = echo({ batch: 1, kmax: 6, shape: { depth: 3, topk: 4, tokens: 5 }, taus: {}, maxDepth: 4, childAcceptance });
    const out = runTableStep(policy, 6, table);
    const tree = out.requests[0].tree;
    expect(tree.nodesAtDepth(0)).toHaveLength(4);
    const [deeper] = tree.nodesAtDepth(1);
    expect(tree.nodesAtDepth(1)).toHaveLength(1);
    expect(tree.rank[deeper]).toBe(0);
    const cands = tree.candidates[tree.parent[deeper]]!;
    expect(cands.tokens).toHaveLength(4);
    expect(Array.from(cands.childId).slice(1)).toEqual([-1, -1, -1]);
    expect(out.widths[0]).toEqual([2, 1, 1, 1]);
    // With every candidate a node the tree held 17 (the root and 4 a layer) for the same grants.
    expect(tree.size).toBe(8);
    expect(out.verifiedTokens).toBe(6);
  });

  it('never drafts a layer nobody can pay for', () => {
    // One share of [1], no slack, no gate that could release: the request stops after depth 0.
    const policy = echo({ batch: 2, kmax: 4, shape: { depth: 1, topk: 1, tokens: 1 }, taus: { '0': 0.01 }, maxDepth: 5 });
    const out = runTableStep(policy, 4, [confident('A'), confident('B')]);
    expect(out.draftedDepths).toEqual([[0], [0]]);
    expect(policy.schedules().map((s) => s.stop)).toEqual(['no-budget', 'no-budget']);
  });

  it('under a verification cost, grants only the tokens whose expected acceptance pays for their time', () => {
    // Knee 4 = the roots; each token past it costs 5 % of a one-token forward, so a node must be
    // accepted with probability above ~0.2 to raise tokens per unit of time. The confident
    // requests deepen (their path confidence 0.95^d stays above it for a while); the unsure ones
    // (0.15) get nothing, and K_max is not filled.
    const cost = { knee: 4, gamma: 0.05 };
    const table = [confident('A'), unsure('B'), confident('C', 0.9), unsure('D')];
    const policy = echo({ batch: 4, kmax: 40, taus: {}, maxDepth: 12, verifyCost: cost });
    const out = runTableStep(policy, 40, table);
    // A (0.95 per layer) still pays at its 12th layer (0.95^12 ≈ 0.54 against a break-even of
    // ~0.44 there) and stops at the max depth. C's 8th layer (0.9^8 ≈ 0.430) falls just short of
    // the break-even of a step at 19 tokens, (1.8 / 1.75 − 1) × 15.1 ≈ 0.432, so C keeps 7.
    expect(out.widths).toEqual([Array(12).fill(1), [], Array(7).fill(1), []]);
    expect(policy.schedules().map((s) => s.stop)).toEqual(['max-depth', 'not-worth-its-cost', 'not-worth-its-cost', 'not-worth-its-cost']);
    expect(out.verifiedTokens).toBe(23);
  });

  it('under a verification cost too high for even a sure token, drafts nothing', () => {
    // Knee 2 and 4 roots: T(4) = 1 + 0.6 · 2 = 2.2 and a fifth token makes it 2.8 (+27 %) for at
    // most one more output token (+25 %), so no layer is worth drafting, not even the root's.
    const policy = echo({ batch: 4, kmax: 40, taus: {}, maxDepth: 12, verifyCost: { knee: 2, gamma: 0.6 } });
    const out = runTableStep(policy, 40, [confident('A', 0.99), confident('B', 0.99), confident('C'), unsure('D')]);
    expect(out.draftedDepths).toEqual([[], [], [], []]);
    expect(out.verifiedTokens).toBe(4);
    expect(policy.schedules().every((s) => s.stop === 'not-worth-its-cost')).toBe(true);
    // A roofline fit has γ = 1 / knee: past the knee a sure token exactly pays for its
    // verification, so the cost of drafting its row decides — and forbids.
    const tie = echo({ batch: 8, kmax: 40, taus: {}, maxDepth: 12, verifyCost: { knee: 4, gamma: 0.25, draftRow: 0.01 } });
    const table = Array.from({ length: 8 }, (_, i) => confident(`r${i}`, 0.99));
    expect(runTableStep(tie, 40, table).verifiedTokens).toBe(8);
    // Below the knee the same draft cost is worth paying.
    const room = echo({ batch: 8, kmax: 40, taus: {}, maxDepth: 12, verifyCost: { knee: 40, gamma: 0.25, draftRow: 0.01 } });
    expect(runTableStep(room, 40, table).verifiedTokens).toBe(40);
  });

  it('under a verification cost, changes nothing while K_max stays below the knee', () => {
    const table = [confident('A'), unsure('B', 6), confident('C', 0.8)];
    const plain = runTableStep(echo({ batch: 3, kmax: 24, taus: { '0': 0.5 }, maxDepth: 8 }), 24, table);
    const priced = runTableStep(echo({ batch: 3, kmax: 24, taus: { '0': 0.5 }, maxDepth: 8, verifyCost: { knee: 24, gamma: 0.5 } }), 24, table);
    expect(priced.widths).toEqual(plain.widths);
    expect(priced.verifiedTokens).toBe(24);
  });

  it('priced by measured curves, pays for tokens below the fitted knee when the curve says they cost', () => {
    // One request, K_max 16. The fit's knee is 16, so under it every token is free and K_max is
    // filled. The curve measured on the same machine rises from the first token: 16 tokens cost
    // twice one. Priced by it, a token must be accepted often enough to repay its ~6.7 % of T_ar.
    const table = [confident('A', 0.7)];
    const fit = runTableStep(echo({ batch: 1, kmax: 16, taus: {}, maxDepth: 16, verifyCost: { knee: 16, gamma: 0.06 } }), 16, table);
    expect(fit.verifiedTokens).toBe(16);
    const linear = Array.from({ length: 6 }, (_, i) => ({ tokens: 2 ** i, ms: 10 + (2 ** i - 1) * (10 / 15) }));
    const curves = { target: linear, draft: [{ tokens: 1, ms: 0.1 }, { tokens: 64, ms: 0.2 }] };
    const policy = echo({ batch: 1, kmax: 16, taus: {}, maxDepth: 16, verifyCost: { knee: 16, gamma: 0.06, curves } });
    const priced = runTableStep(policy, 16, table);
    // A token costs 1/15 of T_ar on a step of about 1.4 T_ar that expects about 3.1 tokens, so it
    // must be accepted with probability above ~0.147: 0.7^d does for five layers (0.168), and of
    // the runner-ups only the root's (0.15). Six draft tokens and the root, where the fit verified 16.
    expect(priced.widths).toEqual([[2, 1, 1, 1, 1]]);
    expect(priced.verifiedTokens).toBe(7);
    // Drafting stops where no child could pay: a node of 0.168 may still have a child worth that
    // much (no value model here, so a child's ceiling is its parent's value), one of 0.118 cannot.
    expect(priced.draftedDepths).toEqual([[0, 1, 2, 3, 4, 5]]);
    expect(policy.schedules()[0].stop).toBe('not-worth-its-cost');
  });

  it("priced by curves, pays for the draft's weights the target's forward left cold, forward by forward", () => {
    const linear = Array.from({ length: 6 }, (_, i) => ({ tokens: 2 ** i, ms: 10 + (2 ** i - 1) * (10 / 15) }));
    const draft = [{ tokens: 1, ms: 0.1 }, { tokens: 64, ms: 0.2 }];
    const priced = (draftAfterTargetMs: number[]) => {
      const policy = echo({ batch: 1, kmax: 16, taus: {}, maxDepth: 16, verifyCost: { knee: 16, gamma: 0.06, curves: { target: linear, draft, draftAfterTargetMs } } });
      return { policy, out: runTableStep(policy, 16, [confident('A', 0.7)]) };
    };
    // Warm, as the test above: six layers drafted. Cold, the sixth forward costs 1.5 ms more (0.15
    // of T_ar) and the least a layer there could buy (0.168 of a token on a ~1.4 T_ar step) no
    // longer repays it: five layers.
    expect(priced([]).out.draftedDepths).toEqual([[0, 1, 2, 3, 4, 5]]);
    expect(priced([0, 0, 0, 0, 0, 1.5]).out.draftedDepths).toEqual([[0, 1, 2, 3, 4]]);
    // With no calibration the root's bound is a sure chain: 15 tokens on a step of about 2 T_ar,
    // which repays a root forward 3 T_ar dearer; and in that longer step a token's share of the
    // time is smaller, so two more layers pay. One 20 T_ar dearer cannot be repaid: the step
    // decodes plainly.
    expect(priced([30]).out.draftedDepths).toEqual([[0, 1, 2, 3, 4, 5, 6, 7]]);
    const cold = priced([200]);
    expect(cold.out.draftedDepths).toEqual([[]]);
    expect(cold.out.verifiedTokens).toBe(1);
    expect(cold.policy.schedules()[0].stop).toBe('not-worth-its-cost');
  });

  it('priced by a curve that is not convex, grants past a step in it that the tokens after it repay', () => {
    // One request's forward on a CPU: 5 rows cost little more than one, the sixth 2.6 ms more
    // (a quarter of T_ar), and the next ten almost nothing. At 5 rows the next token (0.59 of
    // one) does not repay the jump alone, (4.1 + 0.59) / 4.1 < 13 / 10.4; with the ten after it,
    // 16 tokens expect about 8 on a step of 13.5 ms against 4.1 on 10.4, so all 16 pay.
    const bumpy = [
      { tokens: 1, ms: 10 },
      { tokens: 5, ms: 10.4 },
      { tokens: 6, ms: 13 },
      { tokens: 16, ms: 13.5 },
      { tokens: 32, ms: 30 },
    ];
    const draft = [{ tokens: 1, ms: 0.01 }, { tokens: 64, ms: 0.02 }];
    const priced = (target: typeof bumpy) => runTableStep(echo({ batch: 1, kmax: 16, taus: {}, maxDepth: 16, verifyCost: { knee: 16, gamma: 0.06, curves: { target, draft } } }), 16, [confident('A', 0.9)]);
    expect(priced(bumpy).verifiedTokens).toBe(16);
    // Where the ten after the step cost as much as the step, they do not repay it: the five before it.
    const steep = bumpy.map((p) => (p.tokens === 16 ? { tokens: 16, ms: 26 } : p));
    expect(priced(steep).verifiedTokens).toBe(5);
  });

  it('priced by curves timed at two contexts, grants what the step\'s own past makes worth it', () => {
    // The same curve at 64 rows of past; at 256 rows a one-token forward takes 20 % longer and
    // each further token three times as long (attention reads every row of the past per query).
    const base = Array.from({ length: 6 }, (_, i) => ({ tokens: 2 ** i, ms: 10 + (2 ** i - 1) * (10 / 15) }));
    const long = base.map((p) => ({ tokens: p.tokens, ms: 12 + (p.tokens - 1) * (30 / 15) }));
    const draft = [{ tokens: 1, ms: 0.1 }, { tokens: 64, ms: 0.2 }];
    const curves = { target: base, draft, context: 64, longer: [{ context: 256, target: long, draft }] };
    const policy = () => echo({ batch: 1, kmax: 16, taus: {}, maxDepth: 16, verifyCost: { knee: 16, gamma: 0.06, curves } });
    const table = [confident('A', 0.7)];
    // At or below the base context, and without a past: the 7 tokens of the one-context curve.
    for (const past of [undefined, 30, 64]) expect(runTableStep(policy(), 16, table, { past }).verifiedTokens).toBe(7);
    // At 256 rows a token costs 2 ms on a step of about 18 that expects about 2.5 tokens: only a
    // node accepted with probability above ~0.28 pays (0.7, 0.49, 0.34; not 0.24), so the root
    // and three layers.
    const late = runTableStep(policy(), 16, table, { past: 256 });
    expect(late.widths).toEqual([[1, 1, 1]]);
    expect(late.verifiedTokens).toBe(4);
    // Halfway, in between.
    const mid = runTableStep(policy(), 16, table, { past: 160 }).verifiedTokens;
    expect(mid).toBeGreaterThan(4);
    expect(mid).toBeLessThan(7);
  });

  describe('under a draft price', () => {
    // Measured acceptance: a layer whose confidence is under 0.5 is accepted 5 % of the time, one
    // above it 90 %, at every depth. A draft forward costs 5 % of a target forward.
    const acceptance = Array.from({ length: 8 }, () => ({ edges: [0, 0.5, 1], rates: [0.05, 0.9] }));
    // What a node is worth once its parent is taken: a top candidate the draft gives 0.6 or more is
    // taken 95 % of the time, one it gives less 5 %; a runner-up 2 %.
    const childAcceptance = measuredChildren((rank, confidence) => (rank === 0 && confidence >= 0.6 ? 0.95 : rank === 0 ? 0.05 : 0.02));
    const shape = { depth: 6, topk: 3, tokens: 7 };
    // Layer 1 of W has path confidence 0.9 · 0.5 = 0.45: its top node is worth 0.05 (0.9 · 0.05 /
    // 0.9), its runner-ups less, so its layer 2 could add at most 5 % of a token.
    const weak: TableRequest = { id: 'W', probs: [[0.9, 0.05, 0.03], [0.5, 0.02, 0.01], ...Array(10).fill([0.9, 0.05, 0.03])] };

    it('a chain whose next layer cannot pay for its forward stops there and spends its share on the layers it has', () => {
      // Layer 1's best path (0.45) is under 0.5: its top node is worth 0.05, its runner-ups share
      // the rest of their parent's 0.9 by rank (0.55 for the first). Layer 2 could add at most
      // 0.55 tokens (+18 % on the ~3 expected) for a forward of 0.3 (+21 % on 1.6).
      const policy = echo({ batch: 1, kmax: 8, shape, taus: {}, acceptance, childAcceptance, draftCost: 0.3 });
      const out = runTableStep(policy, 8, [weak]);
      expect(out.draftedDepths[0]).toEqual([0, 1]);
      // Its share (7) goes to the best-valued nodes of the two layers drafted, width included.
      expect(out.widths[0]).toEqual([3, 4]);
      expect(out.verifiedTokens).toBe(8);
      expect(policy.schedules()[0]).toMatchObject({ stop: 'not-worth-its-cost', truncatedAt: -1 });
      // The step event says why and where: layer 2 was the first it did not deepen into.
      expect(out.requests[0].stop).toEqual({ reason: 'not-worth-its-cost', depth: 2 });
      expect(out.ctx.requests[0].gates).toEqual([]);
    });

    it('a confident chain drafts on, and without measured acceptance or at draft cost 0 nothing is priced', () => {
      // C's chain is worth 0.9 a layer, its siblings 0.02: the share of 7 is a chain 7 deep.
      const sure = runTableStep(echo({ batch: 1, kmax: 8, shape, taus: {}, acceptance, childAcceptance, draftCost: 0.05 }), 8, [confident('C')]);
      expect(sure.widths[0]).toEqual(Array(7).fill(1));
      for (const options of [{}, { acceptance, draftCost: 0 }]) {
        const free = runTableStep(echo({ batch: 1, kmax: 8, shape, taus: {}, ...options }), 8, [weak]);
        expect(free.draftedDepths[0].length).toBeGreaterThan(2);
      }
    });

    it('many requests\' next nodes cannot all displace the same weakest node: a layer is priced by how much the best K_max − B rise', () => {
      // Three confident requests and a weak one, a draft budget of 4: the best four nodes are the
      // three confident roots (0.95) and the weak root (0.05). Layer 1 could add a 0.9025 under
      // each confident root, but only one of them fits in the best four: the layer adds 0.85
      // (+12 % on the 6.9 expected), not 3 × 0.85, against a forward of 0.3 (+23 % on 1.3).
      const weakRoot: TableRequest = { id: 'W', probs: [[0.3, 0.3, 0.3]] };
      const table = [confident('C1'), confident('C2'), confident('C3'), weakRoot];
      const out = runTableStep(echo({ batch: 4, kmax: 8, shape, taus: {}, acceptance, childAcceptance, draftCost: 0.3 }), 8, table);
      for (const i of [0, 1, 2]) {
        expect(out.draftedDepths[i]).toEqual([0]);
        expect(out.requests[i].stop).toEqual({ reason: 'not-worth-its-cost', depth: 1 });
      }
    });

    it('the forward is the whole batch\'s: a confident request pays for the layer and the weak one drafts it too', () => {
      const out = runTableStep(echo({ batch: 2, kmax: 16, shape, taus: {}, acceptance, childAcceptance, draftCost: 0.05 }), 16, [confident('C'), weak]);
      expect(out.draftedDepths[1]).toEqual([0, 1, 2, 3, 4, 5, 6]);
    });
  });

  describe('best first, priced by the clock', () => {
    it('grants a share to its most valuable nodes, width before depth when width is worth more', () => {
      // The root's two candidates are near-ties (0.5 and 0.45); under them the best path falls to
      // 0.5 · 0.3 = 0.15. A share of 2 takes both roots, not a chain of two.
      const table: TableRequest[] = [{ id: 'A', probs: [[0.5, 0.45, 0.05], [0.3, 0.3, 0.3], [0.9, 0.05]] }];
      const out = runTableStep(echo({ batch: 1, kmax: 3, shape: HIGH_LOAD, taus: {} }), 3, table);
      expect(out.widths[0]).toEqual([2]);
      // With a clear favourite at the root the same share is a chain.
      const chain = runTableStep(echo({ batch: 1, kmax: 3, shape: HIGH_LOAD, taus: {} }), 3, [confident('A')]);
      expect(chain.widths[0]).toEqual([1, 1]);
    });

    it("values nodes by the calibration, not the draft's probabilities: an under-confident draft's top tokens make a chain", () => {
      // The draft spreads its mass (0.2, 0.19, 0.18, …) but the calibration says its top path is
      // accepted 90 % of the time at depth 0, 81 % at 1, 73 % at 2: the top child continues 90 %
      // of the time, and the runner-ups share the other 10 %. A share of 3 is a chain.
      const flat: TableRequest = { id: 'F', probs: Array.from({ length: 6 }, () => [0.2, 0.19, 0.18, 0.17]) };
      const acceptance = [0.9, 0.81, 0.73, 0.66].map((rate) => ({ edges: [0, 1], rates: [rate] }));
      const calibrated = runTableStep(echo({ batch: 1, kmax: 4, shape: HIGH_LOAD, taus: {}, acceptance, draftCost: 0 }), 4, [flat]);
      expect(calibrated.widths[0]).toEqual([1, 1, 1]);
      // By the draft's own probabilities the root's runner-ups (0.19, 0.18) beat the chain (0.04).
      const uncalibrated = runTableStep(echo({ batch: 1, kmax: 4, shape: HIGH_LOAD, taus: {} }), 4, [flat]);
      expect(uncalibrated.widths[0]).toEqual([3]);
    });

    it('below the knee fills the budget static would have used, and more', () => {
      // Batch 8 under K_max 222 (the h100:70b knee): the default shape gives each request a share
      // of 26, as static's 8 / 10 / 60 does (static hands the 6 left over to its first requests,
      // ECHO to the batch's best nodes). The paper's 3 / 3 / 5 left most of it idle.
      const table = Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? confident(`r${i}`, 0.8) : unsure(`r${i}`)));
      const staticOut = runTableStep(new StaticPolicy({ batch: 8, kmax: 222 }), 222, table);
      const policy = echo({ batch: 8, kmax: 222, taus: {} });
      const echoOut = runTableStep(policy, 222, table);
      expect(staticOut.verifiedTokens).toBe(222);
      expect(echoOut.verifiedTokens).toBe(222);
      expect(policy.schedules().every((s) => s.share === 26)).toBe(true);
      // Priced with the device's knee at 222, nothing changes: every token below the knee pays.
      const priced = runTableStep(echo({ batch: 8, kmax: 222, taus: {}, verifyCost: { knee: 222, gamma: 1 / 222, draftRow: 0.0005 } }), 222, table);
      expect(priced.verifiedTokens).toBe(222);
    });

    it('a step whose prices say nothing pays drafts nothing: it decodes as ar', () => {
      // 32 requests past a knee of 12: the roots cost 1.5 forwards, each more token 1 / 40 of one,
      // the root layer's 32 rows 0.64, and the calibration says no root is accepted more than 40 %
      // of the time. n tokens would add 0.4·n / 32 to the output and (0.64 + 0.045·n) / 1.5 to the
      // time. (A token sure to be accepted would have paid for its own verification and row.)
      const acceptance = Array.from({ length: 4 }, () => ({ edges: [0, 0.5, 1], rates: [0.1, 0.4] }));
      const table = Array.from({ length: 32 }, (_, i) => confident(`r${i}`, 0.99));
      const options = { batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, draftCost: 0.1 };
      const policy = echo({ ...options, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.02 } });
      const out = runTableStep(policy, 44, table);
      expect(out.draftedDepths.every((d) => d.length === 0)).toBe(true);
      expect(out.verifiedTokens).toBe(32);
      expect(out.requests.every((r) => r.stop?.reason === 'not-worth-its-cost' && r.stop.depth === 0)).toBe(true);
      // Unpriced, the same step fills K_max.
      expect(runTableStep(echo(options), 44, table).verifiedTokens).toBe(44);
    });

    it('judges the next root layer by what the last ones drafted, and asks the calibration again once that is stale', () => {
      // 32 requests past a knee of 12: the roots cost 1.5 forwards, each more token 1 / 40 of one,
      // the root layer 0.1. The calibration says half the roots are accepted 95 % of the time, so
      // 12 tokens could add 11.4 to the output of 32 for 28 % more time: the first step drafts.
      // But the value model gives every drafted node 0.3, under what a token costs there (0.5).
      const acceptance = Array.from({ length: 4 }, () => ({ edges: [0, 0.5, 1], rates: [0.1, 0.95] }));
      const childAcceptance = measuredChildren(() => 0.3);
      const policy = echo({ batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, childAcceptance, draftCost: 0.1, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.002 } });
      const table = Array.from({ length: 32 }, (_, i) => confident(`r${i}`, 0.99));
      const first = runTableStep(policy, 44, table, { step: 0 });
      expect(first.draftedDepths.every((d) => d[0] === 0)).toBe(true);
      expect(first.verifiedTokens).toBe(32);
      // The next step knows what drafting bought: nothing worth its price. It decodes as ar.
      const next = runTableStep(policy, 44, table, { step: 1 });
      expect(next.draftedDepths.every((d) => d.length === 0)).toBe(true);
      expect(next.requests.every((r) => r.stop?.reason === 'not-worth-its-cost' && r.stop.depth === 0)).toBe(true);
      // Until that record is stale: REFRESH_STEPS old, twice that since the step that drafted
      // verified no draft token. Then the calibration decides, and it drafts again.
      expect(runTableStep(policy, 44, table, { step: 2 * REFRESH_STEPS }).draftedDepths.every((d) => d.length === 0)).toBe(true);
      const probe = 2 * REFRESH_STEPS + 1;
      expect(runTableStep(policy, 44, table, { step: probe }).draftedDepths.every((d) => d[0] === 0)).toBe(true);
      // That probe verified nothing either: the record now stays the judge twice as long again.
      expect(runTableStep(policy, 44, table, { step: probe + 4 * REFRESH_STEPS }).draftedDepths.every((d) => d.length === 0)).toBe(true);
      expect(runTableStep(policy, 44, table, { step: probe + 4 * REFRESH_STEPS + 1 }).draftedDepths.every((d) => d[0] === 0)).toBe(true);
      // Unless the draft is far behind: 16 accepted tokens a request it has not seen make the root
      // layer 544 rows (1.09 forwards at 0.002 a row), and no number of tokens repays that.
      const behind = table.map((t) => ({ ...t, behind: 16 }));
      const late = echo({ batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, childAcceptance, draftCost: 0.1, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.002 } });
      expect(runTableStep(late, 44, behind).draftedDepths.every((d) => d.length === 0)).toBe(true);
      // A draft never run for its requests must first read their prompts: 320 rows each, spread
      // over the 16 steps they may still run, make the root layer as dear, and it is not drafted;
      // spread over 1,000 steps it would pay, but not read all at once (20 forwards): the first
      // step probes, drafting 4 of the requests.
      const fresh = (remaining: number) => table.map((t) => ({ ...t, prefill: 320, remaining }));
      const unread = () => echo({ batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, childAcceptance, draftCost: 0.1, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.002 } });
      expect(runTableStep(unread(), 44, fresh(16)).draftedDepths.every((d) => d.length === 0)).toBe(true);
      expect(probedOnly(runTableStep(unread(), 44, fresh(1000)))).toBe(true);
    });

    it('backs off after a probe whose grants did not repay its drafting, though it verified some', () => {
      // As above, but the value model gives each root's top candidate 0.65: each one repays its own
      // verification once the root layer is drafted (0.65 / 32 of the output against 1 / 40 of a
      // forward on a step of 1.6), so the first step grants 12, but 12 of them add 24.4 % to the
      // output for 26.7 % more time than a plain step: drafting did not pay.
      const acceptance = Array.from({ length: 4 }, () => ({ edges: [0, 0.5, 1], rates: [0.1, 0.95] }));
      const policy = echo({ batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, childAcceptance: measuredChildren((rank) => (rank === 0 ? 0.65 : 0.1)), draftCost: 0.1, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.002 } });
      const table = Array.from({ length: 32 }, (_, i) => confident(`r${i}`, 0.99));
      const first = runTableStep(policy, 44, table, { step: 0 });
      expect(first.verifiedTokens).toBe(44);
      expect(runTableStep(policy, 44, table, { step: 1 }).draftedDepths.every((d) => d.length === 0)).toBe(true);
      // The record judges for twice REFRESH_STEPS, as after a probe that verified nothing.
      expect(runTableStep(policy, 44, table, { step: 2 * REFRESH_STEPS }).draftedDepths.every((d) => d.length === 0)).toBe(true);
      expect(runTableStep(policy, 44, table, { step: 2 * REFRESH_STEPS + 1 }).draftedDepths.every((d) => d[0] === 0)).toBe(true);
    });

    it('probes drafting on the few requests whose draft is nearest to caught up, and drafts all once the record says it pays', () => {
      // The calibration says half the roots are accepted 95 % of the time and the value model
      // agrees (0.95 for each root's top candidate): worth drafting. But with no drafted step to
      // judge by, 24 unread prompts of 40 rows (1.9 forwards to read at once, on a plain step of
      // 1.5) are worth reading only if the bound is right: the first step probes. The 4 requests
      // owing the draft fewest rows (0–3 accepted tokens behind) draft; the rest (a prompt unread,
      // or 6 tokens behind) decode plainly.
      const acceptance = Array.from({ length: 4 }, () => ({ edges: [0, 0.5, 1], rates: [0.1, 0.95] }));
      const options = { batch: 32, kmax: 44, shape: HIGH_LOAD, taus: {}, acceptance, childAcceptance: measuredChildren((rank) => (rank === 0 ? 0.95 : 0.1)), draftCost: 0.1 };
      const policy = echo({ ...options, verifyCost: { knee: 12, gamma: 1 / 40, draftRow: 0.002 } });
      const behind = [undefined, 6, 0, undefined, 2, 1, undefined, 3];
      const table = Array.from({ length: 32 }, (_, i) => ({ ...confident(`r${i}`, 0.99), ...(behind[i] === undefined ? { prefill: 40 } : { behind: behind[i] }) }));
      const first = runTableStep(policy, 44, table, { step: 0 });
      const drafted = first.draftedDepths.flatMap((d, i) => (d.length > 0 ? [i] : []));
      expect(drafted).toEqual([2, 4, 5, 7]);
      expect(first.requests.filter((r) => r.stop?.reason === 'not-probed').length).toBe(32 - PROBE_REQUESTS);
      expect(first.verifiedTokens).toBe(44);
      // The probe's grants paid: the next step drafts the root layer of every request, the unread
      // prompts too (its 12 tokens then go to the best of them).
      const next = runTableStep(policy, 44, table, { step: 1 });
      expect(next.draftedDepths.every((d) => d[0] === 0)).toBe(true);
      expect(next.requests.some((r) => r.stop?.reason === 'not-probed')).toBe(false);
      // Unpriced (no verification price, drafting free) there is no probe: every request drafts from the first step.
      expect(runTableStep(echo({ ...options, draftCost: 0 }), 44, table, { step: 0 }).draftedDepths.every((d) => d[0] === 0)).toBe(true);
    });

    it('records why a request got less than it drafted: out of budget at its first missing layer', () => {
      // Two confident requests, shares of 2 and a pool of 1: both draft on (the pool could reach
      // either), the pool goes to the surer one, and the other stops at layer 2 for want of budget.
      const policy = echo({ batch: 2, kmax: 7, shape: { depth: 2, topk: 1, tokens: 2 }, taus: {}, maxDepth: 4 });
      const out = runTableStep(policy, 7, [confident('A', 0.9), confident('B', 0.8)]);
      expect(out.widths).toEqual([[1, 1, 1], [1, 1]]);
      expect(out.requests[1].stop).toEqual({ reason: 'no-budget', depth: 2 });
      expect(policy.schedules().map((s) => s.granted)).toEqual([3, 2]);
    });
  });

  it('rejects a max depth below the base depth', () => {
    expect(() => echo({ batch: 1, kmax: 10, shape: { depth: 4, topk: 2, tokens: 6 }, maxDepth: 2 })).toThrow(/below the base shape/);
  });
});

describe('the cap holds for every policy on random tables', () => {
  const probsArb = fc.array(
    fc.array(fc.double({ min: 0.001, max: 1, noNaN: true }), { minLength: 1, maxLength: 5 }).map((ps) => {
      const sorted = ps.sort((x, y) => y - x);
      const total = sorted.reduce((s, p) => s + p, 0);
      return sorted.map((p) => p / Math.max(total, 1));
    }),
    { minLength: 0, maxLength: 9 },
  );
  const caseArb = fc
    .record({
      batch: fc.integer({ min: 1, max: 8 }),
      perRequest: fc.integer({ min: 1, max: 14 }),
      depth: fc.integer({ min: 1, max: 5 }),
      topk: fc.integer({ min: 1, max: 4 }),
      tokens: fc.integer({ min: 1, max: 24 }),
      extraDepth: fc.integer({ min: 0, max: 3 }),
      maxWidth: fc.integer({ min: 1, max: 5 }),
      gated: fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.double({ min: 0, max: 1, noNaN: true })), { maxLength: 4 }),
      kind: fc.constantFrom('echo', 'dense', 'fixed', 'ddd'),
      cost: fc.option(fc.record({ knee: fc.integer({ min: 0, max: 40 }), gamma: fc.double({ min: 0, max: 0.5, noNaN: true }) }), { nil: undefined }),
      price: fc.option(fc.record({ forward: fc.double({ min: 0, max: 0.3, noNaN: true }), rates: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 9 }) }), {
        nil: undefined,
      }),
    })
    .chain((c) =>
      fc.record({
        c: fc.constant(c),
        kmaxExtra: fc.integer({ min: 0, max: c.batch * c.perRequest }),
        tables: fc.array(fc.record({ probs: probsArb, remaining: fc.integer({ min: 1, max: 20 }) }), {
          minLength: c.batch,
          maxLength: c.batch,
        }),
      }),
    );

  it('Σ(1 + K_i) ≤ K_max, trees stay trees, no layer deeper than a request can emit', () => {
    fc.assert(
      fc.property(caseArb, ({ c, kmaxExtra, tables }) => {
        const kmax = c.batch + kmaxExtra;
        const shape = { depth: c.depth, topk: c.topk, tokens: c.tokens };
        const taus = Object.fromEntries(c.gated.map(([d, t]) => [String(d), t]));
        const options: PolicyOptions = {
          batch: c.batch,
          kmax,
          shape,
          taus: c.gated.length > 0 ? taus : undefined,
          maxDepth: c.depth + c.extraDepth,
          maxWidth: c.maxWidth,
          ...(c.cost ? { verifyCost: c.cost } : {}),
          ...(c.price ? { draftCost: c.price.forward, acceptance: c.price.rates.map((r) => ({ edges: [0, 0.5, 1], rates: [r / 2, r] })) } : {}),
        };
        const policy: ElasticScheduler =
          c.kind === 'echo'
            ? new EchoPolicy(options)
            : c.kind === 'dense'
              ? new DensePolicy(options)
              : c.kind === 'fixed'
                ? new FixedPolicy(options)
                : new DddPolicy(options);
        const out = runTableStep(
          policy,
          kmax,
          tables.map((t, i) => ({ id: `r${i}`, probs: t.probs, remaining: t.remaining })),
        );
        expect(out.verifiedTokens).toBeLessThanOrEqual(kmax);
        for (const r of out.requests) {
          if (r.remaining <= 1) expect(r.tree.verifiedCount).toBe(0);
          for (let id = 1; id < r.tree.size; id++) {
            if (!r.tree.verified[id]) continue;
            // Accepting a node at depth d emits d + 1 draft tokens and the bonus.
            expect(r.tree.depth[id] + 2).toBeLessThanOrEqual(r.remaining);
            expect(r.tree.verified[r.tree.parent[id]]).toBe(true);
            expect(r.tree.depth[id]).toBeLessThan(c.depth + c.extraDepth);
            if (r.tree.paidBy[id] !== undefined) expect(r.tree.grant[id]).toBe('depth');
          }
          for (let id = 0; id < r.tree.size; id++) {
            expect(r.tree.verifiedChildren(id).length).toBeLessThanOrEqual(Math.max(c.topk, c.maxWidth));
          }
        }
        const moved = out.ctx.transfers.reduce((s, t) => s + t.tokens, 0);
        const paid = out.requests.reduce((s, r) => s + r.tree.paidBy.filter((p) => p !== undefined).length, 0);
        expect(moved).toBe(paid);
      }),
      { numRuns: 400 },
    );
  });
});

describe('knobs between steps', () => {
  it('echo takes new τ_d, dense re-spreads them over every depth, fixed moves its gates or its τ', () => {
    const options = { batch: 1, kmax: 10, shape: { depth: 3, topk: 2, tokens: 4 }, taus: { '0': 0.2 }, maxDepth: 4 };
    const e = new EchoPolicy(options);
    e.setKnobs({ taus: { '1': 0.4, '3': 0.1 } });
    expect(e.rules.gate).toEqual({ signal: 'best-path', taus: new Map([[1, 0.4], [3, 0.1]]) });

    const d = new DensePolicy(options);
    d.setKnobs({ taus: { '1': 0.4, '3': 0.1 } });
    expect(d.rules.gate).toEqual({ signal: 'best-path', taus: new Map([[0, 0.4], [1, 0.4], [2, 0.4], [3, 0.1]]) });

    const f = new FixedPolicy(options);
    f.setKnobs({ tau: 0.6 });
    expect(f.rules.gate).toEqual({ signal: 'best-path', taus: new Map([[0, 0.6]]) });
    f.setKnobs({ taus: { '2': 0.9, '3': 0.1 } });
    expect(f.rules.gate).toEqual({ signal: 'best-path', taus: new Map([[2, 0.6], [3, 0.6]]) });
    expect(() => f.setKnobs({ tau: 2 })).toThrow(/fixed τ is 2/);
  });
});
