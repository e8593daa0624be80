// Node states in a request's draft tree after verification: the one place that decides what
// colour a node gets, so the Super-Tree canvas, the request SVG and the teaching sentences agree.
import type { GrantKind, RequestStep, TreeNode } from '../../shared/events.js';

export type NodeState =
  | 'accepted' // on the accepted path (the root counts as accepted)
  | 'rejected' // verified, its parent was accepted, the target chose another token
  | 'unreached' // verified, but its parent was not accepted, so the target never got to it
  | 'pruned'; // drafted but never verified (cut by a gate or by the budget)

export const NODE_STATES: readonly NodeState[] = ['accepted', 'rejected', 'unreached', 'pruned'];

/** Which scheduler phase added a node, drawn as a mark on top of the state colour. */
export type GrantMark = 'depth' | 'width' | null;

// Step events are immutable once received, so a request's states are computed once and shared by
// every view that draws it (canvas, summary, request SVG).
const cache = new WeakMap<RequestStep, NodeState[]>();

/** States indexed by position in `request.nodes` (node ids are positions; see events.ts). */
export function nodeStates(request: RequestStep): NodeState[] {
  let states = cache.get(request);
  if (states === undefined) {
    states = computeNodeStates(request);
    cache.set(request, states);
  }
  return states;
}

function computeNodeStates(request: RequestStep): NodeState[] {
  const accepted = new Set<number>(request.accepted);
  const byId = new Map<number, TreeNode>();
  for (const node of request.nodes) byId.set(node.id, node);
  const isAccepted = (node: TreeNode | undefined): boolean =>
    node !== undefined && (node.parent < 0 || accepted.has(node.id));
  return request.nodes.map((node) => {
    if (isAccepted(node)) return 'accepted';
    if (!node.verified) return 'pruned';
    return isAccepted(byId.get(node.parent)) ? 'rejected' : 'unreached';
  });
}

export function grantMark(grant: GrantKind, verified: boolean): GrantMark {
  if (!verified) return null;
  return grant === 'depth' || grant === 'width' ? grant : null;
}

export function countStates(states: readonly NodeState[]): Record<NodeState, number> {
  const counts: Record<NodeState, number> = { accepted: 0, rejected: 0, unreached: 0, pruned: 0 };
  for (const s of states) counts[s] += 1;
  return counts;
}
