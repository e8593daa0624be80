// An EAGLE-3 draft head as a ModelSession: the decoder session's KV slots, packing and masks, plus
// where each row's incoming hidden state comes from.
//
// Per slot the head keeps a queue of target features not yet read (pushFeatures) and the pre-norm
// output of every scratch node. A forwarded token reads the next queued feature when there is one
// (a committed position: the target has seen the token before it), else its parent node's output
// from an earlier forward (a drafted node). A token with neither reads zeros: a one-token prompt's
// first root, whose previous token the target never saw, or the chains a timing forward sends.
import * as ort from 'onnxruntime-node';
import { ModelUsageError } from './errors.js';
import type { OrtModelSession } from './session.js';
import type { AttentionWindow, ForwardEntry, ForwardOutputs, ForwardResult, ModelInfo, ModelSession } from './types.js';

export interface HeadSessionParts {
  inner: OrtModelSession;
  info: ModelInfo;
  /** Width of one feature row (3 × the target's hidden size). */
  featureWidth: number;
  draftVocabSize: number;
  /** Target id of each draft id (the rows of `logits` are over draft ids). */
  draftToTarget: Int32Array;
  /** The target's hidden-state boundaries the features are taken at. */
  featureBoundaries: number[];
}

interface HeadSlot {
  /** Target features not yet read, one row each, oldest first. */
  queued: Float32Array[];
  /** Pre-norm output of each scratch node. */
  outputs: Float32Array[];
}

export class Eagle3HeadSession implements ModelSession {
  readonly info: ModelInfo;
  readonly featureWidth: number;
  readonly draftVocabSize: number;
  readonly draftToTarget: Int32Array;
  readonly featureBoundaries: readonly number[];
  private readonly inner: OrtModelSession;
  private readonly hiddenSize: number;
  private readonly slots = new Map<number, HeadSlot>();

  constructor(parts: HeadSessionParts) {
    this.inner = parts.inner;
    this.info = parts.info;
    this.featureWidth = parts.featureWidth;
    this.draftVocabSize = parts.draftVocabSize;
    this.draftToTarget = parts.draftToTarget;
    this.featureBoundaries = parts.featureBoundaries;
    this.hiddenSize = parts.info.hiddenSize;
  }

  get capacity(): number {
    return this.inner.capacity;
  }

  get maxLength(): number {
    return this.inner.maxLength;
  }

  get window(): AttentionWindow | null {
    return this.inner.window;
  }

  setWindow(window: AttentionWindow | null): void {
    this.inner.setWindow(window);
  }

  growSlots(slots: number, onProgress?: (done: number, total: number) => void): Promise<void> {
    // Per-slot feature queues live in a map keyed by slot: only the decoder's KV buffers grow.
    return this.inner.growSlots(slots, onProgress);
  }

  allocSlot(): number {
    const slot = this.inner.allocSlot();
    this.slots.set(slot, { queued: [], outputs: [] });
    return slot;
  }

  freeSlot(slot: number): void {
    this.inner.freeSlot(slot);
    this.slots.delete(slot);
  }

  committedLength(slot: number): number {
    return this.inner.committedLength(slot);
  }

  scratchSize(slot: number): number {
    return this.inner.scratchSize(slot);
  }

  /** Queues `rows.length / featureWidth` target feature rows for the slot's next committed tokens. */
  pushFeatures(slot: number, rows: Float32Array): void {
    const s = this.state(slot);
    if (rows.length % this.featureWidth !== 0) throw new ModelUsageError(`features of ${rows.length} values are not whole rows of ${this.featureWidth}`);
    for (let r = 0; r < rows.length; r += this.featureWidth) s.queued.push(rows.slice(r, r + this.featureWidth));
  }

  /** Feature rows queued for the slot and not read yet. */
  queuedFeatures(slot: number): number {
    return this.state(slot).queued.length;
  }

  async forward(allEntries: ForwardEntry[], outputs: ForwardOutputs): Promise<ForwardResult> {
    if (outputs.featureRows?.length) throw new ModelUsageError('an EAGLE-3 head returns no features');
    if (outputs.topkRows?.length && (outputs.topk ?? 1) > this.draftVocabSize) {
      throw new ModelUsageError(`topk ${outputs.topk} exceeds the head's draft vocabulary of ${this.draftVocabSize}`);
    }
    const entries = allEntries.filter((e) => e.tokens.length > 0);
    const H = this.hiddenSize;
    const features: Float32Array[] = [];
    const previous: Float32Array[] = [];
    const source: number[] = [];
    // Sources are resolved before previous rows are known to be needed; prev_hidden indices are
    // offset by the feature count once it is final.
    const fromPrevious: number[] = [];
    const used = new Map<number, number>();
    let zeroRow = -1;
    for (const e of entries) {
      const s = this.state(e.slot);
      const prior = s.outputs.length;
      let take = 0;
      for (let t = 0; t < e.tokens.length; t++) {
        if (take < s.queued.length) {
          source.push(features.length);
          fromPrevious.push(0);
          features.push(s.queued[take++]);
          continue;
        }
        const p = e.parents[t];
        if (p < 0 || p >= prior) {
          if (zeroRow < 0) {
            zeroRow = previous.length;
            previous.push(new Float32Array(H));
          }
          source.push(zeroRow);
        } else {
          source.push(previous.length);
          previous.push(s.outputs[p]);
        }
        fromPrevious.push(1);
      }
      used.set(e.slot, take);
    }
    const hiddenSource = Int32Array.from(source, (v, i) => (fromPrevious[i] ? v + features.length : v));
    const featureData = new Float32Array(features.length * this.featureWidth);
    features.forEach((row, i) => featureData.set(row, i * this.featureWidth));
    const previousData = new Float32Array(previous.length * H);
    previous.forEach((row, i) => previousData.set(row, i * H));
    const extra = {
      feeds: {
        features: new ort.Tensor('float32', featureData, [features.length, this.featureWidth]),
        prev_hidden: new ort.Tensor('float32', previousData, [previous.length, H]),
        hidden_source: new ort.Tensor('int32', hiddenSource, [hiddenSource.length]),
      },
      fetches: entries.length > 0 ? ['hidden_out'] : [],
    };
    const { result, extra: out } = await this.inner.forwardWith(entries, outputs, extra);
    if (entries.length === 0) return result;
    const hiddenOut = out.hidden_out;
    let row = 0;
    for (const e of entries) {
      const s = this.state(e.slot);
      s.queued.splice(0, used.get(e.slot) ?? 0);
      for (let t = 0; t < e.tokens.length; t++, row++) s.outputs.push(hiddenOut.slice(row * H, (row + 1) * H));
    }
    return result;
  }

  commit(slot: number, keepScratch: number[]): void {
    this.inner.commit(slot, keepScratch);
    // Committed rows are never a parent again: the next rows read target features.
    this.state(slot).outputs = [];
  }

  clearScratch(slot: number): void {
    this.inner.clearScratch(slot);
    this.state(slot).outputs = [];
  }

  release(): Promise<void> {
    return this.inner.release();
  }

  private state(slot: number): HeadSlot {
    const s = this.slots.get(slot);
    if (s === undefined) throw new ModelUsageError(`slot ${slot} is not allocated`);
    return s;
  }
}

/** The head of a draft session, or null when the draft is a language model. */
export function asHead(draft: ModelSession | null): Eagle3HeadSession | null {
  return draft instanceof Eagle3HeadSession ? draft : null;
}
