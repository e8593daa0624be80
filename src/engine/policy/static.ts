// `static`: a fixed tree shape, the same every step whatever the draft says (EAGLE-1/Medusa
// style static trees, sized by the EAGLE-3 knobs depth / top-k / tokens). The shape is the
// `tokens` rank paths (r_0, r_1, …) — "the r_0-th candidate of the root, then its r_1-th
// candidate, …" — with the highest prior acceptance Π_d a(r_d), where a(r) is a fixed
// per-rank prior. A request with a smaller allowance takes the first nodes of the same order,
// which is still a tree because a path's prior never exceeds its parent's.
import type { TreeShape } from '../../shared/config.js';
import { draftAllowance, fairShares, LOW_LOAD_SHAPE, usefulLayers } from './budget.js';
import type { PolicyOptions, SpeculationPolicy, StepContext } from './types.js';
import { ROOT } from '../tree.js';

/** Prior acceptance of the draft's rank-r candidate: 0.6 for the top one, then ×0.35 per rank. */
export function rankPrior(rank: number): number {
  return 0.6 * 0.35 ** rank;
}

/** One node of a static shape: its parent's index in the shape (-1 = root) and its rank. */
export interface StaticNode {
  parent: number;
  rank: number;
  depth: number;
}

/**
 * The static tree for a shape, best prior first, parents before children. Grown best-first:
 * the next node is the most probable child (by prior) of any node already in the tree.
 */
export function buildStaticShape(shape: TreeShape): StaticNode[] {
  const nodes: StaticNode[] = [];
  const logPrior: number[] = [];
  // Open slots: (parent index, rank) pairs whose node is not in the tree yet.
  const open: { parent: number; rank: number; depth: number; score: number }[] = [];
  const openChildrenOf = (parent: number, depth: number, score: number, fromRank: number, toRank: number) => {
    for (let r = fromRank; r < toRank; r++) open.push({ parent, rank: r, depth, score: score + Math.log(rankPrior(r)) });
  };
  openChildrenOf(-1, 0, 0, 0, shape.topk);
  while (nodes.length < shape.tokens && open.length > 0) {
    let best = 0;
    for (let i = 1; i < open.length; i++) {
      const a = open[i];
      const b = open[best];
      if (a.score > b.score || (a.score === b.score && a.depth < b.depth)) best = i;
    }
    const pick = open.splice(best, 1)[0];
    const index = nodes.length;
    nodes.push({ parent: pick.parent, rank: pick.rank, depth: pick.depth });
    logPrior.push(pick.score);
    if (pick.depth + 1 < shape.depth) openChildrenOf(index, pick.depth + 1, pick.score, 0, shape.topk);
  }
  return nodes;
}

export class StaticPolicy implements SpeculationPolicy {
  readonly name = 'static';
  readonly candidatesPerNode: number;
  private readonly shape: TreeShape;
  private readonly staticNodes: StaticNode[];
  /** Per request: static node index → tree node id, for the nodes drafted so far. */
  private nodeIds: Int32Array[] = [];
  private allowances: number[] = [];
  private layers: number[] = [];

  constructor(options: PolicyOptions) {
    this.shape = options.shape ?? LOW_LOAD_SHAPE;
    this.candidatesPerNode = this.shape.topk;
    this.staticNodes = buildStaticShape(this.shape);
  }

  begin(ctx: StepContext): void {
    const shares = fairShares(ctx.kmax, ctx.requests.length);
    this.allowances = ctx.requests.map((_, i) =>
      Math.min(this.staticNodes.length, draftAllowance(this.shape.tokens, shares[i])),
    );
    this.layers = ctx.requests.map((r) => usefulLayers(r.remaining));
    this.nodeIds = ctx.requests.map(() => new Int32Array(this.staticNodes.length).fill(-1));
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map((_, i) => {
      const expand = new Set<number>();
      if (depth >= this.layers[i]) return [];
      for (let s = 0; s < this.allowances[i]; s++) {
        const node = this.staticNodes[s];
        if (node.depth !== depth) continue;
        // A parent never drafted (below an end-of-sequence token, drive.ts) has no children.
        const parent = node.parent === -1 ? ROOT : this.nodeIds[i][node.parent];
        if (parent !== -1) expand.add(parent);
      }
      return [...expand];
    });
  }

  grow(depth: number, ctx: StepContext): void {
    for (const r of ctx.requests) {
      const ids = this.nodeIds[r.index];
      if (depth >= this.layers[r.index]) continue;
      for (let s = 0; s < this.allowances[r.index]; s++) {
        const node = this.staticNodes[s];
        if (node.depth !== depth) continue;
        const parent = node.parent === -1 ? ROOT : ids[node.parent];
        if (parent !== -1 && r.tree.candidates[parent]) ids[s] = r.tree.addChild(parent, node.rank, 'base');
      }
    }
  }

  select(ctx: StepContext): void {
    for (const r of ctx.requests) for (let id = 1; id < r.tree.size; id++) r.tree.verify(id, 'base');
  }
}
