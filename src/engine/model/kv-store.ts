// The KV buffers of a session: per layer one Float32Array holding K and V, [kvHeads, 2 · slots ·
// stride, headDim] (per KV head its key rows of every slot, then its value rows), fed to every
// run() as an input (onnxruntime wraps CPU input buffers without copying). stride is maxLength
// rounded up to whole PAST_BLOCKs, the unit in which the graph gathers a past; head-major, so the
// graph gathers a request's past keys and values in one Gather, straight into the layout its
// attention MatMuls read (graph-builder.ts). Row slot·stride + r of each head's key half holds
// position r of the slot's sequence, and the same row of its value half that position's value.
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
  /** Floats of one KV head's keys (or values) of every slot: its value half starts this far after its key half. */
  private halfStride: number;
  private slotCount: number;
  private readonly buffers: Float32Array[] = [];
  private readonly tensors: ort.Tensor[] = [];

  constructor(shape: KvShape, slots: number, maxLength: number) {
    this.kvHeads = shape.numKvHeads;
    this.headDim = shape.headDim;
    this.slotStride = Math.ceil(maxLength / PAST_BLOCK) * PAST_BLOCK;
    this.slotCount = slots;
    this.halfStride = slots * this.slotStride * shape.headDim;
    for (let l = 0; l < shape.numLayers; l++) {
      const kv = new Float32Array(2 * this.halfStride * this.kvHeads);
      this.buffers.push(kv);
      this.tensors.push(this.tensor(kv));
    }
  }

  /** Slots the buffers hold. */
  get slots(): number {
    return this.slotCount;
  }

  /** Bytes held by the buffers (fixed until grow()). */
  get bytes(): number {
    return this.buffers.length * 2 * this.halfStride * this.kvHeads * 4;
  }

  /** Blocks of PAST_BLOCK rows from a key block to the block of the same rows' values (what the graph's past_index adds). */
  get valueBlockOffset(): number {
    return (this.slotCount * this.slotStride) / PAST_BLOCK;
  }

  /**
   * Reallocates the buffers for `slots` slots, every existing slot's rows copied to the same slot
   * and row (a slot's rows sit at slot·stride + r inside each head's key and value halves, so an
   * old half is a prefix of its new one). One layer at a time, so the extra memory at any moment is
   * one layer's new buffer. `onLayer` hears each layer done (0-based) and may yield.
   */
  async grow(slots: number, onLayer?: (layer: number, layers: number) => Promise<void> | void): Promise<void> {
    if (!Number.isInteger(slots) || slots < this.slotCount) throw new Error(`KV buffers grow only: ${this.slotCount} slots to ${slots}`);
    if (slots === this.slotCount) return;
    const oldHalf = this.halfStride;
    const newHalf = slots * this.slotStride * this.headDim;
    const copy = (old: Float32Array): Float32Array => {
      const next = new Float32Array(2 * newHalf * this.kvHeads);
      for (let half = 0; half < 2 * this.kvHeads; half++) next.set(old.subarray(half * oldHalf, (half + 1) * oldHalf), half * newHalf);
      return next;
    };
    this.halfStride = newHalf;
    this.slotCount = slots;
    for (let l = 0; l < this.buffers.length; l++) {
      this.buffers[l] = copy(this.buffers[l]);
      this.tensors[l].dispose();
      this.tensors[l] = this.tensor(this.buffers[l]);
      await onLayer?.(l, this.buffers.length);
    }
  }

  /** Fed as [kvH, 2·slots·stride/P, P·hd]: the graph gathers the past in blocks of P = PAST_BLOCK rows. */
  private tensor(data: Float32Array): ort.Tensor {
    return new ort.Tensor('float32', data, [this.kvHeads, (2 * this.slotCount * this.slotStride) / PAST_BLOCK, PAST_BLOCK * this.headDim]);
  }

  /** Adds every layer's past_kv_l to a run's feeds. */
  addFeeds(feeds: Record<string, ort.Tensor>): void {
    for (let l = 0; l < this.buffers.length; l++) feeds[`past_kv_${l}`] = this.tensors[l];
  }

  /**
   * Stores the new tokens' K/V of layer `layer` ([N, kvH, 2, hd]: per row and KV head its key, then
   * its value, as the graph computes them, entries packed in order) in the given rows. Plain loops:
   * most entries are a row or two, where subarray() + set() cost more in view objects than in copying.
   */
  write(layer: number, newKv: Float32Array, entries: readonly NewRows[]): void {
    const hd = this.headDim;
    const rowFloats = this.kvHeads * 2 * hd;
    const kv = this.buffers[layer];
    const half = this.halfStride;
    let packedRow = 0;
    for (const { firstRow, count } of entries) {
      for (let t = 0; t < count; t++, packedRow++) {
        for (let h = 0; h < this.kvHeads; h++) {
          let from = packedRow * rowFloats + 2 * h * hd;
          let to = 2 * h * half + (firstRow + t) * hd;
          for (const end = from + hd; from < end; from++, to++) {
            kv[to] = newKv[from];
            kv[to + half] = newKv[from + hd];
          }
        }
      }
    }
  }

  /** Copies row `from` of every layer and head to row `to` (rows of the buffers, as slot·stride + r), keys and values. */
  moveRow(from: number, to: number): void {
    const hd = this.headDim;
    for (const kv of this.buffers) {
      for (let half = 0; half < 2 * this.kvHeads; half++) {
        const start = half * this.halfStride;
        kv.copyWithin(start + to * hd, start + from * hd, start + from * hd + hd);
      }
    }
  }
}
