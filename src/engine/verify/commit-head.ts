// KV compaction of an EAGLE-3 head after verification. A head's row at a committed position reads
// the target's features there, which its drafted rows did not have (they read their parent's
// output), so the head keeps only the pending chain it forwarded with features and drafts nothing
// into its history: every accepted token and the bonus become pending again, each with the
// target's features of the token before it (the root's row, then the accepted rows, from this
// step's verification forward).
import type { DraftHeadSession } from '../model/types.js';
import type { DraftTree } from '../tree.js';
import type { Verdict } from './greedy.js';
import type { PackedRequest } from './pack.js';

/**
 * The verification forward's features: `data` holds the rows it returned them for (greedy
 * verification returns only rows it can accept), `rowIndex[packedRow]` says where, -1 if absent.
 */
export interface VerifiedFeatures {
  data: Float32Array;
  rowIndex: Int32Array;
}

/**
 * Commits the head's kept rows and queues the verification's features; returns the head's pending
 * tokens for the next step.
 */
export function commitHead(
  head: DraftHeadSession,
  slot: number,
  tree: DraftTree,
  pending: number[],
  verdict: Verdict,
  packed: PackedRequest,
  features: VerifiedFeatures,
): number[] {
  const width = head.featureWidth;
  const rootRow = tree.draftRow[0];
  // Not drafted this step: what it has not read stays pending (appended to in place), its features still queued.
  const next = rootRow === -1 ? pending : [];
  if (rootRow !== -1) head.commit(slot, Array.from({ length: rootRow + 1 }, (_, j) => j));
  const rows = [packed.offset, ...verdict.accepted.map((node) => packed.offset + packed.rowOfNode[node])];
  for (const row of rows) {
    const at = features.rowIndex[row];
    if (at === -1) throw new Error(`the target returned no features for accepted row ${row}`);
    head.pushFeatures(slot, features.data.subarray(at * width, (at + 1) * width));
  }
  for (const node of verdict.accepted) next.push(tree.token[node]);
  next.push(verdict.bonus);
  return next;
}
