// Greedy verification: from the root, follow the verified child whose token is the target's
// argmax at the current node; the bonus is the target's argmax at the last accepted node.
import type { PackedRequest } from './pack.js';

export interface Verdict {
  /** Accepted node ids along the path, root excluded, in depth order. */
  accepted: number[];
  bonus: number;
}

/** `argmax[row]` = target argmax at packed row `row` (of the whole Super-Tree). */
export function verifyGreedy(packed: PackedRequest, argmax: ArrayLike<number>): Verdict {
  const tree = packed.tree;
  const accepted: number[] = [];
  let node = 0;
  for (;;) {
    const best = argmax[packed.offset + packed.rowOfNode[node]];
    let next = -1;
    for (const child of tree.verifiedChildren(node)) {
      if (tree.token[child] === best) {
        next = child;
        break;
      }
    }
    if (next === -1) return { accepted, bonus: best };
    accepted.push(next);
    node = next;
  }
}
