// Layer confidence c_{i,d} = exp(max_j S_{i,d,j}): the probability (under the draft) of the most
// likely path to depth d among the nodes drafted at that depth.
import type { DraftTree } from '../tree';

export function layerConfidence(tree: DraftTree, depth: number): number {
  const layer = tree.nodesAtDepth(depth);
  if (layer.length === 0) return 0;
  let best = -Infinity;
  for (const id of layer) if (tree.pathScore[id] > best) best = tree.pathScore[id];
  return Math.exp(best);
}
