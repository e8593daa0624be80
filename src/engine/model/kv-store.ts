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
  private readonly headStride: number;
  private readonly keys: Float32Array[] = [];
  private readonly values: Float32Array[] = [];
  private readonly keyTensors: ort.Tensor[] = [];
  private readonly valueTensors: ort.Tensor[] = [];

  constructor(shape: KvShape, slots: number, maxLength: number) {
    this.kvHeads = shape.numKvHeads;
    this.headDim = shape.headDim;
    this.slotStride = Math.ceil(maxLength / PAST_BLOCK) * PAST_BLOCK;
    this.headStride = slots * this.slotStride * shape.headDim;
    const floats = slots * this.slotStride * shape.numKvHeads * shape.headDim;
    // Fed as [kvH, slots·stride/P, P·hd]: the graph gathers the past in blocks of P = PAST_BLOCK rows.
    const dims = [shape.numKvHeads, (slots * this.slotStride) / PAST_BLOCK, PAST_BLOCK * shape.headDim];
    for (let l = 0; l < shape.numLayers; l++) {
      const k = new Float32Array(floats);
      const v = new Float32Array(floats);
      this.keys.push(k);
      this.values.push(v);
      this.keyTensors.push(new ort.Tensor('float32', k, dims));
      this.valueTensors.push(new ort.Tensor('float32', v, dims));
    }
  }

  /** Bytes held by the buffers (fixed at load; they never grow). */
  get bytes(): number {
    return this.keys.length * 2 * this.headStride * this.kvHeads * 4;
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
