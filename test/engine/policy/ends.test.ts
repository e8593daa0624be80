// A drafted end-of-sequence token ends its request once accepted, so nothing is drafted below it:
// for every registered policy, over random batches, budgets and top-k lists in which the EOS id
// is a frequent candidate, the driver never asks to expand a node holding it and no tree holds a
// child of one. The step is driven by the engine's own driver (policy/drive.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { driveStep, newStepContext } from '../../../src/engine/policy/drive.js';
import { availablePolicies, createPolicy } from '../../../src/engine/policy/index.js';
import { Rng } from '../../../src/engine/rng.js';

const EOS = 0;

describe('nothing is drafted below an end-of-sequence token', () => {
  it.each(availablePolicies())('%s never expands a drafted EOS', (name) => {
    let eosDrafted = 0;
    let drafts = false;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 40 }), fc.integer(), (batch, extra, seed) => {
        const kmax = batch + extra;
        const policy = createPolicy(name, { batch, kmax });
        const rng = new Rng(seed);
        drafts ||= policy.candidatesPerNode > 0;
        for (let step = 0; step < 3; step++) {
          const requests = Array.from({ length: batch }, (_, index) => ({ id: `r${index}`, root: 7, remaining: 40 }));
          const ctx = newStepContext(step, kmax, requests, { ends: new Set([EOS]) });
          driveStep(policy, ctx, ({ frontiers }) => {
            frontiers.forEach((nodes, i) => {
              const tree = ctx.requests[i].tree;
              for (const node of nodes) {
                expect(tree.token[node]).not.toBe(EOS);
                const k = policy.candidatesPerNode;
                // The EOS id is the top candidate a third of the time, else somewhere below it.
                const first = rng.next() < 1 / 3 ? EOS : 1 + Math.floor(rng.next() * 50);
                const tokens = Int32Array.from({ length: k }, (_, j) => (j === 0 ? first : j === k - 1 && first !== EOS ? EOS : 100 + j));
                const logq = Float32Array.from({ length: k }, (_, j) => Math.log(0.9 / (j + 1) ** 2));
                tree.setCandidates(node, 0, tokens, logq);
              }
            });
          });
          for (const r of ctx.requests) {
            for (let id = 1; id < r.tree.size; id++) {
              expect(r.tree.token[r.tree.parent[id]]).not.toBe(EOS);
              if (r.tree.token[id] === EOS) eosDrafted++;
            }
          }
        }
      }),
      { numRuns: 40 },
    );
    // Not vacuous: EOS tokens were drafted, as leaves, by every policy that drafts.
    if (drafts) expect(eosDrafted).toBeGreaterThan(0);
  });
});
