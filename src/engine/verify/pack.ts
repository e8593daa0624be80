// Flatten & Pack: every request's root and verified nodes become one packed token list for a
// single target forward. Per request the rows are [root, verified nodes in id order], so a
// parent's row always comes before its children's; each node's parent is its parent's row in
// the entry, which is also its index in the target slot's (empty) scratch.
import type { ForwardEntry } from '../model/types.js';
import type { DraftTree } from '../tree.js';

export interface PackedRequest {
  tree: DraftTree;
  /** First packed row of this request. */
  offset: number;
  /** Node id of each of this request's rows (row 0 = the root). */
  nodeOfRow: Int32Array;
  /** Row (within the request) of each node, -1 for nodes not verified. */
  rowOfNode: Int32Array;
}

export interface SuperTree {
  entries: ForwardEntry[];
  requests: PackedRequest[];
  /** Σ_i (1 + K_i). */
  tokens: number;
}

export function packSuperTree(trees: readonly DraftTree[], slots: readonly number[]): SuperTree {
  const entries: ForwardEntry[] = [];
  const requests: PackedRequest[] = [];
  let offset = 0;
  for (let i = 0; i < trees.length; i++) {
    const tree = trees[i];
    const n = 1 + tree.verifiedCount;
    const nodeOfRow = new Int32Array(n);
    const rowOfNode = new Int32Array(tree.size).fill(-1);
    const tokens = new Int32Array(n);
    const parents = new Int32Array(n);
    let row = 0;
    for (let id = 0; id < tree.size; id++) {
      if (!tree.verified[id]) continue;
      nodeOfRow[row] = id;
      rowOfNode[id] = row;
      tokens[row] = tree.token[id];
      parents[row] = id === 0 ? -1 : rowOfNode[tree.parent[id]];
      row++;
    }
    entries.push({ slot: slots[i], tokens, parents });
    requests.push({ tree, offset, nodeOfRow, rowOfNode });
    offset += n;
  }
  return { entries, requests, tokens: offset };
}
