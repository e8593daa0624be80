// KV compaction after verification. The target keeps its root row and the accepted nodes' rows;
// the draft keeps the pending chain it forwarded and the accepted nodes it forwarded. An
// accepted node the draft never forwarded (at most the deepest one) and the bonus become the
// draft's pending tokens for the next step.
import type { ModelSession } from '../model/types.js';
import type { DraftTree } from '../tree.js';
import type { Verdict } from './greedy.js';
import type { PackedRequest } from './pack.js';

export function commitTarget(target: ModelSession, slot: number, packed: PackedRequest, verdict: Verdict): void {
  const keep = [0];
  for (const node of verdict.accepted) keep.push(packed.rowOfNode[node]);
  target.commit(slot, keep);
}

/** Commits the draft's kept rows; returns the draft's pending tokens for the next step. */
export function commitDraft(
  draft: ModelSession,
  slot: number,
  tree: DraftTree,
  pending: number[],
  verdict: Verdict,
): number[] {
  const rootRow = tree.draftRow[0];
  if (rootRow === -1) {
    // The draft did not run for this request this step: everything it has not seen stays pending,
    // and this step's tokens join it in place (a request decoded plainly for long queues many).
    for (const node of verdict.accepted) pending.push(tree.token[node]);
    pending.push(verdict.bonus);
    return pending;
  }
  const keep: number[] = [];
  for (let row = 0; row <= rootRow; row++) keep.push(row);
  const next: number[] = [];
  for (const node of verdict.accepted) {
    const row = tree.draftRow[node];
    if (row !== -1) {
      if (next.length > 0) throw new Error(`draft forwarded node ${node} of ${tree.requestId} but not its parent`);
      keep.push(row);
    } else {
      next.push(tree.token[node]);
    }
  }
  next.push(verdict.bonus);
  draft.commit(slot, keep);
  return next;
}

export interface Emission {
  tokens: number[];
  finished?: 'eos' | 'length';
}

/**
 * The tokens a step appends to a request's output: accepted tokens then the bonus, cut after
 * the first end-of-sequence token or at the request's remaining allowance.
 */
export function emitTokens(
  tree: DraftTree,
  verdict: Verdict,
  remaining: number,
  eos: ReadonlySet<number>,
): Emission {
  const tokens: number[] = [];
  const candidates = verdict.accepted.map((n) => tree.token[n]);
  candidates.push(verdict.bonus);
  for (const token of candidates) {
    tokens.push(token);
    if (eos.has(token)) return { tokens, finished: 'eos' };
    if (tokens.length === remaining) return { tokens, finished: 'length' };
  }
  return { tokens };
}
