// The KV buffers of a session: per layer one Float32Array [kvHeads, slots · stride, headDim] for K
// and one for V, fed to every run() as inputs (onnxruntime wraps CPU input buffers without
// copying). stride is maxLength rounded up to whole PAST_BLOCKs, the unit in which the graph
// gathers a past; head-major, so the graph gathers a request's past straight into the layout its
// attention MatMuls read (graph-builder.ts). Row slot·stride + r of each head holds position r of
// the slot's sequence.
import * as ort from 'onnxruntime-node';
import { PAST_BLOCK } from './graph-builder.js';

export interface KvShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
}

/** The rows one entry's new tokens take: `count` packed rows from `firstRow` of the buffers. */
export interface NewRows {
  firstRow: number;
  count: number;
}

export class KvStore {
  /** Rows of a slot in the buffers: maxLength rounded up to whole past blocks. */
  readonly slotStride: number;
  private readonly kvHeads: number;
  private readonly headDim: number;
  /** Floats between one KV head's rows and the next head's in a buffer. */
  private headStride: number;
  private slotCount: number;
  private readonly keys: Float32Array[] = [];
  private readonly values: Float32Array[] = [];
  private readonly keyTensors: ort.Tensor[] = [];
  private readonly valueTensors: ort.Tensor[] = [];

  constructor(shape: KvShape, slots: number, maxLength: number) {
    this.kvHeads = shape.numKvHeads;
    this.headDim = shape.headDim;
    this.slotStride = Math.ceil(maxLength / PAST_BLOCK) * PAST_BLOCK;
    this.slotCount = slots;
    this.headStride = slots * this.slotStride * shape.headDim;
    for (let l = 0; l < shape.numLayers; l++) {
      const k = new Float32Array(this.headStride * this.kvHeads);
      const v = new Float32Array(this.headStride * this.kvHeads);
      this.keys.push(k);
      this.values.push(v);
      this.keyTensors.push(this.tensor(k));
      this.valueTensors.push(this.tensor(v));
    }
  }

  /** Slots the buffers hold. */
  get slots(): number {
    return this.slotCount;
  }

  /** Bytes held by the buffers (fixed until grow()). */
  get bytes(): number {
    return this.keys.length * 2 * this.headStride * this.kvHeads * 4;
  }

  /**
   * Reallocates the buffers for `slots` slots, every existing slot's rows copied to the same slot
   * and row (a slot's rows sit at slot·stride + r inside each head's block, so a head's old block
   * is a prefix of its new one). One layer at a time, so the extra memory at any moment is one
   * layer's new keys and values. `onLayer` hears each layer done (0-based) and may yield.
   */
  async grow(slots: number, onLayer?: (layer: number, layers: number) => Promise<void> | void): Promise<void> {
    if (!Number.isInteger(slots) || slots < this.slotCount) throw new Error(`KV buffers grow only: ${this.slotCount} slots to ${slots}`);
    if (slots === this.slotCount) return;
    const oldHeadStride = this.headStride;
    const newHeadStride = slots * this.slotStride * this.headDim;
    const copy = (old: Float32Array): Float32Array => {
      const next = new Float32Array(newHeadStride * this.kvHeads);
      for (let h = 0; h < this.kvHeads; h++) next.set(old.subarray(h * oldHeadStride, (h + 1) * oldHeadStride), h * newHeadStride);
      return next;
    };
    this.headStride = newHeadStride;
    this.slotCount = slots;
    for (let l = 0; l < this.keys.length; l++) {
      this.keys[l] = copy(this.keys[l]);
      this.values[l] = copy(this.values[l]);
      this.keyTensors[l].dispose();
      this.valueTensors[l].dispose();
      this.keyTensors[l] = this.tensor(this.keys[l]);
      this.valueTensors[l] = this.tensor(this.values[l]);
      await onLayer?.(l, this.keys.length);
    }
  }

  /** Fed as [kvH, slots·stride/P, P·hd]: the graph gathers the past in blocks of P = PAST_BLOCK rows. */
  private tensor(data: Float32Array): ort.Tensor {
    return new ort.Tensor('float32', data, [this.kvHeads, (this.slotCount * this.slotStride) / PAST_BLOCK, PAST_BLOCK * this.headDim]);
  }

  /** Adds every layer's past_key_l / past_value_l to a run's feeds. */
  addFeeds(feeds: Record<string, ort.Tensor>): void {
    for (let l = 0; l < this.keys.length; l++) {
      feeds[`past_key_${l}`] = this.keyTensors[l];
      feeds[`past_value_${l}`] = this.valueTensors[l];
    }
  }

  /**
   * Stores the new tokens' K/V of layer `layer` ([N, kvH, hd], row-major as the graph computes
   * them, entries packed in order) in the given rows. Plain loops: most entries are a row or two,
   * where subarray() + set() cost more in view objects than in copying.
   */
  write(layer: number, newK: Float32Array, newV: Float32Array, entries: readonly NewRows[]): void {
    const hd = this.headDim;
    const rowFloats = this.kvHeads * hd;
    const keys = this.keys[layer];
    const values = this.values[layer];
    let packedRow = 0;
    for (const { firstRow, count } of entries) {
      for (let t = 0; t < count; t++, packedRow++) {
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

  /** Copies row `from` of every layer and head to row `to` (rows of the buffers, as slot·stride + r). */
  moveRow(from: number, to: number): void {
    const hd = this.headDim;
    for (let l = 0; l < this.keys.length; l++) {
      for (let h = 0; h < this.kvHeads; h++) {
        const head = h * this.headStride;
        this.keys[l].copyWithin(head + to * hd, head + from * hd, head + from * hd + hd);
        this.values[l].copyWithin(head + to * hd, head + from * hd, head + from * hd + hd);
      }
    }
  }
}
