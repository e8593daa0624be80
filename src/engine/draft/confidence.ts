// Confidence of a draft path, as a log score that never rises along the path (see
// ConfidenceSignal in shared/config): `path-prob` sums log q, `path-margin` sums log q renormalised
// over the parent's two best candidates. The layer confidence c_{i,d} is exp of the best score
// among the nodes drafted at depth d.
import type { ConfidenceSignal } from '../../shared/config.js';
import type { DraftTree } from '../tree.js';

/** A node's path score under a signal. */
export function nodeScore(tree: DraftTree, id: number, signal: ConfidenceSignal): number {
  return signal === 'path-prob' ? tree.pathScore[id] : tree.marginScore[id];
}

export function layerConfidence(tree: DraftTree, depth: number, signal: ConfidenceSignal = 'path-prob'): number {
  const layer = tree.nodesAtDepth(depth);
  if (layer.length === 0) return 0;
  let best = -Infinity;
  for (const id of layer) best = Math.max(best, nodeScore(tree, id, signal));
  return Math.exp(best);
}

/** After layer `depth` grew: each request's c_{i,d}, in the policy's signal, for the step event. */
export function recordLayerConfidences(
  requests: ReadonlyArray<{ tree: DraftTree; confidences: number[] }>,
  depth: number,
  signal: ConfidenceSignal = 'path-prob',
): void {
  for (const r of requests) {
    if (r.tree.nodesAtDepth(depth).length > 0) r.confidences[depth] = layerConfidence(r.tree, depth, signal);
  }
}
