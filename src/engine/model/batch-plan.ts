// The batch plan of one packed forward: every index and mask the decoder graph is fed, computed from
// the entries and what their slots already hold. Pure: no onnxruntime, no buffers; the session
// (session.ts) runs the graph on it and stores the new keys and values (kv-store.ts).
//
// Terms: an entry's new tokens are packed one after another into rows [row, row + len) of the
// batch; attention runs per query group (an entry's tokens in chunks of `chunk` queries); a group
// gathers its request's past from the KV buffers in blocks of PAST_BLOCK rows and sees it as mask
// columns [0, pastLen), then the entry's new tokens as columns [pastLen, pastLen + longest).
import { MASK_HIDDEN, PAST_BLOCK } from './graph-builder.js';
import type { AttentionWindow } from './types.js';

/**
 * The past blocks a request's groups gather: its first `sinkBlocks`, then, `gapBlocks` further on,
 * the rest up to its last row. Without a window, or when the window reaches back to the sinks,
 * every block and no gap.
 */
export interface PastPlan {
  blocks: number;
  sinkBlocks: number;
  gapBlocks: number;
}

/** The blocks of its slot a request's past is gathered from, for `committed` rows and `scratch` nodes. */
export function pastPlan(committed: number, scratch: number, window: AttentionWindow | null): PastPlan {
  const all = Math.ceil((committed + scratch) / PAST_BLOCK);
  if (window !== null) {
    const sinkBlocks = Math.ceil(window.sink / PAST_BLOCK);
    // The oldest committed row a query of this forward (position ≥ committed) can still see.
    const recentBlock = Math.floor(Math.max(0, committed - window.recent + 1) / PAST_BLOCK);
    if (recentBlock > sinkBlocks) return { blocks: sinkBlocks + all - recentBlock, sinkBlocks, gapBlocks: recentBlock - sinkBlocks };
  }
  return { blocks: all, sinkBlocks: all, gapBlocks: 0 };
}

/**
 * What one query group costs in attention beyond its query rows, in query rows: a group gathers
 * and joins its request's whole past and new keys once, and every query row in it scores against
 * all of them. Chosen by timing forwards of the demo target (batch 1–64, trees of 1–64 tokens,
 * `docs/model-runtime.md`): 8 was as fast as or faster than 0.5, 1, 2 and 4 in every shape.
 */
export const GROUP_COST_IN_QUERY_ROWS = 8;

/**
 * Queries per attention group for a forward of entries of these lengths. Attention pads every
 * group to the same number of queries, so one deep tree among 63 one-token entries padded all 64
 * to its depth; splitting long entries into chunks of `chunk` queries (each chunk still sees the
 * entry's past and all its new tokens) trades padded query rows for extra groups. Picks the chunk
 * with the least Σ groups × (GROUP_COST + chunk): for one entry that is the whole entry.
 */
export function queryChunk(lengths: readonly number[]): number {
  const longest = Math.max(...lengths);
  let best = longest;
  let bestCost = Infinity;
  for (let chunk = longest; chunk >= 1; chunk--) {
    let groups = 0;
    for (const len of lengths) groups += Math.ceil(len / chunk);
    const cost = groups * (GROUP_COST_IN_QUERY_ROWS + chunk);
    if (cost < bestCost) {
      best = chunk;
      bestCost = cost;
    }
  }
  return best;
}

/** One entry of a forward (at least one token), with what its slot holds before it. */
export interface PlanEntry {
  slot: number;
  tokens: ArrayLike<number>;
  /** Per new token: -1 (a child of the slot's last committed token) or a scratch node index. */
  parents: ArrayLike<number>;
  /** Accepted rows of the slot. */
  committed: number;
  /** Parent and depth of each scratch node forwarded since the slot's last commit. */
  scratchParents: readonly number[];
  scratchDepths: readonly number[];
}

/** What the plan needs of the session: its KV layout, its window and its attention heads. */
export interface PlanLayout {
  /** Rows of a slot in the KV buffers (a whole number of past blocks). */
  slotStride: number;
  /** Null: every query sees the whole past. */
  window: AttentionWindow | null;
  /** Query heads per KV head: the mask's rows repeat once per query head. */
  queryHeadsPerKv: number;
}

/** The decoder graph's index and mask inputs for one forward (graph-builder.ts names them alike). */
export interface BatchPlan {
  /** Packed new tokens, N. */
  tokens: number;
  /** The longest entry's new tokens: key columns per group after the past. */
  longest: number;
  /** Queries per group, and groups. */
  chunk: number;
  groups: number;
  /** Past blocks gathered per group, and the mask's columns (pastBlocks·PAST_BLOCK + longest). */
  pastBlocks: number;
  width: number;
  /** [N] token ids and positions (committed length + depth in the tree). */
  inputIds: Int32Array;
  positions: Int32Array;
  /** [groups, chunk] packed row of each query (padding queries point at a real row). */
  gatherIndex: Int32Array;
  /** [groups, longest] packed row of each new-token key column. */
  keyIndex: Int32Array;
  /** [N] the (group · chunk + query) row each packed token's output is read back from. */
  scatterIndex: Int32Array;
  /** [groups, pastBlocks] block of the KV buffers each gathered past block comes from. */
  pastIndex: Int32Array;
  /** [groups, queryHeadsPerKv · chunk, width]: 0 where a query sees a key, MASK_HIDDEN elsewhere. */
  mask: Float32Array;
  /** Per entry, the tree depth of each new token (appended to the slot's scratch after the run). */
  depths: number[][];
  /** Share of query rows that are padding. */
  paddingWaste: number;
}

/** Depth of each new token of an entry: one below its parent's (depth 0 for a child of the root). */
function newTokenDepths(e: PlanEntry): number[] {
  const prior = e.scratchParents.length;
  const depths: number[] = [];
  for (let t = 0; t < e.parents.length; t++) {
    const p = e.parents[t];
    depths.push(p < 0 ? 0 : (p < prior ? e.scratchDepths[p] : depths[p - prior]) + 1);
  }
  return depths;
}

/**
 * The indices and mask of one forward. The entries are assumed valid (the session checks token ids,
 * parents and slot lengths first). A query sees the committed past (under the window), its own
 * ancestors among the scratch nodes and new tokens, and itself.
 */
export function planBatch(entries: readonly PlanEntry[], layout: PlanLayout): BatchPlan {
  const { window, slotStride } = layout;
  const plans = entries.map((e) => pastPlan(e.committed, e.scratchParents.length, window));
  const n = entries.reduce((sum, e) => sum + e.tokens.length, 0);
  const longest = Math.max(...entries.map((e) => e.tokens.length));
  // With one query head per KV head, a one-token group would give the attention's MatMuls a single
  // row, which onnxruntime 1.30 multiplies on a path of its own that sums in another order than the
  // one for two rows or more: a decoded row would differ in the last bits from the same row verified
  // in a tree (docs/model-runtime.md, "Batch invariance"). A padding query keeps them at two rows.
  const chunk = Math.max(queryChunk(entries.map((e) => e.tokens.length)), layout.queryHeadsPerKv === 1 ? 2 : 1);
  const groups = entries.reduce((sum, e) => sum + Math.ceil(e.tokens.length / chunk), 0);
  // The past is gathered in whole blocks, at least one (masked) so every tensor is non-empty;
  // columns past a request's own rows stay hidden.
  const pastBlocks = Math.max(1, ...plans.map((p) => p.blocks));
  const pastLen = pastBlocks * PAST_BLOCK;
  const width = pastLen + longest;
  const inputIds = new Int32Array(n);
  const positions = new Int32Array(n);
  const gatherIndex = new Int32Array(groups * chunk);
  const keyIndex = new Int32Array(groups * longest);
  const scatterIndex = new Int32Array(n);
  const pastIndex = new Int32Array(groups * pastBlocks);
  // One row per (group, query); repeated below for the query heads of a KV head.
  const mask = new Float32Array(groups * chunk * width).fill(MASK_HIDDEN);
  const depthsOf: number[][] = [];

  // Whether a query at `position` sees a key at `keyPosition` (≤ position) under the window.
  const sees = (position: number, keyPosition: number): boolean =>
    window === null || keyPosition < window.sink || position - keyPosition < window.recent;
  let row = 0;
  let group = 0;
  for (const [entryIndex, e] of entries.entries()) {
    const prior = e.scratchParents.length;
    const len = e.tokens.length;
    const committed = e.committed;
    const depths = newTokenDepths(e);
    const parentOf = (idx: number): number => (idx < prior ? e.scratchParents[idx] : e.parents[idx - prior]);
    const plan = plans[entryIndex];
    const sinkRows = plan.sinkBlocks * PAST_BLOCK;
    // Gathered column of a slot row (of a gathered block).
    const colOf = (slotRow: number): number => (slotRow < sinkRows ? slotRow : slotRow - plan.gapBlocks * PAST_BLOCK);
    for (let t = 0; t < len; t++) {
      inputIds[row + t] = e.tokens[t];
      positions[row + t] = committed + depths[t];
    }
    const firstBlock = (e.slot * slotStride) / PAST_BLOCK;
    for (let first = 0; first < len; first += chunk, group++) {
      // Blocks past the request's own stay hidden in the mask: any of its blocks will do.
      for (let j = 0; j < pastBlocks; j++) {
        const block = j >= plan.blocks ? 0 : j < plan.sinkBlocks ? j : j + plan.gapBlocks;
        pastIndex[group * pastBlocks + j] = firstBlock + block;
      }
      // Key columns past the entry's tokens point at a real row; the mask hides them.
      for (let t = 0; t < longest; t++) keyIndex[group * longest + t] = row + (t < len ? t : 0);
      for (let c = 0; c < chunk; c++) {
        const t = first + c;
        const maskRow = (group * chunk + c) * width;
        if (t >= len) {
          // Padding query: point it at a real row and let it see every key. Its output is never
          // gathered back; hiding all but one key would fill its softmax row with denormals
          // (exp of the masked scores), which onnxruntime's CPU kernels handle slowly.
          gatherIndex[group * chunk + c] = row;
          mask.fill(0, maskRow, maskRow + width);
          continue;
        }
        const packed = row + t;
        gatherIndex[group * chunk + c] = packed;
        scatterIndex[packed] = group * chunk + c;
        const position = committed + depths[t];
        if (window === null) {
          mask.fill(0, maskRow, maskRow + committed);
        } else {
          const sinkEnd = Math.min(committed, window.sink);
          mask.fill(0, maskRow, maskRow + sinkEnd);
          for (let k = Math.max(sinkEnd, position - window.recent + 1); k < committed; k++) mask[maskRow + colOf(k)] = 0;
        }
        mask[maskRow + pastLen + t] = 0;
        for (let a = e.parents[t]; a >= 0; a = parentOf(a)) {
          if (a < prior) {
            // An earlier forward's scratch node: its row follows the committed ones in the past.
            if (sees(position, committed + e.scratchDepths[a])) mask[maskRow + colOf(committed + a)] = 0;
          } else if (sees(position, committed + depths[a - prior])) {
            mask[maskRow + pastLen + (a - prior)] = 0;
          }
        }
      }
    }
    depthsOf.push(depths);
    row += len;
  }

  const copies = layout.queryHeadsPerKv;
  return {
    tokens: n,
    longest,
    chunk,
    groups,
    pastBlocks,
    width,
    inputIds,
    positions,
    gatherIndex,
    keyIndex,
    scatterIndex,
    pastIndex,
    mask: copies === 1 ? mask : repeatMaskRows(mask, groups, chunk * width, copies),
    depths: depthsOf,
    paddingWaste: (groups * chunk - n) / (groups * chunk),
  };
}

/**
 * The mask's rows, [groups, T·width], laid out for the graph's scores, [groups, G·T, width]: each
 * group's T rows repeated once per query head of a KV head.
 */
function repeatMaskRows(mask: Float32Array, groups: number, groupFloats: number, copies: number): Float32Array {
  const out = new Float32Array(groups * copies * groupFloats);
  for (let b = 0; b < groups; b++) {
    const rows = mask.subarray(b * groupFloats, (b + 1) * groupFloats);
    for (let c = 0; c < copies; c++) out.set(rows, (b * copies + c) * groupFloats);
  }
  return out;
}

/** The output heads' rows in one list (graph input head_rows), how it splits, and top-k's k. */
export interface HeadRowsPlan {
  rows: Int32Array;
  /** Rows for logits, top-k and argmax, in that order. */
  split: [number, number, number];
  k: number;
}

/**
 * The rows each output head reads, logits then top-k then argmax. onnxruntime runs every node
 * whatever is fetched, so heads that were not asked for get zero rows and cost nothing. Except
 * top-k: TopK on zero rows kills the process in onnxruntime 1.30 (SIGFPE), so it gets one row with
 * k = 1.
 */
export function planHeadRows(logitsRows: readonly number[], topkRows: readonly number[], argmaxRows: readonly number[], topk: number): HeadRowsPlan {
  const topkFed = topkRows.length ? topkRows : [0];
  const rows = new Int32Array(logitsRows.length + topkFed.length + argmaxRows.length);
  rows.set(logitsRows, 0);
  rows.set(topkFed, logitsRows.length);
  rows.set(argmaxRows, logitsRows.length + topkFed.length);
  return { rows, split: [logitsRows.length, topkFed.length, argmaxRows.length], k: topkRows.length ? topk : 1 };
}
