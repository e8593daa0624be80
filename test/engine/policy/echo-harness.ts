// Runs a SpeculationPolicy through one step with the engine's own driver (policy/drive.ts), the
// draft model replaced by a hand-made table of distributions.
import { driveStep, newStepContext } from '../../../src/engine/policy/drive';
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
  /** Accepted tokens the draft has not seen (StepRequest.draftBehind). */
  behind?: number;
  /** Prompt rows the draft must read before it first drafts the request (StepRequest.draftPrefill). */
  prefill?: number;
}

export interface StepOutcome {
  ctx: StepContext;
  requests: readonly StepRequest[];
  /** Σ_i (1 + K_i). */
  verifiedTokens: number;
  /** Per request: verified nodes per depth. */
  widths: number[][];
  /** Depths at which the policy asked for a draft, per request. */
  draftedDepths: number[][];
  /** Per request, the rows (expanded nodes) it put in each layer's draft forward, by depth. */
  draftRows: number[][];
}

export function runTableStep(policy: SpeculationPolicy, kmax: number, table: TableRequest[], at: { past?: number; step?: number; waiting?: number; ends?: ReadonlySet<number> } = {}): StepOutcome {
  const ctx = newStepContext(at.step ?? 0, kmax, table.map((t) => ({ id: t.id, root: 1, remaining: t.remaining ?? 1000, draftBehind: t.behind, draftPrefill: t.prefill })), { past: at.past, waiting: at.waiting, ends: at.ends });
  const requests = ctx.requests;
  const draftedDepths: number[][] = table.map(() => []);
  const draftRows: number[][] = table.map(() => []);
  let row = 0;
  driveStep(policy, ctx, ({ depth, frontiers }) => {
    frontiers.forEach((nodes, i) => {
      if (nodes.length > 0) draftedDepths[i].push(depth);
      draftRows[i][depth] = nodes.length;
      const probs = table[i].probs[depth] ?? [0.05, 0.05, 0.05, 0.05];
      const k = policy.candidatesPerNode;
      for (const node of nodes) {
        const tokens = Int32Array.from({ length: k }, (_, r) => 100 * depth + r);
        const logq = Float32Array.from({ length: k }, (_, r) => Math.log(probs[r] ?? 1e-6));
        requests[i].tree.setCandidates(node, row++, tokens, logq);
      }
    });
  });
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
  return { ctx, requests, verifiedTokens, widths, draftedDepths, draftRows };
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
