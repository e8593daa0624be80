// The contract between the model runtime (this folder) and the speculative engine.
//
// A model keeps one KV slot per request in flight. Each slot holds `committed` rows (the request's
// accepted history) followed by *scratch* rows: tree nodes forwarded since the last commit. A
// forward appends new nodes to the scratch of each request in the batch; a node attends to the
// slot's committed rows, its scratch ancestors and itself (tree mask). Its position is
// committed + depth, where a node whose parent is -1 has depth 0. `commit` keeps a path of
// scratch nodes (in root-to-leaf order) as the next committed rows and drops the rest of the
// scratch, without copying the past.

import type { AttentionWindow, WeightPrecision } from '../../shared/config.js';

export interface ModelInfo {
  /** Folder the model was loaded from. */
  dir: string;
  architecture: 'llama' | 'qwen2' | 'qwen3' | 'mistral';
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Parameter count, embeddings included. */
  parameters: number;
  /** Dtype of the weights on disk. */
  dtype: 'float32' | 'float16' | 'bfloat16';
  maxPositions: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** Weight precision of the loaded graph's linear layers and head ('float32' until loaded otherwise). */
  precision: WeightPrecision;
  /** 'eagle3-head': an EAGLE-3 draft head (model/head-session.ts); absent: a language model. */
  kind?: 'model' | 'eagle3-head';
  /** Width of the features a forward can return (3 × hidden size), or absent when it returns none. */
  featureWidth?: number;
}

/**
 * A session's attention window (shared/config.ts): a query at position p sees key k iff k < sink or
 * p − k < recent, its tree ancestors and itself by the same rule. A model's own sliding window is
 * { sink: 0, recent: W }; a draft may be given sinks and a recent window to bound what a forward
 * reads per request (StreamingLLM's attention sinks, as MagicDec drafts with).
 */
export type { AttentionWindow } from '../../shared/config.js';

/** One request's part of a packed forward. */
export interface ForwardEntry {
  slot: number;
  /** New tokens, appended to the slot's scratch in this order. */
  tokens: ArrayLike<number>;
  /**
   * For each new token, its parent: an index into the slot's scratch nodes (earlier forwards
   * since the last commit, then this entry's own earlier tokens), or -1 to hang directly off the
   * committed rows. A prefill chain is parents [-1, s, s+1, …] where s = current scratch size.
   */
  parents: ArrayLike<number>;
}

/** What to return for which packed rows. Rows index the concatenation of all entries' tokens. */
export interface ForwardOutputs {
  /** Rows whose full logits [rows, vocab] to return. */
  logitsRows?: number[];
  /** Rows whose top-k log-softmax values and ids [rows, k] to return. */
  topkRows?: number[];
  topk?: number;
  /** Rows whose argmax token id to return (cheaper than top-1: no log-softmax). */
  argmaxRows?: number[];
  /**
   * Rows whose EAGLE-3 features [rows, featureWidth] to return: only from a target loaded for a
   * head (LoadOptions.featureBoundaries).
   */
  featureRows?: number[];
  /**
   * For each feature row, the index among featureRows of its parent row, or -1 for a root. With
   * it, features come back only for the rows greedy verification can accept (each token on the
   * path from a root is its parent row's argmax; roots always), listed in `featureKept`; argmaxRows
   * must then be exactly featureRows. Without it, every feature row's features come back.
   */
  featureParents?: number[];
}

export interface ForwardResult {
  /** [logitsRows.length * vocab], raw logits (before softmax). */
  logits?: Float32Array;
  /** [topkRows.length * topk], log-softmax values, descending per row. */
  topkLogprobs?: Float32Array;
  /** [topkRows.length * topk] token ids matching topkLogprobs. */
  topkIds?: Int32Array;
  /** [argmaxRows.length] argmax token ids. */
  argmax?: Int32Array;
  /** [featureRows.length * featureWidth] hidden-state features for an EAGLE-3 head. */
  features?: Float32Array;
  /** [rows in features] which feature rows (indices into featureRows, ascending) `features` holds. */
  featureKept?: Int32Array;
  /** Fraction of attention query rows in the forward that were padding (each group padded to the longest). */
  paddingWaste: number;
  /** Milliseconds spent inside onnxruntime's run(). */
  runMs: number;
  /** Packed tokens in this forward (the linear layers' row count). */
  tokens: number;
}

export interface ModelSession {
  readonly info: ModelInfo;
  /** Slots available in total (growSlots raises it). */
  readonly capacity: number;
  /**
   * Raises the slots to `slots` between forwards, keeping every slot's rows (KV buffers
   * reallocated, nothing reloaded); no-op when it has that many already. `onProgress` hears the
   * layers copied so far.
   */
  growSlots(slots: number, onProgress?: (done: number, total: number) => void): Promise<void>;
  /** What a query sees of the committed past besides its ancestors; null or absent = all of it. */
  readonly window?: AttentionWindow | null;
  /** Changes the window for later forwards; only while no slot is in use (see OrtModelSession.setWindow). */
  setWindow?(window: AttentionWindow | null): void;
  /** Take a free slot (committed = 0, empty scratch). Throws when none is free. */
  allocSlot(): number;
  freeSlot(slot: number): void;
  committedLength(slot: number): number;
  scratchSize(slot: number): number;
  /** One packed forward over every entry. Entries must name distinct slots; entries without tokens are skipped. */
  forward(entries: ForwardEntry[], outputs: ForwardOutputs): Promise<ForwardResult>;
  /**
   * Keep the given scratch nodes (a root-to-leaf path, in order) as the next committed rows;
   * drop all other scratch rows of the slot.
   */
  commit(slot: number, keepScratch: number[]): void;
  /** Drop the slot's scratch without committing anything. */
  clearScratch(slot: number): void;
  release(): Promise<void>;
}

/**
 * A draft that reads the target's features (an EAGLE-3 head, head-session.ts): each committed
 * token it is fed must come with the target's features of the token before it, queued in order.
 */
export interface DraftHeadSession extends ModelSession {
  /** Values per feature row (3 × the target's hidden size). */
  readonly featureWidth: number;
  /** Queues feature rows for the slot's next committed tokens, oldest first. */
  pushFeatures(slot: number, rows: Float32Array): void;
}

export function isDraftHead(draft: ModelSession | null | undefined): draft is DraftHeadSession {
  return draft !== null && draft !== undefined && 'pushFeatures' in draft && typeof (draft as DraftHeadSession).pushFeatures === 'function';
}
