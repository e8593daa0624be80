// Tree drafting: one batched draft forward per depth over the frontier nodes of every request
// still deepening. Each forwarded node gets its top-k continuation (token ids + log q) as
// candidates; the policy then decides which candidates enter the tree.
import type { ForwardEntry, ModelSession } from '../model/types.js';
import type { DraftTree } from '../tree.js';

/** What the drafter needs per request in a step. */
export interface DraftSlot {
  tree: DraftTree;
  slot: number;
  /**
   * Tokens the draft model has not seen yet, the root last: the root alone, or e.g. an accepted
   * leaf it never forwarded + the bonus. They go in as a chain in the request's first forward.
   */
  pending: readonly number[];
  /** Rows in the draft slot's scratch so far this step (the drafter maintains it). */
  scratchRows: number;
}

export interface DraftForwardStats {
  runMs: number;
  tokens: number;
  /** Requests with rows in the forward. */
  requests: number;
  paddingWaste: number;
}

/**
 * Drafts one layer: forwards `frontiers[i]` (node ids at depth − 1; at depth 0 the root) of each
 * request and stores every forwarded node's top-`topk` candidates. Returns null when no request
 * has a frontier.
 */
export async function draftLayer(
  draft: ModelSession,
  requests: readonly DraftSlot[],
  frontiers: ReadonlyArray<readonly number[]>,
  depth: number,
  topk: number,
): Promise<DraftForwardStats | null> {
  const entries: ForwardEntry[] = [];
  const rows: number[] = [];
  // Which request, node and draft scratch row each returned top-k row belongs to.
  const rowOwner: number[] = [];
  const rowNode: number[] = [];
  const rowScratch: number[] = [];
  let packed = 0;
  for (let i = 0; i < requests.length; i++) {
    const frontier = frontiers[i];
    if (frontier.length === 0) continue;
    const r = requests[i];
    const tree = r.tree;
    let tokens: Int32Array;
    let parents: Int32Array;
    if (depth === 0) {
      if (frontier.length !== 1 || frontier[0] !== 0) {
        throw new Error(`policy error: the depth-0 frontier of ${tree.requestId} must be the root alone`);
      }
      // The pending chain; its last token is the root, whose row yields depth 0's candidates.
      const n = r.pending.length;
      tokens = Int32Array.from(r.pending);
      parents = new Int32Array(n);
      for (let j = 0; j < n; j++) parents[j] = j === 0 ? -1 : r.scratchRows + j - 1;
      rows.push(packed + n - 1);
      rowOwner.push(i);
      rowNode.push(0);
      rowScratch.push(r.scratchRows + n - 1);
    } else {
      tokens = new Int32Array(frontier.length);
      parents = new Int32Array(frontier.length);
      for (let j = 0; j < frontier.length; j++) {
        const node = frontier[j];
        if (node <= 0 || node >= tree.size || tree.depth[node] !== depth - 1) {
          throw new Error(`policy error: node ${node} of ${tree.requestId} is not at depth ${depth - 1}`);
        }
        if (tree.candidates[node] !== null) {
          throw new Error(`policy error: node ${node} of ${tree.requestId} is expanded twice`);
        }
        tokens[j] = tree.token[node];
        parents[j] = tree.draftRow[tree.parent[node]];
        rows.push(packed + j);
        rowOwner.push(i);
        rowNode.push(node);
        rowScratch.push(r.scratchRows + j);
      }
    }
    entries.push({ slot: r.slot, tokens, parents });
    packed += tokens.length;
    r.scratchRows += tokens.length;
  }
  if (entries.length === 0) return null;

  const result = await draft.forward(entries, { topkRows: rows, topk });
  const ids = result.topkIds;
  const logprobs = result.topkLogprobs;
  if (!ids || !logprobs) throw new Error('the draft model returned no top-k output');

  for (let k = 0; k < rows.length; k++) {
    requests[rowOwner[k]].tree.setCandidates(
      rowNode[k],
      rowScratch[k],
      ids.subarray(k * topk, (k + 1) * topk),
      logprobs.subarray(k * topk, (k + 1) * topk),
    );
  }
  return { runMs: result.runMs, tokens: result.tokens, requests: entries.length, paddingWaste: result.paddingWaste };
}
