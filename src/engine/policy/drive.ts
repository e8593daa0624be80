// The policy protocol of one step, written once: begin → per depth: frontier, expand, grow,
// record the layer confidences → select, then the cap check. What expands a frontier is passed in:
// the draft model (step.ts), a recorded trace (trace/what-if.ts) or a table in a test. Whoever
// expands gives each frontier node its candidates (tree.setCandidates); the policy does the rest.
import type { SpeculationPolicy, StepContext, StepRequest } from './types.js';
import { DraftTree } from '../tree.js';
import { recordLayerConfidences } from '../draft/confidence.js';

/** Depth at which drafting stops even if a policy keeps asking for more. */
export const MAX_DRAFT_DEPTH = 64;

/** One layer to draft: per request (by index), the nodes at depth − 1 to expand. */
export interface Layer {
  readonly depth: number;
  readonly frontiers: ReadonlyArray<readonly number[]>;
}

/** Gives every node of `layer.frontiers` its candidates. */
export type Expansion = (layer: Layer, ctx: StepContext) => void;

/** What a step's context knows of the batch beyond its requests (StepContext's fields of the same names). */
export interface StepSurroundings {
  past?: number;
  ends?: ReadonlySet<number>;
  waiting?: number;
}

/** A new step's context: one tree per request, each holding only its root. */
export function newStepContext(
  step: number,
  kmax: number,
  requests: ReadonlyArray<{ id: string; root: number; remaining: number; draftBehind?: number; draftPrefill?: number }>,
  { past, ends, waiting }: StepSurroundings = {},
): StepContext {
  const stepRequests: StepRequest[] = requests.map((r, index) => ({
    id: r.id,
    index,
    tree: new DraftTree(r.id, r.root),
    confidences: [],
    gates: [],
    remaining: r.remaining,
    ...(r.draftBehind ? { draftBehind: r.draftBehind } : {}),
    ...(r.draftPrefill ? { draftPrefill: r.draftPrefill } : {}),
  }));
  return {
    step,
    kmax,
    requests: stepRequests,
    transfers: [],
    ...(past !== undefined ? { past } : {}),
    ...(ends && ends.size > 0 ? { ends } : {}),
    ...(waiting !== undefined ? { waiting } : {}),
  };
}

/**
 * The layers a policy asks to draft, depth by depth. Each is yielded once its frontiers are
 * known; when the caller asks for the next one, the yielded layer must have been expanded: the
 * policy grows it and the engine records its confidences. Drafting ends at the first depth whose
 * frontiers are all empty, at MAX_DRAFT_DEPTH, or at once for a policy that never drafts.
 */
function* layersToDraft(policy: SpeculationPolicy, ctx: StepContext): Generator<Layer, void, undefined> {
  policy.begin(ctx);
  if (policy.candidatesPerNode === 0) return;
  for (let depth = 0; depth < MAX_DRAFT_DEPTH; depth++) {
    const frontiers = withoutEnds(policy.frontier(depth, ctx), ctx);
    if (frontiers.every((nodes) => nodes.length === 0)) return;
    yield { depth, frontiers };
    policy.grow(depth, ctx);
    recordLayerConfidences(ctx.requests, depth, policy.confidence);
  }
}

/**
 * A frontier less its nodes that hold an end-of-sequence token: accepted, such a node ends its
 * request, so a child of it is never emitted (on the bundled math prompts 5 % of ECHO's verified
 * draft tokens sat below one).
 */
function withoutEnds(frontiers: ReadonlyArray<readonly number[]>, ctx: StepContext): ReadonlyArray<readonly number[]> {
  const ends = ctx.ends;
  if (!ends) return frontiers;
  return frontiers.map((nodes, i) => {
    const tree = ctx.requests[i].tree;
    return nodes.some((id) => ends.has(tree.token[id])) ? nodes.filter((id) => !ends.has(tree.token[id])) : nodes;
  });
}

/** Begin the step and draft its trees, expanding each layer with `expand`. */
export function draftTrees(policy: SpeculationPolicy, ctx: StepContext, expand: Expansion): void {
  for (const layer of layersToDraft(policy, ctx)) expand(layer, ctx);
}

/** draftTrees with an expansion that waits, such as a forward of the draft model. */
export async function draftTreesAsync(
  policy: SpeculationPolicy,
  ctx: StepContext,
  expand: (layer: Layer, ctx: StepContext) => Promise<void>,
): Promise<void> {
  for (const layer of layersToDraft(policy, ctx)) await expand(layer, ctx);
}

/** The policy marks the verified nodes; the engine enforces the global cap Σ(1 + K_i) ≤ K_max. */
export function selectVerified(policy: SpeculationPolicy, ctx: StepContext): void {
  policy.select(ctx);
  let total = 0;
  for (const r of ctx.requests) total += 1 + r.tree.verifiedCount;
  if (total > ctx.kmax) {
    throw new Error(`policy "${policy.name}" broke the cap at step ${ctx.step}: Σ(1+K_i) = ${total} > K_max = ${ctx.kmax}`);
  }
}

/** The whole protocol for callers whose expansion needs no waiting: draft, then select. */
export function driveStep(policy: SpeculationPolicy, ctx: StepContext, expand: Expansion): void {
  draftTrees(policy, ctx, expand);
  selectVerified(policy, ctx);
}
