// One request's draft tree for one step. Node 0 is the root: the request's last emitted token,
// which the target has not seen yet (depth -1). Every other node is a drafted token whose parent
// was forwarded by the draft model; a node is *verified* when the policy puts it into the
// Super-Tree. Ids grow in creation order and a child is always created after its parent, so
// id order is a topological order (parents before children).
import type { GrantKind, TreeNode } from '../shared/events.js';
import type { ConfidenceSignal } from '../shared/config.js';

/** The draft model's top-k continuation of one forwarded node, best first. */
export interface Candidates {
  tokens: Int32Array;
  /** log q of each candidate token (log-softmax of the draft logits). */
  logq: Float32Array;
  /** Node id created from each candidate, -1 while it has not entered the tree. */
  childId: Int32Array;
}

/**
 * One step's score: the candidate at `rank` among its parent's candidates (`logq`, best first).
 * With a single candidate there is no runner-up to compare with, and the margin is 0 (certain);
 * policies that read the margin keep at least two candidates per node.
 */
export function stepScore(logq: ArrayLike<number>, rank: number, signal: ConfidenceSignal): number {
  // Clamped at 0: float rounding must never let a score rise along a path.
  if (signal === 'path-prob') return Math.min(0, logq[rank]);
  if (logq.length < 2) return 0;
  const best = Math.max(logq[0], logq[1]);
  const logPair = best + Math.log(Math.exp(logq[0] - best) + Math.exp(logq[1] - best));
  return Math.min(0, logq[rank] - logPair);
}

export const ROOT = 0;

export class DraftTree {
  readonly parent: number[] = [-1];
  readonly depth: number[] = [-1];
  readonly token: number[];
  readonly logq: number[] = [0];
  /** Σ log q along the path (the `path-prob` signal). */
  readonly pathScore: number[] = [0];
  /** Σ log q renormalised over each parent's two best candidates (the `path-margin` signal). */
  readonly marginScore: number[] = [0];
  /** Rank of the node among its parent's candidates (0 = the draft's top choice). */
  readonly rank: number[] = [0];
  readonly grant: GrantKind[] = ['root'];
  readonly paidBy: (string | undefined)[] = [undefined];
  readonly verified: boolean[] = [true];
  /** Row of the node in the draft model's scratch, -1 until the draft forwards it. */
  readonly draftRow: number[] = [-1];
  /** Candidates of each forwarded node; null until forwarded. */
  readonly candidates: (Candidates | null)[] = [null];
  /** Node ids per depth (index = depth). */
  readonly layers: number[][] = [];
  private verifiedDraftNodes = 0;

  constructor(
    readonly requestId: string,
    rootToken: number,
  ) {
    this.token = [rootToken];
  }

  get size(): number {
    return this.parent.length;
  }

  /** K_i: verified draft nodes (the root excluded). */
  get verifiedCount(): number {
    return this.verifiedDraftNodes;
  }

  /** Deepest drafted depth, -1 when nothing was drafted. */
  get maxDepth(): number {
    return this.layers.length - 1;
  }

  nodesAtDepth(depth: number): readonly number[] {
    return this.layers[depth] ?? [];
  }

  /** Records the draft's top-k continuation of a node the draft just forwarded at `row`. */
  setCandidates(node: number, row: number, tokens: Int32Array, logq: Float32Array): void {
    if (this.candidates[node] !== null) throw new Error(`node ${node} of ${this.requestId} was already expanded`);
    this.draftRow[node] = row;
    this.candidates[node] = { tokens, logq, childId: new Int32Array(tokens.length).fill(-1) };
  }

  /** Makes the parent's candidate at `rank` a node of the tree (not yet verified). */
  addChild(parentId: number, rank: number, grant: GrantKind = 'base', paidBy?: string): number {
    const cands = this.candidates[parentId];
    if (!cands) throw new Error(`node ${parentId} of ${this.requestId} has no candidates: the draft has not forwarded it`);
    if (rank < 0 || rank >= cands.tokens.length) {
      throw new Error(`candidate rank ${rank} out of range (node ${parentId} has ${cands.tokens.length})`);
    }
    if (cands.childId[rank] !== -1) return cands.childId[rank];
    const id = this.parent.length;
    const depth = this.depth[parentId] + 1;
    const logq = stepScore(cands.logq, rank, 'path-prob');
    this.parent.push(parentId);
    this.depth.push(depth);
    this.token.push(cands.tokens[rank]);
    this.logq.push(logq);
    this.pathScore.push(this.pathScore[parentId] + logq);
    this.marginScore.push(this.marginScore[parentId] + stepScore(cands.logq, rank, 'path-margin'));
    this.rank.push(rank);
    this.grant.push(grant);
    this.paidBy.push(paidBy);
    this.verified.push(false);
    this.draftRow.push(-1);
    this.candidates.push(null);
    cands.childId[rank] = id;
    (this.layers[depth] ??= []).push(id);
    return id;
  }

  /** Adds the parent's first `k` candidates as children; returns their ids. */
  addTopChildren(parentId: number, k: number, grant: GrantKind = 'base'): number[] {
    const cands = this.candidates[parentId];
    if (!cands) throw new Error(`node ${parentId} of ${this.requestId} has no candidates: the draft has not forwarded it`);
    const n = Math.min(k, cands.tokens.length);
    const ids: number[] = [];
    for (let r = 0; r < n; r++) ids.push(this.addChild(parentId, r, grant));
    return ids;
  }

  /** Puts a drafted node into the Super-Tree. Its parent must already be verified. */
  verify(node: number, grant?: GrantKind, paidBy?: string): void {
    if (node <= ROOT || node >= this.size) throw new Error(`cannot verify node ${node} of ${this.requestId}`);
    if (!this.verified[this.parent[node]]) {
      throw new Error(`node ${node} of ${this.requestId} verified before its parent ${this.parent[node]}`);
    }
    if (grant !== undefined) this.grant[node] = grant;
    if (paidBy !== undefined) this.paidBy[node] = paidBy;
    if (this.verified[node]) return;
    this.verified[node] = true;
    this.verifiedDraftNodes++;
  }

  /** Node `id` as a step event records it, without its token text and `paidBy` (added by the step event in that order). */
  nodeRecord(id: number): TreeNode {
    return {
      id,
      parent: this.parent[id],
      depth: this.depth[id],
      token: this.token[id],
      logq: this.logq[id],
      pathScore: this.pathScore[id],
      grant: this.grant[id],
      verified: this.verified[id],
    };
  }

  /** Verified children of a node, best draft rank first (the order verification tries them). */
  verifiedChildren(node: number): number[] {
    const cands = this.candidates[node];
    if (!cands) return [];
    const out: number[] = [];
    for (let r = 0; r < cands.childId.length; r++) {
      const child = cands.childId[r];
      if (child !== -1 && this.verified[child]) out.push(child);
    }
    return out;
  }

  /** Node ids along the path root → node, root excluded. */
  pathTo(node: number): number[] {
    const path: number[] = [];
    for (let n = node; n !== ROOT; n = this.parent[n]) path.push(n);
    return path.reverse();
  }
}
