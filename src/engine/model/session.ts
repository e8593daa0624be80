// ModelSession on onnxruntime-node: slots, packed forwards and commits.
//
// A slot's rows in the KV buffers (kv-store.ts): rows [0, committed) are the accepted history,
// rows [committed, committed + scratch) the tree nodes forwarded since the last commit. A forward
// checks its entries, plans the graph's indices and mask (batch-plan.ts), runs the graph, and
// writes the new tokens' K/V into scratch rows; a commit moves the kept nodes' rows down to follow
// the committed ones: no step ever copies the past.
import * as ort from 'onnxruntime-node';
import { planBatch, planHeadRows, type PlanEntry } from './batch-plan.js';
import { ModelUsageError } from './errors.js';
import { MAX_FEATURE_PATH_DEPTH } from './graph-builder.js';
import { KvStore } from './kv-store.js';
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

/** What is wrong with an attention window, or null when nothing is (loadModel and setWindow check alike). */
export function windowProblem(window: AttentionWindow): string | null {
  return AttentionWindowSchema.safeParse(window).success
    ? null
    : `attention window: sink must be an integer ≥ 0 and recent an integer ≥ 1, got ${window.sink} and ${window.recent}`;
}

export class OrtModelSession implements ModelSession {
  readonly info: ModelInfo;
  /** Longest sequence (committed + scratch) a slot can hold. */
  readonly maxLength: number;
  /** The execution provider actually in use. */
  readonly provider: 'cpu' | 'cuda';
  /** What a query sees of the committed past; null = all of it (setWindow changes it). */
  private currentWindow: AttentionWindow | null;
  private readonly session: ort.InferenceSession;
  private readonly kv: KvStore;
  private readonly slotStates: SlotState[];
  private released = false;
  /** Slot bookkeeping is updated after run() resolves, so forwards must not overlap. */
  private inFlight = false;
  /** The KV buffers are being reallocated (growSlots): no forward may read them half-copied. */
  private growing = false;

  constructor(parts: OrtSessionParts) {
    this.info = parts.info;
    this.session = parts.session;
    this.maxLength = parts.maxLength;
    this.provider = parts.provider;
    // Checked by loadModel, before onnxruntime loads anything.
    this.currentWindow = parts.window ?? null;
    this.kv = new KvStore(parts.info, parts.slots, parts.maxLength);
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

  /** Slots available in total: those loaded, or more after growSlots. */
  get capacity(): number {
    return this.slotStates.length;
  }

  /** Bytes held by the KV buffers (fixed at load until growSlots). */
  get kvBufferBytes(): number {
    return this.kv.bytes;
  }

  /**
   * Raises the slots to `slots` between forwards: the KV buffers are reallocated with every slot's
   * committed and scratch rows where they were, so requests in flight go on as if nothing
   * happened. The graph takes any number of slots (its KV inputs have a free dimension), so
   * nothing is rebuilt. Fewer slots than now is a no-op: lowering a batch leaves slots free.
   */
  async growSlots(slots: number, onProgress?: (done: number, total: number) => void): Promise<void> {
    this.assertLive();
    if (!Number.isInteger(slots) || slots < 1) throw new ModelUsageError(`growSlots: slots must be a positive integer, got ${slots}`);
    if (slots <= this.capacity) return;
    if (this.inFlight || this.growing) throw new ModelUsageError('growSlots: a forward or another reallocation is running; await it first');
    this.growing = true;
    try {
      await this.kv.grow(slots, async (layer, layers) => {
        onProgress?.(layer + 1, layers);
        // A turn of the event loop between layers, so a host can tell its clients how far it got.
        if (onProgress) await new Promise<void>((resolve) => setImmediate(resolve));
      });
      while (this.slotStates.length < slots) this.slotStates.push({ inUse: false, committed: 0, parents: [], depths: [] });
    } finally {
      this.growing = false;
    }
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
    if (this.growing) throw new ModelUsageError('the KV buffers are being reallocated (growSlots); await it first');
    for (const e of allEntries) this.slot(e.slot);
    // Entries without tokens (e.g. a one-token prompt's empty prefill) contribute nothing.
    const entries = allEntries.filter((e) => e.tokens.length > 0);
    if (entries.length === 0) {
      const asked = (outputs.logitsRows?.length ?? 0) + (outputs.topkRows?.length ?? 0) + (outputs.argmaxRows?.length ?? 0) + (outputs.featureRows?.length ?? 0);
      if (asked > 0) throw new ModelUsageError('outputs were asked for rows of a forward without tokens');
      return { result: { paddingWaste: 0, runMs: 0, tokens: 0 }, extra: {} };
    }
    const planEntries = this.checkEntries(entries);
    const n = planEntries.reduce((sum, e) => sum + e.tokens.length, 0);
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
    const featureParents = checkFeatureParents(outputs.featureParents, featureRows, argmaxRows);
    const vocab = this.info.vocabSize;
    const topk = outputs.topk ?? 1;
    if (topkRows.length > 0 && (!Number.isInteger(topk) || topk < 1 || topk > vocab)) {
      throw new ModelUsageError(`topk ${topk} must be an integer in [1, ${vocab}]`);
    }

    const queryHeadsPerKv = this.info.numHeads / this.info.numKvHeads;
    const plan = planBatch(planEntries, { slotStride: this.kv.slotStride, window: this.currentWindow, queryHeadsPerKv });
    const heads = planHeadRows(logitsRows, topkRows, argmaxRows, topk);
    const { groups, chunk, longest, pastBlocks, width } = plan;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int32', plan.inputIds, [n]),
      positions: new ort.Tensor('int32', plan.positions, [n]),
      gather_index: new ort.Tensor('int32', plan.gatherIndex, [groups, chunk]),
      key_index: new ort.Tensor('int32', plan.keyIndex, [groups, longest]),
      scatter_index: new ort.Tensor('int32', plan.scatterIndex, [n]),
      past_index: new ort.Tensor('int32', keyAndValueBlocks(plan.pastIndex, groups, pastBlocks, this.kv.valueBlockOffset), [groups, 2, pastBlocks]),
      attn_mask: new ort.Tensor('float32', plan.mask, [groups, 1, queryHeadsPerKv * chunk, width]),
      head_rows: new ort.Tensor('int32', heads.rows, [heads.rows.length]),
      head_split: new ort.Tensor('int64', BigInt64Array.from(heads.split, (rows) => BigInt(rows)), [3]),
      topk_k: new ort.Tensor('int64', BigInt64Array.of(BigInt(heads.k)), [1]),
    };
    const fetches: string[] = [];
    if (hasFeatures) {
      feeds.feature_rows = new ort.Tensor('int32', Int32Array.from(featureRows), [featureRows.length]);
      feeds.feature_parent = new ort.Tensor('int32', featureParents, [featureRows.length]);
    }
    if (featureRows.length) fetches.push('features', 'feature_kept');
    if (extra !== null) {
      Object.assign(feeds, extra.feeds);
      fetches.push(...extra.fetches);
    }
    this.kv.addFeeds(feeds);
    for (let l = 0; l < this.info.numLayers; l++) fetches.push(`new_kv_${l}`);
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

    // The new tokens' K/V go to each slot's scratch rows; then the slots record the new nodes.
    const newRows = planEntries.map((e) => ({ firstRow: e.slot * this.kv.slotStride + e.committed + e.scratchParents.length, count: e.tokens.length }));
    for (let l = 0; l < this.info.numLayers; l++) {
      this.kv.write(l, out[`new_kv_${l}`].data as Float32Array, newRows);
    }
    for (const [i, e] of entries.entries()) {
      const s = this.slotStates[e.slot];
      for (let t = 0; t < e.tokens.length; t++) s.parents.push(e.parents[t]);
      s.depths.push(...plan.depths[i]);
    }
    for (const name of Object.keys(out)) if (name.startsWith('new_')) out[name].dispose();

    const result: ForwardResult = { paddingWaste: plan.paddingWaste, runMs, tokens: n };
    if (logitsRows.length) result.logits = out.logits.data as Float32Array;
    if (topkRows.length) {
      result.topkLogprobs = out.topk_logprobs.data as Float32Array;
      result.topkIds = out.topk_ids.data as Int32Array;
    }
    if (argmaxRows.length) result.argmax = out.argmax.data as Int32Array;
    if (featureRows.length) {
      result.features = out.features.data as Float32Array;
      result.featureKept = out.feature_kept.data as Int32Array;
    }
    const extraOut: Record<string, Float32Array> = {};
    for (const name of extra?.fetches ?? []) extraOut[name] = out[name].data as Float32Array;
    return { result, extra: extraOut };
  }

  /**
   * Checks a forward's entries against their slots (each slot once, token ids in the vocabulary,
   * parents earlier scratch nodes, room under maxLength) and pairs each with its slot's state.
   */
  private checkEntries(entries: readonly ForwardEntry[]): PlanEntry[] {
    const seen = new Set<number>();
    const vocab = this.info.vocabSize;
    return entries.map((e) => {
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
      return { slot: e.slot, tokens: e.tokens, parents: e.parents, committed: s.committed, scratchParents: s.parents, scratchDepths: s.depths };
    });
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
    const firstRow = slot * this.kv.slotStride + s.committed;
    for (let j = 0; j < keepScratch.length; j++) {
      const idx = keepScratch[j];
      if (idx !== j) this.kv.moveRow(firstRow + idx, firstRow + j);
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

/**
 * The `feature_parent` feed: the given parents after checking them (each an earlier feature row or
 * -1, no deeper than the graph follows, argmax asked for exactly the feature rows), or all -1.
 */
function checkFeatureParents(parents: number[] | undefined, featureRows: readonly number[], argmaxRows: readonly number[]): Int32Array {
  const out = new Int32Array(featureRows.length).fill(-1);
  if (parents === undefined) return out;
  if (parents.length !== featureRows.length) throw new ModelUsageError(`featureParents has ${parents.length} entries for ${featureRows.length} feature rows`);
  if (argmaxRows.length !== featureRows.length || argmaxRows.some((r, i) => r !== featureRows[i])) {
    throw new ModelUsageError('featureParents needs argmaxRows to be exactly the feature rows, in order');
  }
  const depth = new Int32Array(featureRows.length);
  for (let i = 0; i < parents.length; i++) {
    const p = parents[i];
    if (!Number.isInteger(p) || p < -1 || p >= i) throw new ModelUsageError(`feature row ${i}'s parent ${p} is not an earlier feature row or -1`);
    depth[i] = p === -1 ? 0 : depth[p] + 1;
    if (depth[i] >= MAX_FEATURE_PATH_DEPTH) throw new ModelUsageError(`feature row ${i} is ${depth[i]} deep; the graph follows paths up to ${MAX_FEATURE_PATH_DEPTH - 1}`);
    out[i] = p;
  }
  return out;
}

/**
 * The graph's past_index, [groups, 2, pastBlocks]: per group its past's key blocks (the plan's),
 * then the same blocks of the value half of the KV buffers, `valueOffset` blocks on.
 */
export function keyAndValueBlocks(keyBlocks: Int32Array, groups: number, pastBlocks: number, valueOffset: number): Int32Array {
  const out = new Int32Array(2 * keyBlocks.length);
  for (let g = 0; g < groups; g++) {
    for (let j = 0; j < pastBlocks; j++) {
      const block = keyBlocks[g * pastBlocks + j];
      out[2 * g * pastBlocks + j] = block;
      out[(2 * g + 1) * pastBlocks + j] = block + valueOffset;
    }
  }
  return out;
}
