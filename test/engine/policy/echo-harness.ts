// Drives a SpeculationPolicy through one step the way the engine does (frontier → draft → grow,
// depth by depth, then select), with a drafter read from a hand-made table instead of a model.
import type { BudgetTransfer } from '../../../src/shared/events';
import { recordLayerConfidences } from '../../../src/engine/draft/confidence';
import { DraftTree } from '../../../src/engine/tree';
import type { SpeculationPolicy, StepContext, StepRequest } from '../../../src/engine/policy/types';

/**
 * One request's draft: probs[d] is the draft's distribution (best first) of every node at depth
 * d − 1 over its children, so the best path's confidence at depth d is Π_{e ≤ d} probs[e][0].
 * Depths past the table draw a flat, unconfident distribution.
 */
export interface TableRequest {
  id: string;
  probs: number[][];
  remaining?: number;
}

export interface StepOutcome {
  ctx: StepContext;
  requests: StepRequest[];
  /** Σ_i (1 + K_i). */
  verifiedTokens: number;
  /** Per request: verified nodes per depth. */
  widths: number[][];
  /** Depths at which the policy asked for a draft, per request. */
  draftedDepths: number[][];
}

export function runTableStep(policy: SpeculationPolicy, kmax: number, table: TableRequest[], maxLayers = 64): StepOutcome {
  const transfers: BudgetTransfer[] = [];
  const requests: StepRequest[] = table.map((t, index) => ({
    id: t.id,
    index,
    tree: new DraftTree(t.id, 1),
    confidences: [],
    gates: [],
    remaining: t.remaining ?? 1000,
  }));
  const ctx: StepContext = { step: 0, kmax, requests, transfers };
  const draftedDepths: number[][] = table.map(() => []);
  policy.begin(ctx);
  let row = 0;
  for (let depth = 0; depth < maxLayers; depth++) {
    const frontier = policy.frontier(depth, ctx);
    if (frontier.every((f) => f.length === 0)) break;
    frontier.forEach((nodes, i) => {
      if (nodes.length > 0) draftedDepths[i].push(depth);
      const probs = table[i].probs[depth] ?? [0.05, 0.05, 0.05, 0.05];
      const k = policy.candidatesPerNode;
      for (const node of nodes) {
        const tokens = Int32Array.from({ length: k }, (_, r) => 100 * depth + r);
        const logq = Float32Array.from({ length: k }, (_, r) => Math.log(probs[r] ?? 1e-6));
        requests[i].tree.setCandidates(node, row++, tokens, logq);
      }
    });
    policy.grow(depth, ctx);
    recordLayerConfidences(requests, depth, policy.confidence);
  }
  policy.select(ctx);
  let verifiedTokens = 0;
  const widths = requests.map((r) => {
    verifiedTokens += 1 + r.tree.verifiedCount;
    const perDepth: number[] = [];
    for (let id = 1; id < r.tree.size; id++) {
      if (!r.tree.verified[id]) continue;
      const d = r.tree.depth[id];
      perDepth[d] = (perDepth[d] ?? 0) + 1;
    }
    return Array.from(perDepth, (w) => w ?? 0);
  });
  return { ctx, requests, verifiedTokens, widths, draftedDepths };
}

/** Verified nodes of a request with a given grant kind. */
export function grantsOf(r: StepRequest, kind: string): number[] {
  const ids: number[] = [];
  for (let id = 1; id < r.tree.size; id++) if (r.tree.verified[id] && r.tree.grant[id] === kind) ids.push(id);
  return ids;
}

/** A request whose every layer has one clear favourite at probability p. */
export function confident(id: string, p = 0.95, layers = 12): TableRequest {
  return { id, probs: Array.from({ length: layers }, () => [p, (1 - p) / 2, (1 - p) / 4, (1 - p) / 8]) };
}

/** A request whose root layer is already a toss-up. */
export function unsure(id: string, layers = 12): TableRequest {
  return { id, probs: Array.from({ length: layers }, () => [0.15, 0.14, 0.13, 0.12]) };
}
