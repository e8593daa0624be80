// `eagle2`: the EAGLE-2 dynamic tree. Depth 0 takes the root's top-k; every later depth expands
// the k best nodes of the previous layer (by path score) into their top-k children, so k² new
// nodes per layer; after the last depth all drafted nodes are reranked by path score and the
// best `tokens` are verified. Path scores only fall along a path, so the best nodes always
// include their ancestors (ties broken shallower first), and a beam node already outscored by
// `tokens` drafted nodes is not expanded (nothing below it could be verified).
import type { TreeShape } from '../../shared/config.js';
import { draftAllowance, fairShares, LOW_LOAD_SHAPE, scaleShape, usefulLayers } from './budget.js';
import type { PolicyOptions, SpeculationPolicy, StepContext } from './types.js';
import { ROOT, type DraftTree } from '../tree.js';

export class Eagle2Policy implements SpeculationPolicy {
  readonly name = 'eagle2';
  readonly candidatesPerNode: number;
  private readonly shape: TreeShape;
  private shapes: TreeShape[] = [];

  constructor(options: PolicyOptions) {
    this.shape = options.shape ?? LOW_LOAD_SHAPE;
    this.candidatesPerNode = this.shape.topk;
  }

  begin(ctx: StepContext): void {
    const shares = fairShares(ctx.kmax, ctx.requests.length);
    this.shapes = ctx.requests.map((r, i) => {
      const shape = scaleShape(this.shape, draftAllowance(this.shape.tokens, shares[i]));
      return { ...shape, depth: Math.min(shape.depth, usefulLayers(r.remaining)) };
    });
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map((r, i) => {
      const shape = this.shapes[i];
      if (depth >= shape.depth) return [];
      if (depth === 0) return [ROOT];
      // A child never scores above its parent, so a beam node scoring at or below the
      // `tokens`-th best node drafted so far cannot add anything to the final rerank: skip it
      // (and stop once none is left). The verified tree is the same, with fewer draft forwards.
      const bar = nthBestScore(r.tree, shape.tokens);
      return bestByScore(r.tree, r.tree.nodesAtDepth(depth - 1), shape.topk).filter((id) => r.tree.pathScore[id] > bar);
    });
  }

  grow(depth: number, ctx: StepContext): void {
    for (const r of ctx.requests) {
      const k = this.shapes[r.index].topk;
      const parents = depth === 0 ? [ROOT] : r.tree.nodesAtDepth(depth - 1);
      for (const p of parents) if (r.tree.candidates[p]) r.tree.addTopChildren(p, k, 'base');
    }
  }

  select(ctx: StepContext): void {
    for (const r of ctx.requests) {
      const all: number[] = [];
      for (let id = 1; id < r.tree.size; id++) all.push(id);
      const chosen = bestByScore(r.tree, all, this.shapes[r.index].tokens);
      chosen.sort((a, b) => a - b); // parents before children
      for (const id of chosen) r.tree.verify(id, 'base');
    }
  }
}

/** The n-th highest path score among the drafted nodes; -Infinity while fewer than n exist. */
function nthBestScore(tree: DraftTree, n: number): number {
  if (tree.size - 1 < n) return -Infinity;
  const scores = tree.pathScore.slice(1).sort((a, b) => b - a);
  return scores[n - 1];
}

/** The `n` nodes with the highest path score; ties go to the shallower, then earlier node. */
export function bestByScore(tree: DraftTree, nodes: readonly number[], n: number): number[] {
  if (nodes.length <= n) return nodes.slice();
  const sorted = nodes.slice().sort(
    (a, b) => tree.pathScore[b] - tree.pathScore[a] || tree.depth[a] - tree.depth[b] || a - b,
  );
  return sorted.slice(0, n);
}
