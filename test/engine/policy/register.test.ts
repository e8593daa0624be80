// The registry is open: a policy written outside src/engine/policy, registered by name, is built
// by createPolicy and runs through the engine like a built-in one — losslessly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draftAllowance, fairShares } from '../../../src/engine/policy/budget.js';
import { availablePolicies, createPolicy, registerPolicy } from '../../../src/engine/policy/index.js';
import type { SpeculationPolicy, StepContext } from '../../../src/engine/policy/types.js';
import type { RunSummary } from '../../../src/engine/run/runner.js';
import { ROOT } from '../../../src/engine/tree.js';
import { expectConsistentEvent } from '../fixtures/event-invariants.js';
import { expectSameAsAr } from '../fixtures/lossless.js';
import { loadFixturePair, randomPrompts, runGreedy, type FixturePair } from '../fixtures/pair.js';

/**
 * `fan`: widest first. One layer only: each request verifies its root's best candidates, as many
 * as its fair share of K_max allows (up to `width`), and never drafts deeper.
 */
class FanPolicy implements SpeculationPolicy {
  readonly name = 'fan';
  readonly candidatesPerNode: number;
  private widths: number[] = [];

  constructor(width: number) {
    this.candidatesPerNode = width;
  }

  begin(ctx: StepContext): void {
    const shares = fairShares(ctx.kmax, ctx.requests.length);
    this.widths = ctx.requests.map((r, i) => draftAllowance(this.candidatesPerNode, shares[i], r.remaining));
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map((_, i) => (depth === 0 && this.widths[i] > 0 ? [ROOT] : []));
  }

  grow(_depth: number, ctx: StepContext): void {
    for (const r of ctx.requests) if (r.tree.candidates[ROOT]) r.tree.addTopChildren(ROOT, this.widths[r.index], 'base');
  }

  select(ctx: StepContext): void {
    for (const r of ctx.requests) for (let id = 1; id < r.tree.size; id++) r.tree.verify(id, 'base');
  }
}

registerPolicy('fan', () => new FanPolicy(6));

describe('registerPolicy', () => {
  it('adds the policy to the registry by name', () => {
    expect(availablePolicies()).toContain('fan');
    expect(createPolicy('fan', { batch: 2, kmax: 8 }).name).toBe('fan');
  });

  it('refuses a name already taken or one a sweep entry could not spell', () => {
    expect(() => registerPolicy('echo', () => new FanPolicy(2))).toThrow('a policy named "echo" is already registered');
    expect(() => registerPolicy('fan@2', () => new FanPolicy(2))).toThrow('policy name "fan@2": use lower-case letters, digits and dashes');
  });

  describe('a registered policy on the tiny pair', () => {
    let pair: FixturePair;
    const workload = randomPrompts(10, 13);
    const maxNewTokens = 16;
    let reference: RunSummary;
    beforeAll(async () => {
      pair = await loadFixturePair({ draft: 'perturbed', slots: 5 });
      reference = await runGreedy(pair, createPolicy('ar', { batch: 4, kmax: 4 }), { batch: 4, kmax: 4, maxNewTokens }, workload);
    });
    afterAll(async () => pair?.release());

    it.each([
      [1, 7],
      [4, 13],
    ])('emits exactly the tokens of ar at batch %i, K_max %i, within the cap', async (batch, kmax) => {
      let accepted = 0;
      let widest = 0;
      const run = await runGreedy(pair, createPolicy('fan', { batch, kmax }), { batch, kmax, maxNewTokens }, workload, (e) => {
        expectConsistentEvent(e);
        expect(e.verifiedTokens).toBeLessThanOrEqual(kmax);
        for (const r of e.requests) {
          accepted += r.accepted.length;
          widest = Math.max(widest, r.nodes.filter((n) => n.verified && n.depth === 0).length);
          expect(r.nodes.every((n) => n.depth <= 0)).toBe(true);
        }
      });
      await expectSameAsAr(`fan batch ${batch} K_max ${kmax}`, run, reference, workload, pair.target);
      // The fan did draft and the target kept some of it: the lossless check is not vacuous.
      expect(widest).toBeGreaterThan(1);
      expect(accepted).toBeGreaterThan(0);
    });
  });
});
