// ModelSession on onnxruntime-node: persistent per-slot KV buffers, tree masks, packed forwards.
//
// KV layout per layer: one Float32Array [kvHeads, slots * stride, headDim] for K and one for V,
// passed to every run() as inputs (onnxruntime wraps CPU input buffers without copying); stride is
// maxLength rounded up to whole PAST_BLOCKs, the unit in which the graph gathers a past. Row
// slot*stride + r of each head holds position r of the slot's sequence: rows [0, committed)
// are the accepted history, rows [committed, committed + scratch) the tree nodes forwarded since
// the last commit. The graph returns only the new tokens' K/V; this class writes them into
// scratch rows, and a commit moves the kept nodes' rows down to follow the committed ones: no
// step ever copies the past.
import * as ort from 'onnxruntime-node';
import { MASK_HIDDEN, PAST_BLOCK } from './graph-builder.js';
import { ModelUsageError } from './errors.js';
import { AttentionWindowSchema } from '../../shared/config.js';
import type { AttentionWindow, ForwardEntry, ForwardOutputs, ForwardResult, ModelInfo, ModelSession } from './types.js';

interface SlotState {
  inUse: boolean;
  committed: number;
  /** Parent (scratch index or -1) and depth of each scratch node. */
  parents: number[];
  depths: number[];
}

/** Feeds and fetches a graph adds to the common ones (an EAGLE-3 head's incoming hidden states). */
export interface ExtraIO {
  feeds: Record<string, ort.Tensor>;
  fetches: string[];
}

export interface OrtSessionParts {
  info: ModelInfo;
  session: ort.InferenceSession;
  slots: number;
  maxLength: number;
  provider: 'cpu' | 'cuda';
  /** Null or absent: every query sees the whole past. */
  window?: AttentionWindow | null;
}

/**
 * The past blocks a request's groups gather: its first `sinkBlocks`, then, `gapBlocks` further on,
 * the rest up to its last row. Without a window, or when the window reaches back to the sinks,
 * every block and no gap.
 */
interface PastPlan {
  blocks: number;
  sinkBlocks: number;
  gapBlocks: number;
}

/** What is wrong with an attention window, or null when nothing is (loadModel and setWindow check alike). */
export function windowProblem(window: AttentionWindow): string | null {
  return AttentionWindowSchema.safeParse(window).success
    ? null
    : `attention window: sink must be an integer ≥ 0 and recent an integer ≥ 1, got ${window.sink} and ${window.recent}`;
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

export class OrtModelSession implements ModelSession {
  readonly info: ModelInfo;
  readonly capacity: number;
  /** Longest sequence (committed + scratch) a slot can hold. */
  readonly maxLength: number;
  /** The execution provider actually in use. */
  readonly provider: 'cpu' | 'cuda';
  /** What a query sees of the committed past; null = all of it (setWindow changes it). */
  private currentWindow: AttentionWindow | null;
  private readonly session: ort.InferenceSession;
  private readonly rowSize: number;
  private readonly kvHeads: number;
  private readonly headDim: number;
  /** Rows of a slot in the buffers: maxLength rounded up to whole past blocks. */
  private readonly slotStride: number;
  /** Floats between one KV head's rows and the next head's in a buffer. */
  private readonly headStride: number;
  private readonly keys: Float32Array[] = [];
  private readonly values: Float32Array[] = [];
  private readonly keyTensors: ort.Tensor[] = [];
  private readonly valueTensors: ort.Tensor[] = [];
  private readonly slotStates: SlotState[];
  private released = false;
  /** Slot bookkeeping is updated after run() resolves, so forwards must not overlap. */
  private inFlight = false;

  constructor(parts: OrtSessionParts) {
    this.info = parts.info;
    this.session = parts.session;
    this.capacity = parts.slots;
    this.maxLength = parts.maxLength;
    this.provider = parts.provider;
    // Checked by loadModel, before onnxruntime loads anything.
    this.currentWindow = parts.window ?? null;
    this.rowSize = parts.info.numKvHeads * parts.info.headDim;
    // Head-major, [kvH, slots·stride, hd]: the graph gathers a request's past straight into the
    // layout its attention MatMuls read (graph-builder.ts).
    this.kvHeads = parts.info.numKvHeads;
    this.headDim = parts.info.headDim;
    this.slotStride = Math.ceil(parts.maxLength / PAST_BLOCK) * PAST_BLOCK;
    this.headStride = parts.slots * this.slotStride * parts.info.headDim;
    // Fed as [kvH, slots·stride/P, P·hd]: the graph gathers the past in blocks of P = PAST_BLOCK rows.
    const dims = [parts.info.numKvHeads, (parts.slots * this.slotStride) / PAST_BLOCK, PAST_BLOCK * parts.info.headDim];
    for (let l = 0; l < parts.info.numLayers; l++) {
      const k = new Float32Array(parts.slots * this.slotStride * this.rowSize);
      const v = new Float32Array(parts.slots * this.slotStride * this.rowSize);
      this.keys.push(k);
      this.values.push(v);
      this.keyTensors.push(new ort.Tensor('float32', k, dims));
      this.valueTensors.push(new ort.Tensor('float32', v, dims));
    }
    this.slotStates = Array.from({ length: parts.slots }, () => ({ inUse: false, committed: 0, parents: [], depths: [] }));
  }

  get window(): AttentionWindow | null {
    return this.currentWindow;
  }

  /**
   * Changes what later forwards see of the committed past. Only while no slot is in use: past the
   * first layer a stored row depends on the window it was computed under, so a request must be
   * run under one window from its prefill on (a sweep changes it between runs).
   */
  setWindow(window: AttentionWindow | null): void {
    this.assertLive();
    const inUse = this.slotStates.filter((s) => s.inUse).length;
    if (inUse > 0) throw new ModelUsageError(`setWindow: ${inUse} slot(s) in use; a request's rows were computed under the window it started with`);
    const problem = window === null ? null : windowProblem(window);
    if (problem !== null) throw new ModelUsageError(problem);
    this.currentWindow = window;
  }

  /** Bytes held by the KV buffers (fixed at load; they never grow). */
  get kvBufferBytes(): number {
    return this.keys.length * 2 * this.capacity * this.slotStride * this.rowSize * 4;
  }

  allocSlot(): number {
    this.assertLive();
    const slot = this.slotStates.findIndex((s) => !s.inUse);
    if (slot < 0) throw new ModelUsageError(`no free KV slot: all ${this.capacity} are in use (load the model with more slots)`);
    const s = this.slotStates[slot];
    s.inUse = true;
    s.committed = 0;
    s.parents = [];
    s.depths = [];
    return slot;
  }

  freeSlot(slot: number): void {
    const s = this.slot(slot);
    this.assertIdle('freeSlot', slot);
    s.inUse = false;
    s.committed = 0;
    s.parents = [];
    s.depths = [];
  }

  committedLength(slot: number): number {
    return this.slot(slot).committed;
  }

  scratchSize(slot: number): number {
    return this.slot(slot).parents.length;
  }

  async forward(allEntries: ForwardEntry[], outputs: ForwardOutputs): Promise<ForwardResult> {
    return (await this.forwardWith(allEntries, outputs, null)).result;
  }

  /** `forward`, plus the graph's extra inputs and outputs (extra outputs come back as float32 data). */
  async forwardWith(
    allEntries: ForwardEntry[],
    outputs: ForwardOutputs,
    extra: ExtraIO | null,
  ): Promise<{ result: ForwardResult; extra: Record<string, Float32Array> }> {
    this.assertLive();
    if (this.inFlight) throw new ModelUsageError('a forward is already running on this session; await it first');
    for (const e of allEntries) this.slot(e.slot);
    // Entries without tokens (e.g. a one-token prompt's empty prefill) contribute nothing.
    const entries = allEntries.filter((e) => e.tokens.length > 0);
    if (entries.length === 0) {
      const asked = (outputs.logitsRows?.length ?? 0) + (outputs.topkRows?.length ?? 0) + (outputs.argmaxRows?.length ?? 0) + (outputs.featureRows?.length ?? 0);
      if (asked > 0) throw new ModelUsageError('outputs were asked for rows of a forward without tokens');
      return { result: { paddingWaste: 0, runMs: 0, tokens: 0 }, extra: {} };
    }
    const seen = new Set<number>();
    // Per entry, the past blocks its groups gather (computed once: it sizes pastLen and fills past_index).
    const plans: PastPlan[] = [];
    let n = 0;
    let tMax = 0;
    let pastLen = 1; // at least one (masked) past row keeps every tensor non-empty
    const vocab = this.info.vocabSize;
    for (const e of entries) {
      const s = this.slot(e.slot);
      if (seen.has(e.slot)) throw new ModelUsageError(`slot ${e.slot} appears twice in one forward`);
      seen.add(e.slot);
      const len = e.tokens.length;
      if (e.parents.length !== len) throw new ModelUsageError(`entry for slot ${e.slot}: ${len} tokens but ${e.parents.length} parents`);
      const prior = s.parents.length;
      for (let t = 0; t < len; t++) {
        const tok = e.tokens[t];
        if (!Number.isInteger(tok) || tok < 0 || tok >= vocab) throw new ModelUsageError(`slot ${e.slot}: token id ${tok} is outside the vocabulary [0, ${vocab})`);
        const p = e.parents[t];
        if (!Number.isInteger(p) || p < -1 || p >= prior + t) {
          throw new ModelUsageError(`slot ${e.slot}: parent ${p} of token ${t} must be -1 or a scratch node before it (< ${prior + t})`);
        }
      }
      const needed = s.committed + prior + len;
      if (needed > this.maxLength) {
        throw new ModelUsageError(`slot ${e.slot} would hold ${needed} rows, over the session's maxLength ${this.maxLength}`);
      }
      n += len;
      tMax = Math.max(tMax, len);
      const plan = pastPlan(s.committed, prior, this.currentWindow);
      plans.push(plan);
      pastLen = Math.max(pastLen, plan.blocks * PAST_BLOCK);
    }
    const rowsOf = (rows: number[] | undefined, what: string): number[] => {
      for (const r of rows ?? []) {
        if (!Number.isInteger(r) || r < 0 || r >= n) throw new ModelUsageError(`${what} row ${r} is outside the ${n} packed tokens`);
      }
      return rows ?? [];
    };
    const logitsRows = rowsOf(outputs.logitsRows, 'logits');
    const topkRows = rowsOf(outputs.topkRows, 'top-k');
    const argmaxRows = rowsOf(outputs.argmaxRows, 'argmax');
    const featureRows = rowsOf(outputs.featureRows, 'feature');
    const hasFeatures = this.info.featureWidth !== undefined;
    if (featureRows.length > 0 && !hasFeatures) throw new ModelUsageError(`${this.info.dir} was not loaded with EAGLE-3 features; it cannot return them`);
    const topk = outputs.topk ?? 1;
    if (topkRows.length > 0 && (!Number.isInteger(topk) || topk < 1 || topk > vocab)) {
      throw new ModelUsageError(`topk ${topk} must be an integer in [1, ${vocab}]`);
    }

    // Attention runs per query group: an entry's tokens in chunks of `chunk` queries, each chunk
    // seeing the entry's past and all its new tokens as keys (see queryChunk).
    const chunk = queryChunk(entries.map((e) => e.tokens.length));
    const groups = entries.reduce((sum, e) => sum + Math.ceil(e.tokens.length / chunk), 0);
    // The past is gathered in whole blocks; columns past a request's rows stay hidden.
    const pastBlocks = Math.ceil(pastLen / PAST_BLOCK);
    pastLen = pastBlocks * PAST_BLOCK;
    const width = pastLen + tMax;
    const inputIds = new Int32Array(n);
    const positions = new Int32Array(n);
    const gatherIndex = new Int32Array(groups * chunk);
    const keyIndex = new Int32Array(groups * tMax);
    const scatterIndex = new Int32Array(n);
    const pastIndex = new Int32Array(groups * pastBlocks);
    // One row per (group, query); repeated below for the G query heads of a KV head, the layout
    // the graph's scores have ([B, G·T, L+K]).
    const mask = new Float32Array(groups * chunk * width).fill(MASK_HIDDEN);
    // Scratch-node depth of every new token, appended to the slot after the run succeeds.
    const newDepths: number[][] = [];

    const window = this.currentWindow;
    let row = 0;
    let group = 0;
    for (const [entryIndex, e] of entries.entries()) {
      const s = this.slotStates[e.slot];
      const prior = s.parents.length;
      const len = e.tokens.length;
      const depths: number[] = [];
      const parentOf = (idx: number): number => (idx < prior ? s.parents[idx] : e.parents[idx - prior]);
      const plan = plans[entryIndex];
      const sinkRows = plan.sinkBlocks * PAST_BLOCK;
      // Gathered column of a slot row (of a gathered block).
      const colOf = (slotRow: number): number => (slotRow < sinkRows ? slotRow : slotRow - plan.gapBlocks * PAST_BLOCK);
      // Whether a query at `position` sees a key at `keyPosition` (≤ position) under the window.
      const sees = (position: number, keyPosition: number): boolean =>
        window === null || keyPosition < window.sink || position - keyPosition < window.recent;
      for (let t = 0; t < len; t++) {
        const packed = row + t;
        inputIds[packed] = e.tokens[t];
        const p = e.parents[t];
        const depth = p < 0 ? 0 : (p < prior ? s.depths[p] : depths[p - prior]) + 1;
        depths.push(depth);
        positions[packed] = s.committed + depth;
      }
      const firstBlock = (e.slot * this.slotStride) / PAST_BLOCK;
      for (let first = 0; first < len; first += chunk, group++) {
        // Blocks past the request's own stay hidden in the mask: any of its blocks will do.
        for (let j = 0; j < pastBlocks; j++) {
          const block = j >= plan.blocks ? 0 : j < plan.sinkBlocks ? j : j + plan.gapBlocks;
          pastIndex[group * pastBlocks + j] = firstBlock + block;
        }
        // Key columns past the entry's tokens point at a real row; the mask hides them.
        for (let t = 0; t < tMax; t++) keyIndex[group * tMax + t] = row + (t < len ? t : 0);
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
          const position = s.committed + depths[t];
          if (window === null) {
            mask.fill(0, maskRow, maskRow + s.committed);
          } else {
            const sinkEnd = Math.min(s.committed, window.sink);
            mask.fill(0, maskRow, maskRow + sinkEnd);
            for (let k = Math.max(sinkEnd, position - window.recent + 1); k < s.committed; k++) mask[maskRow + colOf(k)] = 0;
          }
          mask[maskRow + pastLen + t] = 0;
          for (let a = e.parents[t]; a >= 0; a = parentOf(a)) {
            if (a < prior) {
              if (sees(position, s.committed + s.depths[a])) mask[maskRow + colOf(s.committed + a)] = 0;
            } else if (sees(position, s.committed + depths[a - prior])) {
              mask[maskRow + pastLen + (a - prior)] = 0;
            }
          }
        }
      }
      newDepths.push(depths);
      row += len;
    }

    const queryHeadsPerKv = this.info.numHeads / this.kvHeads;
    const headMask = queryHeadsPerKv === 1 ? mask : repeatMaskRows(mask, groups, chunk * width, queryHeadsPerKv);
    // The heads' rows in one list, logits then top-k then argmax. onnxruntime runs every node
    // whatever is fetched (checked in the tests), so heads that were not asked for get zero rows
    // and cost nothing. Except top-k: TopK on zero rows kills the process in onnxruntime 1.30
    // (SIGFPE), so it gets one row with k = 1.
    const topkFed = topkRows.length ? topkRows : [0];
    const headRows = new Int32Array(logitsRows.length + topkFed.length + argmaxRows.length);
    headRows.set(logitsRows, 0);
    headRows.set(topkFed, logitsRows.length);
    headRows.set(argmaxRows, logitsRows.length + topkFed.length);
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int32', inputIds, [n]),
      positions: new ort.Tensor('int32', positions, [n]),
      gather_index: new ort.Tensor('int32', gatherIndex, [groups, chunk]),
      key_index: new ort.Tensor('int32', keyIndex, [groups, tMax]),
      scatter_index: new ort.Tensor('int32', scatterIndex, [n]),
      past_index: new ort.Tensor('int32', pastIndex, [groups, pastBlocks]),
      attn_mask: new ort.Tensor('float32', headMask, [groups, queryHeadsPerKv * chunk, width]),
      head_rows: new ort.Tensor('int32', headRows, [headRows.length]),
      head_split: new ort.Tensor('int64', BigInt64Array.of(BigInt(logitsRows.length), BigInt(topkFed.length), BigInt(argmaxRows.length)), [3]),
      topk_k: new ort.Tensor('int64', BigInt64Array.of(BigInt(topkRows.length ? topk : 1)), [1]),
    };
    const fetches: string[] = [];
    if (hasFeatures) feeds.feature_rows = new ort.Tensor('int32', Int32Array.from(featureRows), [featureRows.length]);
    if (featureRows.length) fetches.push('features');
    if (extra !== null) {
      Object.assign(feeds, extra.feeds);
      fetches.push(...extra.fetches);
    }
    for (let l = 0; l < this.info.numLayers; l++) {
      feeds[`past_key_${l}`] = this.keyTensors[l];
      feeds[`past_value_${l}`] = this.valueTensors[l];
      fetches.push(`new_key_${l}`, `new_value_${l}`);
    }
    if (logitsRows.length) fetches.push('logits');
    if (topkRows.length) fetches.push('topk_logprobs', 'topk_ids');
    if (argmaxRows.length) fetches.push('argmax');

    const t0 = performance.now();
    let out: ort.InferenceSession.ReturnType;
    this.inFlight = true;
    try {
      out = await this.session.run(feeds, fetches);
    } finally {
      this.inFlight = false;
    }
    const runMs = performance.now() - t0;

    // Store the new tokens' K/V ([N, kvH, hd], row-major as the graph computes them) in each
    // slot's scratch rows of the head-major buffers, then record the nodes. Plain loops: most
    // entries are a row or two, where subarray() + set() cost more in view objects than in copying.
    const hd = this.headDim;
    const rowFloats = this.kvHeads * hd;
    for (let l = 0; l < this.info.numLayers; l++) {
      const newK = out[`new_key_${l}`].data as Float32Array;
      const newV = out[`new_value_${l}`].data as Float32Array;
      const keys = this.keys[l];
      const values = this.values[l];
      let packedRow = 0;
      for (const e of entries) {
        const s = this.slotStates[e.slot];
        const firstRow = e.slot * this.slotStride + s.committed + s.parents.length;
        for (let t = 0; t < e.tokens.length; t++, packedRow++) {
          for (let h = 0; h < this.kvHeads; h++) {
            let from = packedRow * rowFloats + h * hd;
            let to = h * this.headStride + (firstRow + t) * hd;
            for (const end = from + hd; from < end; from++, to++) {
              keys[to] = newK[from];
              values[to] = newV[from];
            }
          }
        }
      }
    }
    for (let bi = 0; bi < entries.length; bi++) {
      const e = entries[bi];
      const s = this.slotStates[e.slot];
      for (let t = 0; t < e.tokens.length; t++) s.parents.push(e.parents[t]);
      s.depths.push(...newDepths[bi]);
    }
    for (const name of Object.keys(out)) if (name.startsWith('new_')) out[name].dispose();

    const result: ForwardResult = { paddingWaste: (groups * chunk - n) / (groups * chunk), runMs, tokens: n };
    if (logitsRows.length) result.logits = out.logits.data as Float32Array;
    if (topkRows.length) {
      result.topkLogprobs = out.topk_logprobs.data as Float32Array;
      result.topkIds = out.topk_ids.data as Int32Array;
    }
    if (argmaxRows.length) result.argmax = out.argmax.data as Int32Array;
    if (featureRows.length) result.features = out.features.data as Float32Array;
    const extraOut: Record<string, Float32Array> = {};
    for (const name of extra?.fetches ?? []) extraOut[name] = out[name].data as Float32Array;
    return { result, extra: extraOut };
  }

  commit(slot: number, keepScratch: number[]): void {
    const s = this.slot(slot);
    this.assertIdle('commit', slot);
    for (let j = 0; j < keepScratch.length; j++) {
      const idx = keepScratch[j];
      if (!Number.isInteger(idx) || idx < 0 || idx >= s.parents.length) {
        throw new ModelUsageError(`commit slot ${slot}: scratch node ${idx} does not exist (scratch size ${s.parents.length})`);
      }
      const expectedParent = j === 0 ? -1 : keepScratch[j - 1];
      if (s.parents[idx] !== expectedParent) {
        throw new ModelUsageError(`commit slot ${slot}: kept nodes must form a root-to-leaf path, but node ${idx}'s parent is ${s.parents[idx]}, not ${expectedParent}`);
      }
    }
    // Kept node j moves from row committed+idx to committed+j; idx >= j along a path (parents come
    // first), so copying in order never overwrites a row still to be read.
    for (let j = 0; j < keepScratch.length; j++) {
      const idx = keepScratch[j];
      if (idx === j) continue;
      const from = (slot * this.slotStride + s.committed + idx) * this.headDim;
      const to = (slot * this.slotStride + s.committed + j) * this.headDim;
      for (let l = 0; l < this.keys.length; l++) {
        for (let h = 0; h < this.kvHeads; h++) {
          const head = h * this.headStride;
          this.keys[l].copyWithin(head + to, head + from, head + from + this.headDim);
          this.values[l].copyWithin(head + to, head + from, head + from + this.headDim);
        }
      }
    }
    s.committed += keepScratch.length;
    s.parents = [];
    s.depths = [];
  }

  clearScratch(slot: number): void {
    const s = this.slot(slot);
    this.assertIdle('clearScratch', slot);
    s.parents = [];
    s.depths = [];
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.session.release();
  }

  private slot(slot: number): SlotState {
    this.assertLive();
    const s = this.slotStates[slot];
    if (!Number.isInteger(slot) || s === undefined) throw new ModelUsageError(`slot ${slot} does not exist (capacity ${this.capacity})`);
    if (!s.inUse) throw new ModelUsageError(`slot ${slot} is not allocated`);
    return s;
  }

  private assertIdle(what: string, slot: number): void {
    if (this.inFlight) throw new ModelUsageError(`${what} slot ${slot}: a forward is still running; await it first`);
  }

  private assertLive(): void {
    if (this.released) throw new ModelUsageError('the model session was released');
  }
}
