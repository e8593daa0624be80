// The global cap Σ_i (1 + K_i) ≤ K_max holds at every step for every registered policy, over
// random batch sizes, budgets, shapes, remaining lengths and draft distributions. The step is
// driven by the engine's own driver (policy/drive.ts), the draft forward replaced by random top-k lists.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { driveStep, newStepContext } from '../../../src/engine/policy/drive.js';
import { availablePolicies, createPolicy } from '../../../src/engine/policy/index.js';
import type { SpeculationPolicy } from '../../../src/engine/policy/types.js';
import { Rng } from '../../../src/engine/rng.js';

const VOCAB = 500;

/** Random descending log-probabilities over k distinct tokens, like a draft's top-k. */
function randomTopk(rng: Rng, k: number, peak: number): { tokens: Int32Array; logq: Float32Array } {
  const weights = Array.from({ length: k }, (_, j) => (j === 0 ? peak : 1) * rng.next() ** 3).sort((a, b) => b - a);
  const total = weights.reduce((a, b) => a + b, 0) + 10 * rng.next(); // mass outside the top-k
  const first = Math.floor(rng.next() * VOCAB);
  return {
    tokens: Int32Array.from(weights, (_, j) => (first + 37 * j) % VOCAB),
    logq: Float32Array.from(weights, (w) => Math.log(w / total)),
  };
}

/** One step's drafting and scheduling with random candidates; returns Σ (1 + K_i). */
function scheduleRandomStep(policy: SpeculationPolicy, kmax: number, remaining: number[], rng: Rng, step: number): number {
  const ctx = newStepContext(step, kmax, remaining.map((rem, index) => ({ id: `r${index}`, root: 1, remaining: rem })));
  driveStep(policy, ctx, ({ frontiers }) => {
    frontiers.forEach((nodes, i) => {
      for (const node of nodes) {
        const { tokens, logq } = randomTopk(rng, policy.candidatesPerNode, 1 + 200 * rng.next());
        ctx.requests[i].tree.setCandidates(node, 0, tokens, logq);
      }
    });
  });
  return ctx.requests.reduce((sum, r) => sum + 1 + r.tree.verifiedCount, 0);
}

describe('the cap Σ(1+K_i) ≤ K_max', () => {
  const shape = fc.record({
    depth: fc.integer({ min: 1, max: 10 }),
    topk: fc.integer({ min: 1, max: 10 }),
    tokens: fc.integer({ min: 1, max: 80 }),
  });

  it.each(availablePolicies())('holds at every step for %s', (name) => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 80 }),
        fc.option(shape, { nil: undefined }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer(),
        (batch, extra, baseShape, chainLength, seed) => {
          const kmax = batch + extra * Math.ceil(batch / 4);
          const policy = createPolicy(name, { batch, kmax, shape: baseShape, chainLength });
          const rng = new Rng(seed);
          for (let step = 0; step < 3; step++) {
            const remaining = Array.from({ length: batch }, () => 1 + Math.floor(rng.next() * 40));
            const total = scheduleRandomStep(policy, kmax, remaining, rng, step);
            expect(total).toBeLessThanOrEqual(kmax);
            expect(total).toBeGreaterThanOrEqual(batch);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is enforced by the engine: a policy that overspends fails the step with a clear error', () => {
    const greedy: SpeculationPolicy = {
      name: 'overspender',
      candidatesPerNode: 4,
      begin() {},
      frontier: (depth, ctx) => ctx.requests.map(() => (depth === 0 ? [0] : [])),
      grow: (_depth, ctx) => ctx.requests.forEach((r) => r.tree.addTopChildren(0, 4)),
      select: (ctx) => ctx.requests.forEach((r) => [1, 2, 3, 4].forEach((id) => r.tree.verify(id))),
    };
    const rng = new Rng(3);
    expect(() => scheduleRandomStep(greedy, 9, [10, 10], rng, 7)).toThrow(
      'policy "overspender" broke the cap at step 7: Σ(1+K_i) = 10 > K_max = 9',
    );
  });
});
