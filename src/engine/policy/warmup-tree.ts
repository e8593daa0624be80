// The calibration warm-up's tree: a fixed, ungated shape that reaches every depth to calibrate, so
// that every layer's confidence is sampled whatever the draft says. Its shape is the base quota
// of a share: one node per layer first (depth before width), then the remaining tokens on the
// shallowest layers, at most top-k per layer; each layer takes the best candidates of the best
// nodes above it. The elastic scheduler grants by value and may leave deep layers out, which
// would starve the deep depths of samples; calibration needs them drafted every step.
import type { ConfidenceSignal, TreeShape } from '../../shared/config.js';
import { nodeScore } from '../draft/confidence.js';
import { ROOT, stepScore, type DraftTree } from '../tree.js';
import { ChildAcceptance } from '../calibrate/child-acceptance.js';
import { scaleShape, usefulLayers } from './budget.js';
import type { SpeculationPolicy, StepContext } from './types.js';

/**
 * Nodes per depth for a share: one node per layer first (depth before width), then the
 * remainder on the shallowest layers, at most topk per layer (the beam width).
 */
export function baseQuota(shape: TreeShape, share: number, maxDepth: number): number[] {
  if (share <= 0) return [];
  const scaled = scaleShape(shape, share);
  const layers = Math.min(scaled.depth, share, maxDepth);
  const quota = new Array<number>(layers).fill(1);
  let extra = share - layers;
  for (let d = 0; d < layers && extra > 0; d++) {
    const add = Math.min(extra, scaled.topk - quota[d]);
    quota[d] += add;
    extra -= add;
  }
  return quota;
}

export class WarmupTreePolicy implements SpeculationPolicy {
  readonly name = 'calibration warm-up';
  readonly candidatesPerNode: number;
  private quotas: number[][] = [];
  private expanded: number[][] = [];
  /** Every verified node whose parent was accepted, by rank and own confidence: the value model's start. */
  readonly children: ChildAcceptance;

  constructor(
    private readonly shape: TreeShape,
    readonly confidence: ConfidenceSignal = 'path-prob',
  ) {
    this.children = new ChildAcceptance(confidence);
    // The margin compares every candidate with the parent's runner-up, so it needs one.
    this.candidatesPerNode = Math.max(shape.topk, confidence === 'path-margin' ? 2 : 1);
  }

  begin(ctx: StepContext): void {
    this.quotas = ctx.requests.map((r) => baseQuota(this.shape, this.shape.tokens, Math.min(this.shape.depth, usefulLayers(r.remaining))));
    this.expanded = ctx.requests.map(() => []);
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map((r, i) => {
      const quota = this.quotas[i];
      if (depth >= quota.length) return (this.expanded[i] = []);
      if (depth === 0) return (this.expanded[i] = [ROOT]);
      // The best `need` parents hold the best `need` children.
      const parents = best(r.tree, r.tree.nodesAtDepth(depth - 1), this.confidence);
      return (this.expanded[i] = parents.slice(0, Math.min(this.shape.topk, quota[depth])));
    });
  }

  grow(depth: number, ctx: StepContext): void {
    for (const r of ctx.requests) {
      const candidates: { parent: number; rank: number; score: number }[] = [];
      for (const parent of this.expanded[r.index]) {
        const cands = r.tree.candidates[parent];
        if (!cands) continue;
        const parentScore = nodeScore(r.tree, parent, this.confidence);
        for (let rank = 0; rank < Math.min(this.shape.topk, cands.tokens.length); rank++) {
          candidates.push({ parent, rank, score: parentScore + stepScore(cands.logq, rank, this.confidence) });
        }
      }
      candidates.sort((a, b) => b.score - a.score || a.parent - b.parent || a.rank - b.rank);
      for (const c of candidates.slice(0, this.quotas[r.index][depth] ?? 0)) r.tree.addChild(c.parent, c.rank, 'base');
    }
  }

  select(ctx: StepContext): void {
    for (const r of ctx.requests) for (let id = 1; id < r.tree.size; id++) r.tree.verify(id);
  }

  afterVerify(ctx: StepContext, accepted: ReadonlyArray<readonly number[]>): void {
    for (const r of ctx.requests) this.children.observe(r.tree, accepted[r.index] ?? []);
  }
}

function best(tree: DraftTree, nodes: readonly number[], signal: ConfidenceSignal): number[] {
  return nodes.slice().sort((a, b) => nodeScore(tree, b, signal) - nodeScore(tree, a, signal) || a - b);
}
