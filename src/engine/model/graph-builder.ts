// Builds the tree-attention ONNX graph of a decoder-only model from its weights.
//
// One graph serves prefill, drafting and tree verification of a packed ragged batch:
//   input_ids [N] int32, positions [N] int32         the packed new tokens (N = Σ entry lengths)
//   gather_index [B, T] int32                         packed row of query t of attention group b; padding → any row
//   key_index [B, K] int32                            packed rows of group b's request's new tokens (its keys); padding → any row
//   scatter_index [N] int32                           flat b*T+t of each packed row (gather back)
//   past_index [B, 2, L/P] int32                      blocks of P = PAST_BLOCK rows of group b's request's past: its keys,
//                                                     slot*stride/P + j, then its values, as many blocks further on
//   attn_mask [B, 1, G*T, L+K] float32                additive: 0 = visible, -1e30 = hidden; each group's T rows
//                                                     repeated for the G = nH/kvH query heads of a KV head
//   past_kv_i [kvH, 2*slots*stride/P, P*hd] float32   the session's persistent KV buffer of layer i, per KV head
//                                                     its keys, then its values (stride = maxLen rounded up to a whole block)
//   head_rows [R1+R2+R3] int32, head_split [3] int64  rows of the logits, top-k and argmax heads, and their counts
//   topk_k [1] int64
// outputs:
//   logits [R1, V], topk_logprobs [R2, k], topk_ids [R2, k] int32, argmax [R3] int32,
//   new_kv_i [N, kvH, 2, hd] (per row and KV head its K after RoPE, then its V) for the session to store.
// Linear layers and the output head run on float32 weights, or on 8-bit or 4-bit block-quantized
// ones (MatMulNBits): a draft's, because a one-token draft call is bound by reading its weights and
// a small draft's float32 head alone (4096 × 128) no longer fits a core's L2 cache; a target's only
// when asked, to fit a model too large for the machine in float32 (its logits then decide outputs).
// Linear layers and norms run on the N packed rows only; attention pads per group to T inside
// the graph. A group is a request's new tokens, or a chunk of them (the session splits a deep
// tree among short ones, so they are not all padded to its depth); every group of a request sees
// the request's past and all its new tokens as keys. GQA is computed without repeating K/V: q is
// laid out [kvH, B, 1, G*T, hd] so each KV head multiplies all its G query heads in one MatMul.
// A small forward's cost is mostly per kernel, not per row (docs/model-runtime.md, "Where a small
// forward's time goes"), so the graph uses onnxruntime's fused kernels where one replaces several
// (RMSNorm with the residual add, RoPE) and takes what it can precompute as inputs.
import type { WeightPrecision } from '../../shared/config.js';
import { ropeTableRows, ropeTables, type ModelConfig } from './config.js';
import { AttributeType, DataType, type AttributeProtoJs, type NodeProtoJs, type ValueInfoProtoJs } from './onnx-proto.js';
import type { HalfTensor, RowRange } from './safetensors.js';

/** Bump when the graph layout changes, so cached graphs are rebuilt. */
export const GRAPH_VERSION = 16;
export const OPSET = 17;
export const MASK_HIDDEN = -1e30;
/**
 * Past rows are gathered in blocks of this many: a Gather copies one block per index, and copying
 * rows of one head (128 bytes on the demo pair) one by one cost more in per-index work than in
 * bytes. The last block of a past is partly rows past its end, which the mask hides.
 */
export const PAST_BLOCK = 8;

/** onnxruntime's contrib-op domain (MatMulNBits). */
export const MS_DOMAIN = 'com.microsoft';

/** int8 and int4 weights are quantized in blocks of this many inputs, one scale per block. */
export const QUANT_BLOCK = 32;

export interface GraphOptions {
  precision?: WeightPrecision;
  /**
   * For a target an EAGLE-3 head drafts for: the hidden-state boundaries (b = the residual stream
   * entering layer b, L = after the last layer) the `features` output concatenates for the rows in
   * `feature_rows`. Absent: the graph has neither, so other runs pay nothing for them.
   */
  featureBoundaries?: number[];
  /** Where weights go as they are built; absent: they stay in the returned graph. */
  weightStore?: WeightStore;
}

export type InitializerData = Float32Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array;

/**
 * A tensor of the graph: its bytes in memory (`data`), or, when the graph was built into a
 * weight store, where the store put them (`stored`).
 */
export interface GraphInitializer {
  name: string;
  dims: number[];
  dataType: number;
  data: InitializerData | null;
  stored?: { offset: number; length: number };
}

/**
 * Takes a weight's bytes as soon as the graph builder has them and says where it put them, so a
 * large model's weights are never all held in memory at once (the graph cache's data file).
 */
export interface WeightStore {
  put(bytes: Uint8Array): { offset: number; length: number };
}

/** Tensors smaller than this (constants, norms of tiny models) stay in the graph itself. */
export const STORE_MIN_BYTES = 1024;

export function initializerBytes(data: InitializerData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

export interface BuiltGraph {
  nodes: NodeProtoJs[];
  initializers: GraphInitializer[];
  inputs: ValueInfoProtoJs[];
  outputs: ValueInfoProtoJs[];
}

/** Supplies weights by name, already float32 and shape-checked against `shape`. */
export interface WeightSource {
  has(name: string): boolean;
  /** The tensor as float32, or only the rows `rows` of its first dimension. */
  get(name: string, shape: number[], rows?: RowRange): Float32Array;
  /** The tensor's raw bits when the file stores it as float16 or bfloat16; null otherwise. */
  getHalf(name: string, shape: number[]): HalfTensor | null;
}

type Attr = number | number[] | { float: number };

export class GraphBuilder {
  readonly nodes: NodeProtoJs[] = [];
  readonly initializers: GraphInitializer[] = [];
  private counter = 0;
  private constCache = new Map<string, string>();
  private rowPads = new Map<string, string>();

  constructor(private readonly store?: WeightStore) {}

  /** True when a node already outputs `name`. */
  produces(name: string): boolean {
    return this.nodes.some((n) => n.output.includes(name));
  }

  op(opType: string, inputs: string[], attrs: Record<string, Attr> = {}, outputs = 1, outputNames?: string[], domain?: string): string[] {
    const id = this.counter++;
    const outs = outputNames ?? Array.from({ length: outputs }, (_, k) => `${opType.toLowerCase()}_${id}_${k}`);
    const attribute: AttributeProtoJs[] = Object.entries(attrs).map(([name, v]) => {
      if (Array.isArray(v)) return { name, type: AttributeType.INTS, ints: v };
      if (typeof v === 'object') return { name, type: AttributeType.FLOAT, f: v.float };
      return { name, type: AttributeType.INT, i: v };
    });
    this.nodes.push({ name: `${opType}_${id}`, opType, input: inputs, output: outs, attribute, ...(domain ? { domain } : {}) });
    return outs;
  }

  one(opType: string, inputs: string[], attrs: Record<string, Attr> = {}, outputName?: string): string {
    return this.op(opType, inputs, attrs, 1, outputName ? [outputName] : undefined)[0];
  }

  init(name: string, dims: number[], data: Exclude<InitializerData, Uint16Array>): string {
    const dataType =
      data instanceof Float32Array ? DataType.FLOAT : data instanceof Int32Array ? DataType.INT32 : data instanceof Uint8Array ? DataType.UINT8 : DataType.INT64;
    return this.add(name, dims, dataType, data);
  }

  /** A float16 or bfloat16 tensor, its bits as stored. */
  initHalf(name: string, dims: number[], half: HalfTensor): string {
    return this.add(name, dims, half.format === 'float16' ? DataType.FLOAT16 : DataType.BFLOAT16, half.bits);
  }

  private add(name: string, dims: number[], dataType: number, data: InitializerData): string {
    if (this.store !== undefined && data.byteLength >= STORE_MIN_BYTES) {
      this.initializers.push({ name, dims, dataType, data: null, stored: this.store.put(initializerBytes(data)) });
    } else {
      this.initializers.push({ name, dims, dataType, data });
    }
    return name;
  }

  i64(values: number[]): string {
    const key = `i64:${values.join(',')}`;
    let name = this.constCache.get(key);
    if (name === undefined) {
      name = this.init(`const_i64_${this.constCache.size}`, [values.length], BigInt64Array.from(values.map(BigInt)));
      this.constCache.set(key, name);
    }
    return name;
  }

  /**
   * For a tensor of `rows` entries along its first axis (rows = Shape(rows)[0]): `count`, [rows]
   * int64, and `pads`, Pad's pads that add max(0, 2 − rows) rows of zeros below a 2-D tensor of as
   * many rows. Built once per tensor.
   */
  atLeastTwoRows(rows: string): { pads: string; count: string } {
    let pads = this.rowPads.get(rows);
    const count = `${rows}_row_count`;
    if (pads === undefined) {
      this.one('Shape', [rows], { end: 1 }, count);
      const extra = this.one('Max', [this.one('Sub', [this.i64([2]), count]), this.i64([0])]);
      pads = this.one('Concat', [this.i64([0, 0]), extra, this.i64([0])], { axis: 0 }, `${rows}_pads_to_two_rows`);
      this.rowPads.set(rows, pads);
    }
    return { pads, count };
  }

  f32(value: number): string {
    const key = `f32:${value}`;
    let name = this.constCache.get(key);
    if (name === undefined) {
      name = this.init(`const_f32_${this.constCache.size}`, [], Float32Array.of(value));
      this.constCache.set(key, name);
    }
    return name;
  }
}

export function valueInfo(name: string, elemType: number, dims: (number | string)[]): ValueInfoProtoJs {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/** Bits per weight of a precision's linear layers; null: float32, as on disk. */
export function weightBits(precision: WeightPrecision): 8 | 4 | null {
  return precision === 'int8' ? 8 : precision === 'int4' ? 4 : null;
}

/**
 * A [rows, cols] matrix in MatMulNBits' layout: `packed` [rows, blocks, QUANT_BLOCK·bits/8], one
 * scale per row and block, and at 4 bits one zero point per row and block (`zeroPoints`, packed
 * like the codes: [rows, zeroPointBytes(blocks)]); at 8 bits none (the default zero point 128).
 */
export interface QuantizedBlocks {
  packed: Uint8Array;
  scales: Float32Array;
  zeroPoints: Uint8Array | null;
  blocks: number;
  bits: 8 | 4;
}

/** Bytes of one row's packed 4-bit zero points: two blocks per byte, the last high nibble unused when blocks is odd. */
export function zeroPointBytes(blocks: number): number {
  return Math.ceil(blocks / 2);
}

/**
 * [rows, cols] float32 → MatMulNBits' block layout: per row, blocks of QUANT_BLOCK inputs along
 * cols, the last one padded to a whole block with zero weights.
 * 8 bits: symmetric, scale maxabs/127 and codes q + 128, the operator's default zero point (so no
 * zero-point input). 4 bits: asymmetric, since 15 levels over ±maxabs waste half of them on a block
 * whose weights lean one way: the range [min(lo, 0), max(hi, 0)] (zero stays exact) is split into
 * 15 steps, scale (max − min)/15, zero point round(−min/scale) in 0…15, codes round(w/scale) + zero
 * point, which the rounded zero point keeps within half a step of every weight, min and max included.
 * 4-bit codes and zero points pack two per byte, the earlier one in the low nibble.
 */
export function quantizeBlocks(w: Float32Array, rows: number, cols: number, bits: 8 | 4): QuantizedBlocks {
  const blocks = Math.ceil(cols / QUANT_BLOCK);
  const maxCode = (1 << bits) - 1;
  const blockBytes = (QUANT_BLOCK * bits) / 8;
  const packed = new Uint8Array(rows * blocks * blockBytes);
  const scales = new Float32Array(rows * blocks);
  const zpRow = zeroPointBytes(blocks);
  const zeroPoints = bits === 4 ? new Uint8Array(rows * zpRow) : null;
  const codes = new Uint8Array(QUANT_BLOCK);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      const from = r * cols + b * QUANT_BLOCK;
      const to = r * cols + Math.min(cols, (b + 1) * QUANT_BLOCK);
      let scale: number;
      let zero: number;
      if (bits === 8) {
        let maxAbs = 0;
        for (let i = from; i < to; i++) maxAbs = Math.max(maxAbs, Math.abs(w[i]));
        scale = maxAbs > 0 ? maxAbs / 127 : 1;
        zero = 128;
      } else {
        let lo = 0;
        let hi = 0;
        for (let i = from; i < to; i++) {
          lo = Math.min(lo, w[i]);
          hi = Math.max(hi, w[i]);
        }
        scale = hi > lo ? Math.fround((hi - lo) / maxCode) : 1;
        zero = Math.min(maxCode, Math.max(0, Math.round(-lo / scale)));
        zeroPoints![r * zpRow + (b >> 1)] |= zero << (4 * (b & 1));
      }
      scales[r * blocks + b] = scale;
      codes.fill(zero);
      for (let i = from; i < to; i++) codes[i - from] = Math.min(maxCode, Math.max(0, Math.round(w[i] / scale) + zero));
      const out = (r * blocks + b) * blockBytes;
      if (bits === 8) packed.set(codes, out);
      else for (let j = 0; j < blockBytes; j++) packed[out + j] = codes[2 * j] | (codes[2 * j + 1] << 4);
    }
  }
  return { packed, scales, zeroPoints, blocks, bits };
}

/**
 * Bytes of an [out, inner] weight as the graph holds it: float32, or MatMulNBits' packed codes, a
 * float32 scale per block and, at 4 bits, a zero point per block, two to a byte (quantizeBlocks).
 */
export function projectionBytes(out: number, inner: number, bits: 8 | 4 | null): number {
  if (bits === null) return 4 * out * inner;
  const blocks = Math.ceil(inner / QUANT_BLOCK);
  return out * (blocks * ((QUANT_BLOCK * bits) / 8 + 4) + (bits === 4 ? zeroPointBytes(blocks) : 0));
}

/**
 * MatMulNBits' accuracy_level for every quantised projection: 4, activations rounded to 8 bits per
 * row and block of 32 (each row its own scales, so a row's output does not depend on the rows
 * packed with it; one row alone at 4 bits aside, see projectionPart). Rounding activations turns a
 * last-bit difference in a row's input into ~1e-2 of a logit, so a quantised target is lossless only
 * because every row reaches its projections with the same bits whether decoded or verified
 * (docs/model-runtime.md, "Batch invariance"). Float activations (1) ran the demo target 2–20×
 * slower on onnxruntime 1.30's CPU kernel.
 */
export const ACTIVATION_ACCURACY = 4;

/**
 * The most bytes one projection initializer holds. onnxruntime prepacks a weight into a copy of its
 * own before it frees the original, so a load's peak holds the largest initializer twice; larger
 * weights (a big vocabulary's head) are split by output rows into initializers of at most this size.
 */
export const MAX_PROJECTION_BYTES = 64 << 20;

/**
 * A projection by an HF [out, inner] weight, added to the graph once and applicable to several
 * inputs. float32: Gemm with transB, which avoids a transposed copy. int8 / int4: MatMulNBits with
 * 8-bit activations (ACTIVATION_ACCURACY). A weight past MAX_PROJECTION_BYTES is split by output rows into
 * parts whose outputs are concatenated (the same values: each output is one row's dot product).
 * `weight` is the matrix, or a reader of its rows, so a large one is read one part at a time.
 * The returned function takes the input rows and, optionally, `rows`: any tensor with one entry
 * per input row (the graph's input_ids for every layer), so graphs share one count of them.
 */
export function projection(
  g: GraphBuilder,
  precision: WeightPrecision,
  name: string,
  weight: Float32Array | ((rows: RowRange) => Float32Array),
  out: number,
  inner: number,
  maxPartBytes = MAX_PROJECTION_BYTES,
): (x: string, rows?: string) => string {
  const rowsOf = (from: number, to: number): Float32Array => (typeof weight === 'function' ? weight({ from, to }) : weight.subarray(from * inner, to * inner));
  const bits = weightBits(precision);
  const partRows = Math.max(1, Math.floor(maxPartBytes / projectionBytes(1, inner, bits)));
  const parts: ((x: string) => string)[] = [];
  if (out <= partRows) parts.push(projectionPart(g, bits, name, rowsOf(0, out), out, inner));
  else {
    for (let from = 0, k = 0; from < out; from += partRows, k++) {
      const count = Math.min(partRows, out - from);
      parts.push(projectionPart(g, bits, `${name}_part${k}`, rowsOf(from, from + count), count, inner));
    }
  }
  const project = (x: string): string => (parts.length === 1 ? parts[0](x) : g.one('Concat', parts.map((part) => part(x)), { axis: 1 }));
  if (bits !== 4) return project;
  // onnxruntime 1.30's 4-bit kernel has a path of its own for a single row, which sums in another
  // order than its path for two or more, so a row's output depended on whether it was alone in the
  // forward (a decode step at batch 1 against the same row verified in a tree). A lone row gets a
  // row of zeros below it, so every 4-bit projection runs on the many-row path, where a row's
  // output is the same bits whatever rows share it; forwards of two rows or more are not padded.
  return (x, rows = x) => {
    const { pads, count } = g.atLeastTwoRows(rows);
    return g.one('Slice', [project(g.one('Pad', [x, pads])), g.i64([0]), count, g.i64([0])]);
  };
}

function projectionPart(g: GraphBuilder, bits: 8 | 4 | null, name: string, data: Float32Array, out: number, inner: number): (x: string) => string {
  if (bits === null) {
    const w = g.init(name, [out, inner], data);
    return (x) => gemm(g, x, w, null);
  }
  const { packed, scales, zeroPoints, blocks } = quantizeBlocks(data, out, inner, bits);
  const qName = g.init(`${name}_q${bits}`, [out, blocks, (QUANT_BLOCK * bits) / 8], packed);
  const scaleName = g.init(`${name}_q${bits}_scales`, [out * blocks], scales);
  const inputs = [qName, scaleName];
  if (zeroPoints !== null) inputs.push(g.init(`${name}_q${bits}_zero_points`, [out, zeroPointBytes(blocks)], zeroPoints));
  const attrs = { K: inner, N: out, bits, block_size: QUANT_BLOCK, accuracy_level: ACTIVATION_ACCURACY };
  return (x) => g.op('MatMulNBits', [x, ...inputs], attrs, 1, undefined, MS_DOMAIN)[0];
}

/**
 * A linear layer on 2-D rows with an HF [out, in] weight and an optional bias, at the given
 * precision. `rows`: a tensor with one entry per row of x, when one is at hand (see projection).
 */
export function linearLayer(g: GraphBuilder, precision: WeightPrecision, x: string, name: string, data: Float32Array, [out, inner]: [number, number], bias: string | null, rows?: string): string {
  if (weightBits(precision) === null && projectionBytes(out, inner, null) <= MAX_PROJECTION_BYTES) return gemm(g, x, g.init(name, [out, inner], data), bias);
  const y = projection(g, precision, name, data, out, inner)(x, rows);
  return bias ? g.one('Add', [y, bias]) : y;
}

export function gemm(g: GraphBuilder, x: string, w: string, bias: string | null): string {
  return g.one('Gemm', bias ? [x, w, bias] : [x, w], { transB: 1 });
}

/** The attention shape of a layer: query heads, KV heads and head width. */
export interface AttentionDims {
  nH: number;
  kvH: number;
  hd: number;
}

/** The graph input and output that carry layer `layer`'s KV: the persistent buffer in, the new rows out. */
export function kvBufferValues(layer: number, { kvH, hd }: AttentionDims): { inputs: ValueInfoProtoJs[]; outputs: ValueInfoProtoJs[] } {
  return {
    inputs: [valueInfo(`past_kv_${layer}`, DataType.FLOAT, [kvH, 'SB2', PAST_BLOCK * hd])],
    outputs: [valueInfo(`new_kv_${layer}`, DataType.FLOAT, ['N', kvH, 2, hd])],
  };
}

/**
 * The attention's row sums are a MatMul by a matrix of ones, of valuePiece(hd) columns (16 on the
 * demo pair), so the sums come out as wide as a piece of the weighted values and divide it with no
 * Slice or Unsqueeze. One column would be the natural choice, but onnxruntime 1.30 multiplies by a
 * single column on a path of its own that sums along the row in lanes, so the sum depended on where
 * in the row its nonzero weights sat: a verified row (its ancestors among the new columns) and the
 * same row decoded (its ancestors in the past) came out a few ulps apart. With two columns or more
 * the MatMul takes its general kernel, which adds along the row in order (measured: identical sums
 * wherever the zeros lie; 16 columns give the same bits as the 2 of graph version 15).
 */
export const ROW_SUM_MIN_COLUMNS = 2;

/**
 * Columns of hd the weighted values are multiplied in at a time: at most 16. onnxruntime 1.30 adds a
 * MatMul's products along its inner axis in order within slices of 16384 / max(16, columns) of it and
 * then adds the slices' sums, so with all hd (64) columns at once a row's keys were summed in slices of
 * 256 (128 at hd 128) and where those fell depended on where its keys sat: a verified row whose
 * ancestors straddled column 256 differed from the same row decoded. With 16 columns the slices are
 * 1,024 keys long, so a row over up to 1,024 key columns (its past, rounded up to blocks, and the
 * forward's new tokens) is summed in order, whatever its layout.
 */
export const VALUE_PIECE = 16;

/** Key columns a row of one forward is summed over in order (16384 / VALUE_PIECE): batch invariance holds up to here. */
export const IN_ORDER_KEYS = 16384 / VALUE_PIECE;

/** The widest piece of hd, at most VALUE_PIECE, that divides it. */
function valuePiece(hd: number): number {
  let w = VALUE_PIECE;
  while (hd % w !== 0) w--;
  return w;
}

/**
 * Shared by every layer's attention, built once per graph: `keep`, 1 where `attn_mask` shows a
 * column and 0 where it hides it, and `ones`, [L+K, w] ones for w = valuePiece(hd) (row sums as a
 * MatMul; see ROW_SUM_MIN_COLUMNS), expanded to the mask's width.
 */
function attentionPadding(g: GraphBuilder, w: number): { keep: string; ones: string } {
  if (w < ROW_SUM_MIN_COLUMNS) throw new Error(`row sums need ${ROW_SUM_MIN_COLUMNS} columns or more, got ${w}`);
  const [keep, ones] = ['attn_keep', `attn_ones_${w}`];
  if (!g.produces(keep)) g.one('Cast', [g.one('Equal', ['attn_mask', g.f32(0)])], { to: DataType.FLOAT }, keep);
  if (!g.produces(ones)) {
    const shape = g.one('Concat', [g.one('Shape', ['attn_mask'], { start: -1 }), g.i64([1])], { axis: 0 }); // [L+K, 1]
    g.one('Expand', [g.init(`${ones}_row`, [1, w], new Float32Array(w).fill(1)), shape], {}, ones);
  }
  return { keep, ones };
}

/**
 * Tree attention of one layer, per group padded, over the past rows [B, L] of its persistent KV
 * buffer and the new rows [B, K]: q [N, kvH, G, hd] (softmax scale folded in; the G query heads
 * of KV head j at [:, j]), kv [N, kvH, 2, hd] (per KV head its k after RoPE, then its v) → the
 * attention output [N, nH·hd]. The decoder graph and the EAGLE-3 head's both attend with it.
 * `pastRows` is the i64 constant [0, 0, 2, −1, hd].
 *
 * Every attention tensor carries an axis after [kvH, B] (2 while keys and values travel together,
 * [kvH, B, 2, L+K, hd], then 1: scores [kvH, B, 1, G·T, L+K]), where the weighted values have their
 * pieces of hd: the weights broadcast over the pieces with no Unsqueeze, and the mask is fed as
 * [B, 1, G·T, L+K] to match.
 */
export function treeAttention(g: GraphBuilder, layer: number, dims: AttentionDims, q: string, kv: string, pastRows: string): string {
  const { nH, kvH, hd } = dims;
  const qDim = nH * hd;
  const G = nH / kvH;
  // The buffer is head-major, so gathering a request's past gives [kvH, B, 2, L, hd], the layout
  // the batched MatMuls read: K and V are never transposed (Kᵀ below is fused into its MatMul).
  // With buffers laid out by row, the two transposes of K and V took a third of a batch-64
  // forward; joining the past and new rows still copies them once.
  // Gathered in blocks of PAST_BLOCK rows (the session feeds the buffer as [kvH, 2·S/P, P·hd]
  // and past_index as [B, 2, L/P], key blocks then value blocks): [kvH, B, 2, L/P, P·hd] → [kvH, B, 2, L, hd].
  const past = g.one('Reshape', [g.one('Gather', [`past_kv_${layer}`, 'past_index'], { axis: 1 }), pastRows]);
  // [N, kvH, 2, hd] → [B, K, kvH, 2, hd] → [kvH, B, 2, K, hd]
  const fresh = g.one('Transpose', [g.one('Gather', [kv, 'key_index'], { axis: 0 })], { perm: [2, 0, 3, 1, 4] });
  const [keys, values] = g.op('Split', [g.one('Concat', [past, fresh], { axis: 3 }), g.i64([1, 1])], { axis: 2 }, 2); // [kvH, B, 1, L+K, hd] each

  // GQA without repeating K/V: q is laid out [kvH, B, 1, G·T, hd] so each KV head multiplies all
  // its G query heads in one MatMul.
  const qPad = g.one('Gather', [q, 'gather_index'], { axis: 0 }); // [B, T, kvH, G, hd]
  const qHeads = g.one('Reshape', [g.one('Transpose', [qPad], { perm: [2, 0, 3, 1, 4] }), g.i64([0, 0, 1, -1, hd])]); // [kvH, B, 1, G*T, hd]
  // Kᵀ as a Transpose of the last two axes right before its MatMul: onnxruntime fuses the pair
  // into one FusedMatMul that reads K in place.
  const keysT = g.one('Transpose', [keys], { perm: [0, 1, 2, 4, 3] });
  const scores = g.one('MatMul', [qHeads, keysT]); // [kvH, B, 1, G*T, L+K]
  // The mask comes repeated for the G query heads of a KV head, [B, 1, G*T, L+K]: it broadcasts over kvH.
  // Softmax spelled out so that a row's result does not depend on how far its row was padded
  // (which depends on the rows packed with it). onnxruntime's Softmax gives a hidden column the exp
  // of its clamped score, a denormal, not 0; where a row's attention is sharp its running sums are
  // small enough for those to count, so the same row came out a few ulps apart alone and beside a
  // request with a longer past, and int8-rounded activations turned that into whole tokens. Here a
  // hidden column's weight is exactly 0 and the sums are MatMuls, which add along a row in order
  // (adding 0 is exact): the padding cannot change a bit of a real row.
  const w = valuePiece(hd);
  const { keep, ones } = attentionPadding(g, w);
  const scored = g.one('Add', [scores, 'attn_mask']);
  const weights = g.one('Mul', [g.one('Exp', [g.one('Sub', [scored, g.one('ReduceMax', [scored], { axes: [-1], keepdims: 1 })])]), keep]); // [kvH, B, 1, G*T, L+K]
  // The weighted values in pieces of VALUE_PIECE columns of hd (see there): [kvH, B, hd/w, G*T, w].
  const valuePieces = g.one('Transpose', [g.one('Reshape', [values, g.i64([0, 0, -1, hd / w, w])])], { perm: [0, 1, 3, 2, 4] }); // [kvH, B, hd/w, L+K, w]
  const weighted = g.one('MatMul', [weights, valuePieces]);
  // The row sums as w equal columns ([kvH, B, 1, G*T, w]), which divide the pieces as they are.
  const rowSums = g.one('MatMul', [weights, ones]);
  const ctx = g.one('Div', [weighted, rowSums]); // [kvH, B, hd/w, G*T, w]
  const ctx6 = g.one('Reshape', [ctx, g.i64([0, 0, 0, G, -1, w])]); // [kvH, B, hd/w, G, T, w]
  const ctxRows = g.one('Reshape', [g.one('Transpose', [ctx6], { perm: [1, 4, 0, 3, 2, 5] }), g.i64([-1, qDim])]); // [B*T, qDim]
  return g.one('Gather', [ctxRows, 'scatter_index'], { axis: 0 }); // [N, qDim]
}

/**
 * The three output heads over the final normed rows: `head_rows` are gathered and projected
 * together, so the vocabulary projection runs once, on exactly the rows asked for (its weights are
 * read once however many heads ask), and then split among the heads (`head_split` = [R1, R2, R3]):
 * logits, top-k log-probabilities with their ids, argmax. `tokenIds` turns the int64 ids of TopK
 * and ArgMax into the graph's int32 token ids, under the given output name.
 */
export function outputHeads(g: GraphBuilder, normed: string, project: (x: string) => string, tokenIds: (ids: string, name: string) => string): void {
  const headLogits = project(g.one('Gather', [normed, 'head_rows'], { axis: 0 }));
  const [logitsPart, topkPart, argmaxPart] = g.op('Split', [headLogits, 'head_split'], { axis: 0 }, 3);
  g.one('Identity', [logitsPart], {}, 'logits');
  const logprobs = g.one('LogSoftmax', [topkPart], { axis: -1 });
  const [topV, topI] = g.op('TopK', [logprobs, 'topk_k'], { axis: -1, largest: 1, sorted: 1 }, 2);
  g.one('Identity', [topV], {}, 'topk_logprobs');
  tokenIds(topI, 'topk_ids');
  tokenIds(g.one('ArgMax', [argmaxPart], { axis: -1, keepdims: 0 }), 'argmax');
}

/** The inputs every graph the sessions run shares: packed tokens, attention indices and mask, head rows. */
export function sessionInputs(): ValueInfoProtoJs[] {
  return [
    valueInfo('input_ids', DataType.INT32, ['N']),
    valueInfo('positions', DataType.INT32, ['N']),
    valueInfo('gather_index', DataType.INT32, ['B', 'T']),
    valueInfo('key_index', DataType.INT32, ['B', 'K']),
    valueInfo('scatter_index', DataType.INT32, ['N']),
    valueInfo('past_index', DataType.INT32, ['B', 2, 'LB']),
    valueInfo('attn_mask', DataType.FLOAT, ['B', 1, 'GT', 'LT']),
    valueInfo('head_rows', DataType.INT32, ['R']),
    valueInfo('head_split', DataType.INT64, [3]),
    valueInfo('topk_k', DataType.INT64, [1]),
  ];
}

/** The output heads' value infos, logits over a vocabulary of `vocab`. */
export function headOutputs(vocab: number): ValueInfoProtoJs[] {
  return [
    valueInfo('logits', DataType.FLOAT, ['R1', vocab]),
    valueInfo('topk_logprobs', DataType.FLOAT, ['R2', 'K']),
    valueInfo('topk_ids', DataType.INT32, ['R2', 'K']),
    valueInfo('argmax', DataType.INT32, ['R3']),
  ];
}

/** A decoder graph under construction: the builder, the model and its weights, how linear layers run. */
export interface Decoder {
  g: GraphBuilder;
  cfg: ModelConfig;
  weights: WeightSource;
  precision: WeightPrecision;
}

/** The residual stream: `residual` plus a branch output not yet added to it. */
export class ResidualStream {
  pendingBranch: string | null = null;
  constructor(
    private readonly d: Decoder,
    public residual: string,
  ) {}

  /**
   * RMSNorm of the stream, with any pending branch added first in the norm's own kernel
   * (SkipSimplifiedLayerNormalization, which also returns the sum: an Add saved per norm); the sum
   * becomes the stream.
   */
  addAndNorm(weight: string): string {
    if (this.pendingBranch === null) return rmsNorm(this.d, this.residual, weight);
    const [normed, , , sum] = this.d.g.op('SkipSimplifiedLayerNormalization', [this.pendingBranch, this.residual, weight], { epsilon: { float: this.d.cfg.rmsNormEps } }, 4, undefined, MS_DOMAIN);
    this.residual = sum;
    this.pendingBranch = null;
    return normed;
  }
}

/**
 * RMSNorm over the last axis as onnxruntime's own kernel (the one its optimiser fuses
 * Pow → ReduceMean → Add → Sqrt → Div → Mul into).
 */
export function rmsNorm({ g, cfg }: Decoder, x: string, weight: string): string {
  return g.one('SimplifiedLayerNormalization', [x, weight], { axis: -1, epsilon: { float: cfg.rmsNormEps }, stash_type: 1 });
}

/**
 * RoPE by onnxruntime's RotaryEmbedding kernel (rotate-half layout), from cos/sin tables of every
 * position (computed here in float64) and the explicit positions. The kernel's 4-D form
 * [batch, heads, seq, hd] takes a position per (batch, seq) entry; the graph feeds it a layer's
 * q, k and v as [N, kvH, G+2, hd] (per KV head its G query heads, its key and its value: see
 * qkvBlock), so "batch" is the packed row, "seq" the head within its KV group, and each row's
 * positions are [p, …, p, 0] when the value is carried along: position 0 is cos 1, sin 0, which
 * returns the value unchanged, bit for bit. One kernel, where rotating q and k apart from v took a
 * Split, two Reshapes and another Split per layer. `heads`: G+2 (v carried) or G+1 (q and k only).
 */
export function ropeBlock({ g, cfg }: Decoder): (x: string, heads: number, carriesValue: boolean) => string {
  const hd = cfg.headDim;
  const ropeRows = ropeTableRows(cfg);
  const { cosTable, sinTable } = ropeTables(cfg.rope, hd, ropeRows);
  const cosCache = g.init('rope_cos', [ropeRows, hd / 2], cosTable);
  const sinCache = g.init('rope_sin', [ropeRows, hd / 2], sinTable);
  const rowPositions = g.one('Unsqueeze', [g.one('Cast', ['positions'], { to: DataType.INT64 }), g.i64([1])]); // [N, 1]
  const positionIds = new Map<string, string>();
  return (x, heads, carriesValue) => {
    // Built once per graph and shared by every layer: [N, heads] int64.
    const key = `${heads}:${carriesValue}`;
    let ids = positionIds.get(key);
    if (ids === undefined) {
      const keep = Array.from({ length: heads }, (_, i) => (carriesValue && i === heads - 1 ? 0 : 1));
      ids = g.one('Mul', [rowPositions, g.init(`rope_heads_${key.replace(':', '_')}`, [1, heads], BigInt64Array.from(keep.map(BigInt)))]);
      positionIds.set(key, ids);
    }
    return g.op('RotaryEmbedding', [x, ids, cosCache, sinCache], { interleaved: 0, num_heads: cfg.numKvHeads }, 1, undefined, MS_DOMAIN)[0];
  };
}

/** Where a layer's weights are (their names' prefix) and how wide its attention's input is. */
export interface LayerInput {
  prefix: string;
  width: number;
}

/** A decoder layer's: `model.layers.<layer>.`, reading the hidden state. */
function decoderLayerInput(cfg: ModelConfig, layer: number): LayerInput {
  return { prefix: `model.layers.${layer}.`, width: cfg.hiddenSize };
}

/**
 * Rows of a layer's q, k and v weights (or biases) in the order qkvBlock's projection computes
 * them: per KV head j, its G query heads (jG … jG+G−1), then key head j, then value head j, each
 * `width` entries (hd rows of a weight, hd entries of a bias). One output per row, so the order
 * changes no output's bits; it puts each KV group's heads next to each other, where one Reshape
 * gives the attention's layout.
 */
export function interleaveKvGroups(q: Float32Array, k: Float32Array, v: Float32Array, { nH, kvH, hd }: AttentionDims, width: number): Float32Array {
  const G = nH / kvH;
  const head = hd * width;
  const out = new Float32Array(q.length + k.length + v.length);
  for (let j = 0; j < kvH; j++) {
    const group = j * (G + 2) * head;
    out.set(q.subarray(j * G * head, (j + 1) * G * head), group);
    out.set(k.subarray(j * head, (j + 1) * head), group + G * head);
    out.set(v.subarray(j * head, (j + 1) * head), group + (G + 1) * head);
  }
  return out;
}

/**
 * q, k, v of one layer from its normed input: one Gemm over a concatenated weight (one kernel
 * instead of three), its rows grouped by KV head (interleaveKvGroups) so that one Reshape makes
 * the output [N, kvH, G+2, hd], and one RoPE over all of it (the value heads at position 0, which
 * leaves them unchanged; see ropeBlock); then one Split gives q [N, kvH, G, hd], k and v
 * [N, kvH, 1, hd], in the layouts the attention and the session read. The softmax scale
 * 1/sqrt(hd) is folded into q's weights (or into q_norm's weight when q is normalised): RoPE is
 * linear, so scaling before it equals scaling after. Qwen3's head norm runs on q and k only, so
 * there v is split off first and RoPE turns G+1 heads. k and v are named as the graph's new_key /
 * new_value outputs, which the session writes into its head-major buffers. `input` says where the
 * layer's weights are and how wide x is: a decoder layer's by default, an EAGLE-3 head's first
 * layer reads twice its width (head-graph.ts).
 */
function qkvBlock(
  d: Decoder,
  layer: number,
  x: string,
  rope: (x: string, heads: number, carriesValue: boolean) => string,
  { prefix: p, width: H }: LayerInput = decoderLayerInput(d.cfg, layer),
): { q: string; kv: string } {
  const { g, cfg, weights } = d;
  const hd = cfg.headDim;
  const nH = cfg.numHeads;
  const kvH = cfg.numKvHeads;
  const G = nH / kvH;
  const dims: AttentionDims = { nH, kvH, hd };
  const qDim = nH * hd;
  const kvDim = kvH * hd;
  const scale = 1 / Math.sqrt(hd);
  const qW = weights.get(p + 'self_attn.q_proj.weight', [qDim, H]);
  const kW = weights.get(p + 'self_attn.k_proj.weight', [kvDim, H]);
  const vW = weights.get(p + 'self_attn.v_proj.weight', [kvDim, H]);
  const qkvW = interleaveKvGroups(cfg.qkNorm ? qW : qW.map((x) => x * scale), kW, vW, dims, H);
  let qkvBName: string | null = null;
  if (cfg.qkvBias) {
    const qB = weights.get(p + 'self_attn.q_proj.bias', [qDim]);
    const kB = weights.get(p + 'self_attn.k_proj.bias', [kvDim]);
    const vB = weights.get(p + 'self_attn.v_proj.bias', [kvDim]);
    qkvBName = g.init(p + 'self_attn.qkv_proj.bias', [qDim + 2 * kvDim], interleaveKvGroups(cfg.qkNorm ? qB : qB.map((x) => x * scale), kB, vB, dims, 1));
  }
  const qkv = linearLayer(g, d.precision, x, p + 'self_attn.qkv_proj.weight', qkvW, [qDim + 2 * kvDim, H], qkvBName, 'input_ids');
  const groups = g.one('Reshape', [qkv, g.i64([-1, kvH, G + 2, hd])]); // [N, kvH, G+2, hd]
  const names = [`q_${layer}`, `new_kv_${layer}`];
  if (!cfg.qkNorm) {
    const [q, kv] = g.op('Split', [rope(groups, G + 2, true), g.i64([G, 2])], { axis: 2 }, 2, names);
    return { q, kv };
  }
  const [qk, v] = g.op('Split', [groups, g.i64([G + 1, 1])], { axis: 2 }, 2);
  const qn = weights.get(p + 'self_attn.q_norm.weight', [hd]);
  const kn = weights.get(p + 'self_attn.k_norm.weight', [hd]);
  const headNorm = new Float32Array((G + 1) * hd);
  for (let h = 0; h <= G; h++) headNorm.set(h < G ? qn.map((x) => x * scale) : kn, h * hd);
  const normed = rmsNorm(d, qk, g.init(p + 'self_attn.qk_norm.weight', [G + 1, hd], headNorm));
  const [q, k] = g.op('Split', [rope(normed, G + 1, false), g.i64([G, 1])], { axis: 2 }, 2, [names[0], `k_${layer}`]);
  return { q, kv: g.one('Concat', [k, v], { axis: 2 }, names[1]) };
}

/** The SiLU MLP of one layer (its weights' names start with `p`): gate and up in one projection, then down. */
function mlpBlock(d: Decoder, p: string, y: string): string {
  const { g, cfg, weights } = d;
  const H = cfg.hiddenSize;
  const I = cfg.intermediateSize;
  const guW = new Float32Array(2 * I * H);
  guW.set(weights.get(p + 'mlp.gate_proj.weight', [I, H]), 0);
  guW.set(weights.get(p + 'mlp.up_proj.weight', [I, H]), I * H);
  let guBName: string | null = null;
  if (cfg.mlpBias) {
    const guB = new Float32Array(2 * I);
    guB.set(weights.get(p + 'mlp.gate_proj.bias', [I]), 0);
    guB.set(weights.get(p + 'mlp.up_proj.bias', [I]), I);
    guBName = g.init(p + 'mlp.gate_up_proj.bias', [2 * I], guB);
  }
  const [gate, up] = g.op('Split', [linearLayer(g, d.precision, y, p + 'mlp.gate_up_proj.weight', guW, [2 * I, H], guBName, 'input_ids')], { axis: 1 }, 2);
  const act = g.one('Mul', [g.one('Mul', [gate, g.one('Sigmoid', [gate])]), up]);
  const downW = weights.get(p + 'mlp.down_proj.weight', [H, I]);
  const downB = cfg.mlpBias ? g.init(p + 'mlp.down_proj.bias', [H], weights.get(p + 'mlp.down_proj.bias', [H])) : null;
  return linearLayer(g, d.precision, act, p + 'mlp.down_proj.weight', downW, [H, I], downB, 'input_ids');
}

/**
 * A layer from its normed attention input x on: q/k/v, the tree attention and o_proj as the
 * stream's branch, then the post-attention norm and the MLP as its next branch (added by the next
 * norm). Returns the layer's KV buffer inputs and outputs. The decoder graph and the EAGLE-3
 * head's build every layer with it; `input` as qkvBlock's.
 */
export function attentionAndMlp(
  d: Decoder,
  stream: ResidualStream,
  layer: number,
  x: string,
  rope: (x: string, heads: number, carriesValue: boolean) => string,
  input: LayerInput = decoderLayerInput(d.cfg, layer),
): { inputs: ValueInfoProtoJs[]; outputs: ValueInfoProtoJs[] } {
  const { g, cfg, weights } = d;
  const p = input.prefix;
  const H = cfg.hiddenSize;
  const dims: AttentionDims = { nH: cfg.numHeads, kvH: cfg.numKvHeads, hd: cfg.headDim };
  const w = (name: string, shape: number[]): string => g.init(p + name, shape, weights.get(p + name, shape));
  const { q, kv } = qkvBlock(d, layer, x, rope, input);
  const attn = treeAttention(g, layer, dims, q, kv, g.i64([0, 0, 2, -1, dims.hd]));
  const oW = weights.get(p + 'self_attn.o_proj.weight', [H, dims.nH * dims.hd]);
  const oB = cfg.oBias ? w('self_attn.o_proj.bias', [H]) : null;
  stream.pendingBranch = linearLayer(g, d.precision, attn, p + 'self_attn.o_proj.weight', oW, [H, dims.nH * dims.hd], oB, 'input_ids');
  const y = stream.addAndNorm(w('post_attention_layernorm.weight', [H]));
  stream.pendingBranch = mlpBlock(d, p, y);
  return kvBufferValues(layer, dims);
}

/**
 * The embedding table the input Gather reads, and the lookup. A file that stores the embedding in
 * float16 or bfloat16 keeps it so, and the gathered rows are cast to float32: the same values,
 * half the memory, and the table no longer doubles as the tied head's weight, whose float32 copy
 * onnxruntime then prepacks and frees (a table shared by Gather and Gemm is held twice).
 */
function embeddingLookup({ g, cfg, weights }: Decoder): { lookup: string; float32Table: string | null } {
  const shape = [cfg.vocabSize, cfg.hiddenSize];
  const table = weights.getHalf('model.embed_tokens.weight', shape) ?? weights.get('model.embed_tokens.weight', shape);
  return gatherEmbedding(g, 'model.embed_tokens.weight', shape, table, 'input_ids');
}

/**
 * Rows `ids` of an embedding table as float32. A 16-bit table stays 16-bit and the rows are cast
 * after the Gather (the same values); `float32Table` names a float32 table others may share.
 */
export function gatherEmbedding(g: GraphBuilder, name: string, shape: number[], table: Float32Array | HalfTensor, ids: string): { lookup: string; float32Table: string | null } {
  if (table instanceof Float32Array) {
    const t = g.init(name, shape, table);
    return { lookup: g.one('Gather', [t, ids], { axis: 0 }), float32Table: t };
  }
  const t = g.initHalf(name, shape, table);
  return { lookup: g.one('Cast', [g.one('Gather', [t, ids], { axis: 0 })], { to: DataType.FLOAT }), float32Table: null };
}

/**
 * Whether the output head is the embedding table itself: a tied head in float32 over a float32
 * table of at most one projection part. Otherwise the head is a matrix of its own (the memory
 * estimate counts it by the same rule).
 */
export function headSharesTable(tied: boolean, precision: WeightPrecision, float32Table: boolean, vocab: number, hidden: number): boolean {
  return tied && float32Table && weightBits(precision) === null && projectionBytes(vocab, hidden, null) <= MAX_PROJECTION_BYTES;
}

/**
 * The vocabulary projection the output heads share. A file without lm_head.weight ties it to the
 * embeddings even if config.json does not say so (transformers does the same when loading such a
 * checkpoint). A float32 tied head reuses a float32 embedding table; otherwise the head is its own
 * initializer (float32, or quantized). Either way the weights are added once.
 */
function lmHeadProjection({ g, cfg, weights, precision }: Decoder, float32Table: string | null): (x: string) => string {
  const V = cfg.vocabSize;
  const H = cfg.hiddenSize;
  const tied = cfg.tieWordEmbeddings || !weights.has('lm_head.weight');
  if (float32Table !== null && headSharesTable(tied, precision, true, V, H)) return (x) => gemm(g, x, float32Table, null);
  const source = tied ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const project = projection(g, precision, 'lm_head.weight', (rows) => weights.get(source, [V, H], rows), V, H);
  return (x) => project(x, 'head_rows');
}

export function buildGraph(cfg: ModelConfig, weights: WeightSource, options: GraphOptions = {}): BuiltGraph {
  const g = new GraphBuilder(options.weightStore);
  const d: Decoder = { g, cfg, weights, precision: options.precision ?? 'float32' };
  const H = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const inputs = sessionInputs();
  const outputs = headOutputs(V);

  const embedding = embeddingLookup(d);
  const rope = ropeBlock(d);

  const stream = new ResidualStream(d, embedding.lookup);
  const boundaries = options.featureBoundaries ?? [];
  const captured = new Map<number, string>();

  for (let layer = 0; layer < cfg.numLayers; layer++) {
    const p = `model.layers.${layer}.`;
    const w = (name: string, shape: number[]): string => g.init(p + name, shape, weights.get(p + name, shape));
    const x = stream.addAndNorm(w('input_layernorm.weight', [H]));
    // The stream entering this layer, the branch before it now added.
    if (boundaries.includes(layer)) captured.set(layer, stream.residual);
    const buffers = attentionAndMlp(d, stream, layer, x, rope);
    inputs.push(...buffers.inputs);
    outputs.push(...buffers.outputs);
  }

  const finalNorm = g.init('model.norm.weight', [H], weights.get('model.norm.weight', [H]));
  const normed = stream.addAndNorm(finalNorm);
  if (boundaries.includes(cfg.numLayers)) captured.set(cfg.numLayers, stream.residual);

  outputHeads(g, normed, lmHeadProjection(d, embedding.float32Table), (ids, name) => g.one('Cast', [ids], { to: DataType.INT32 }, name));
  if (boundaries.length > 0) {
    const kept = greedyPathRows(g);
    // Rows first, then the concatenation: with no rows asked for, nothing is copied.
    const keptRows = g.one('Gather', ['feature_rows', kept], { axis: 0 });
    const parts = boundaries.map((b) => g.one('Gather', [captured.get(b)!, keptRows], { axis: 0 }));
    g.one('Concat', parts, { axis: 1 }, 'features');
    g.one('Cast', [kept], { to: DataType.INT32 }, 'feature_kept');
    inputs.push(valueInfo('feature_rows', DataType.INT32, ['R4']), valueInfo('feature_parent', DataType.INT32, ['R4']));
    outputs.push(valueInfo('features', DataType.FLOAT, ['R5', boundaries.length * H]), valueInfo('feature_kept', DataType.INT32, ['R5']));
  }
  return { nodes: g.nodes, initializers: g.initializers, inputs, outputs };
}

/** Tree depth up to which greedyPathRows follows a row's path to its root (2^steps). */
export const FEATURE_PATH_STEPS = 7;
export const MAX_FEATURE_PATH_DEPTH = 2 ** FEATURE_PATH_STEPS;

/**
 * Which of the `feature_rows` can be accepted by greedy verification, as indices into them: a
 * row whose token is its parent row's argmax, whose parent's is its grandparent's, and so on up
 * to a root (`feature_parent` -1). `feature_parent[i]` is the index among the feature rows of row
 * i's parent, and the `argmax` output covers exactly the feature rows, in their order. Greedy
 * verification accepts a subset of these rows (a node is accepted iff its path agrees with the
 * target's argmax), so the rows whose features a head reads next step are among them, and the
 * rest of the tree's features are never copied out. All parents -1 keeps every row (a prefill,
 * or sampled verification). The path is checked by pointer jumping: after step s each row has
 * checked 2^s nodes of its path, so FEATURE_PATH_STEPS steps cover trees up to
 * MAX_FEATURE_PATH_DEPTH deep. Index 0 of each padded vector is the sentinel above a root.
 */
function greedyPathRows(g: GraphBuilder): string {
  const int64 = (x: string): string => g.one('Cast', [x], { to: DataType.INT64 });
  let ancestor = int64('feature_parent');
  const tokens = int64(g.one('Gather', ['input_ids', 'feature_rows'], { axis: 0 }));
  const parentArgmax = g.one('Gather', [g.one('Concat', [g.i64([-1]), int64('argmax')], { axis: 0 }), g.one('Add', [ancestor, g.i64([1])])], { axis: 0 });
  const isRoot = g.one('Less', [ancestor, g.i64([0])]);
  let onPath = int64(g.one('Or', [g.one('Equal', [tokens, parentArgmax]), isRoot]));
  for (let step = 0; step < FEATURE_PATH_STEPS; step++) {
    const at = g.one('Add', [ancestor, g.i64([1])]);
    onPath = g.one('Mul', [onPath, g.one('Gather', [g.one('Concat', [g.i64([1]), onPath], { axis: 0 }), at], { axis: 0 })]);
    ancestor = g.one('Gather', [g.one('Concat', [g.i64([-1]), ancestor], { axis: 0 }), at], { axis: 0 });
  }
  return g.one('Reshape', [g.one('NonZero', [onPath]), g.i64([-1])]);
}
