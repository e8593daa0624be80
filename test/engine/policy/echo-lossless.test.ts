// Lossless greedy for the ECHO policies, in the style of the engine's runner test: whatever the
// gates, transfers and widening do to the trees, greedy output must equal plain autoregressive.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DddPolicy } from '../../../src/engine/policy/ddd';
import { DensePolicy } from '../../../src/engine/policy/dense';
import { EchoPolicy } from '../../../src/engine/policy/echo';
import { FixedPolicy } from '../../../src/engine/policy/fixed';
import { createPolicy } from '../../../src/engine/policy/index';
import type { SpeculationPolicy, PolicyOptions } from '../../../src/engine/policy/types';
import type { RunSummary, WorkItem } from '../../../src/engine/run/runner';
import type { StepEvent } from '../../../src/shared/events';
import { loadFixturePair, randomPrompts, runGreedy, type FixturePair } from '../fixtures/pair';
import { expectSameAsAr } from '../fixtures/lossless';

const MAX_NEW = 20;

const ECHO_POLICIES: Record<string, (o: PolicyOptions) => SpeculationPolicy> = {
  echo: (o) => new EchoPolicy(o),
  // The margin of a near-flat draft is about 0.5 per step: these τ split it roughly in half too.
  'echo path-margin': (o) => new EchoPolicy({ ...o, confidence: 'path-margin', taus: { '0': 0.52, '2': 0.14 } }),
  // Layers past the second are rarely accepted by this table, so the draft price stops chains
  // there and widens them instead.
  'echo draft-priced': (o) => new EchoPolicy({ ...o, draftCost: 0.05, acceptance: Array.from({ length: 8 }, (_, d) => ({ edges: [0, 1e-4, 1], rates: d < 2 ? [0.2, 0.9] : [0.01, 0.3] })) }),
  // Priced past a knee of 6: some steps grant only what pays, some decode as ar.
  'echo verify-priced': (o) => new EchoPolicy({ ...o, verifyCost: { knee: 6, gamma: 0.2, draftRow: 0.01 } }),
  dense: (o) => new DensePolicy(o),
  fixed: (o) => new FixedPolicy(o),
  ddd: (o) => new DddPolicy(o),
};

function run(pair: FixturePair, policy: SpeculationPolicy, batch: number, kmax: number, workload: WorkItem[], onStep?: (e: StepEvent) => void): Promise<RunSummary> {
  return runGreedy(pair, policy, { batch, kmax, maxNewTokens: MAX_NEW }, workload, onStep);
}

describe('lossless greedy for echo, dense, fixed and ddd', () => {
  let pair: FixturePair;
  const workload = randomPrompts(16, 5);
  let reference: RunSummary;
  const kinds = { truncated: 0, passed: 0, depth: 0, width: 0 };
  /** Why requests stopped deepening, as the step events report it, per policy. */
  const stops = new Map<string, Set<string>>();
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 17 });
    reference = await run(pair, createPolicy('ar', { batch: 4, kmax: 4 }), 4, 4, workload);
  });
  afterAll(async () => pair?.release());

  const cases: [string, number, number][] = [];
  for (const policy of Object.keys(ECHO_POLICIES)) {
    for (const batch of [1, 4, 16]) for (const kmax of [batch, batch * 4 + 3, batch * 61]) cases.push([policy, batch, kmax]);
  }

  it.each(cases)('%s at batch %i, K_max %i emits exactly the tokens of ar', async (name, batch, kmax) => {
    // The random pair's draft is nearly flat over its vocabulary: these τ split its confidences
    // roughly in half, so gates pass and fail, budget moves and truncated requests widen.
    const policy = ECHO_POLICIES[name]({ batch, kmax, taus: { '0': 0.03, '2': 2e-5 }, maxWidth: 4 });
    let maxVerified = 0;
    const result = await run(pair, policy, batch, kmax, workload, (e) => {
      maxVerified = Math.max(maxVerified, e.verifiedTokens);
      kinds.depth += e.budget.depth;
      kinds.width += e.budget.width;
      for (const r of e.requests) for (const g of r.gates) g.pass ? kinds.passed++ : kinds.truncated++;
      for (const r of e.requests) if (r.stop) stops.set(name, (stops.get(name) ?? new Set()).add(r.stop.reason));
    });
    expect(maxVerified).toBeLessThanOrEqual(kmax);
    await expectSameAsAr(`${name} at batch ${batch}, K_max ${kmax}`, result, reference, workload, pair.target);
  });

  it('exercised gates both ways, depth extension and width across the runs', () => {
    expect(kinds.passed).toBeGreaterThan(0);
    expect(kinds.truncated).toBeGreaterThan(0);
    expect(kinds.depth).toBeGreaterThan(0);
    expect(kinds.width).toBeGreaterThan(0);
    // The draft price stopped chains (and the events say so); a failed gate shows as a truncation.
    expect(stops.get('echo draft-priced')).toContain('not-worth-its-cost');
    expect(stops.get('echo')).toContain('truncated');
    expect(stops.get('echo')).not.toContain('not-worth-its-cost');
  });
});
