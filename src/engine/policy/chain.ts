// `chain`: standard speculative decoding. Each request drafts a chain of K tokens (the draft's
// top-1 at every depth), K = min(chain length, fair share of K_max, useful layers).
import { draftAllowance, fairShares, usefulLayers } from './budget.js';
import type { PolicyOptions, SpeculationPolicy, StepContext } from './types.js';
import { ROOT } from '../tree.js';

export const DEFAULT_CHAIN_LENGTH = 5;

export class ChainPolicy implements SpeculationPolicy {
  readonly name = 'chain';
  readonly candidatesPerNode = 1;
  private readonly chainLength: number;
  private lengths: number[] = [];

  constructor(options: PolicyOptions) {
    this.chainLength = options.chainLength ?? DEFAULT_CHAIN_LENGTH;
  }

  begin(ctx: StepContext): void {
    const shares = fairShares(ctx.kmax, ctx.requests.length);
    this.lengths = ctx.requests.map((r, i) =>
      Math.min(draftAllowance(this.chainLength, shares[i]), usefulLayers(r.remaining)),
    );
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map((r, i) => {
      if (depth >= this.lengths[i]) return [];
      return depth === 0 ? [ROOT] : r.tree.nodesAtDepth(depth - 1);
    });
  }

  grow(depth: number, ctx: StepContext): void {
    for (const r of ctx.requests) {
      const parents = depth === 0 ? [ROOT] : r.tree.nodesAtDepth(depth - 1);
      for (const p of parents) if (r.tree.candidates[p]) r.tree.addChild(p, 0, 'base');
    }
  }

  select(ctx: StepContext): void {
    for (const r of ctx.requests) for (let id = 1; id < r.tree.size; id++) r.tree.verify(id, 'base');
  }
}
