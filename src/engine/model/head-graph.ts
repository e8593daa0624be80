// Builds the ONNX graph of an EAGLE-3 draft head (docs/model-runtime.md, "EAGLE-3 draft heads").
//
// The attention inputs, KV buffers and output heads are the decoder graph's (graph-builder.ts), so
// the same session code packs, masks and stores a head's rows. What differs is a row's input: the
// token's embedding together with an incoming hidden state, which is either fc(target features)
// (a committed position) or the head's own pre-norm output at the parent node (a drafted one):
//   features [F, 3·H_target], prev_hidden [P, H]   the two kinds of incoming state
//   hidden_source [N] int32                        row of [fc(features); prev_hidden] each packed row reads
// extra outputs:
//   hidden_out [N, H]                              pre-norm output of every packed row (its children read it)
// topk_ids and argmax are target ids (draft id + d2t[draft id]); logits are over the draft vocabulary.
import type { WeightPrecision } from '../../shared/config.js';
import { ropeInverseFrequencies } from './config.js';
import type { Eagle3Config } from './eagle3-config.js';
import { gatherEmbedding, GraphBuilder, headOutputs, kvBufferValues, linearLayer, outputHeads, projection, sessionInputs, treeAttention, valueInfo, type AttentionDims, type BuiltGraph, type WeightSource, type WeightStore } from './graph-builder.js';
import { DataType, type ValueInfoProtoJs } from './onnx-proto.js';
import type { HalfTensor } from './safetensors.js';

export interface HeadWeights {
  /** The head's own tensors, by their published name without the `model.` prefix. */
  head: WeightSource;
  /** [vocab, H] token embedding: the head's own, or the target's when the head has none (16-bit tables stay so). */
  embedding: Float32Array | HalfTensor;
  /** Target id of each draft id. */
  draftToTarget: Int32Array;
}

export function buildHeadGraph(cfg: Eagle3Config, weights: HeadWeights, options: { precision?: WeightPrecision; weightStore?: WeightStore } = {}): BuiltGraph {
  const precision = options.precision ?? 'float32';
  const g = new GraphBuilder(options.weightStore);
  const L = cfg.layers;
  const H = L.hiddenSize;
  const hd = L.headDim;
  const nH = L.numHeads;
  const kvH = L.numKvHeads;
  const V = L.vocabSize;
  const Vd = cfg.draftVocabSize;
  const I = L.intermediateSize;
  const Ht = cfg.targetHiddenSize;
  const qDim = nH * hd;
  const kvDim = kvH * hd;
  const w = weights.head;

  const inputs: ValueInfoProtoJs[] = [
    ...sessionInputs(),
    valueInfo('features', DataType.FLOAT, ['F', 3 * Ht]),
    valueInfo('prev_hidden', DataType.FLOAT, ['P', H]),
    valueInfo('hidden_source', DataType.INT32, ['N']),
  ];
  const outputs: ValueInfoProtoJs[] = [...headOutputs(Vd), valueInfo('hidden_out', DataType.FLOAT, ['N', H])];
  const dims: AttentionDims = { nH, kvH, hd };

  const linear = (x: string, name: string, data: Float32Array, shape: [number, number], bias: string | null): string => linearLayer(g, precision, x, name, data, shape, bias);
  const rmsNorm = (x: string, weight: string, axis: number): string => {
    const sq = g.one('Pow', [x, g.f32(2)]);
    const mean = g.one('ReduceMean', [sq], { axes: [axis], keepdims: 1 });
    const denom = g.one('Sqrt', [g.one('Add', [mean, g.f32(L.rmsNormEps)])]);
    return g.one('Mul', [g.one('Div', [x, denom]), weight]);
  };

  // RoPE as in the decoder graph: rope(x) = x·cos + swap_halves(x)·signed_sin.
  const invFreq = g.init('rope_inv_freq', [hd / 2], ropeInverseFrequencies(L.rope, hd));
  const posF = g.one('Unsqueeze', [g.one('Cast', ['positions'], { to: DataType.FLOAT }), g.i64([1])]);
  const half = g.one('Mul', [posF, invFreq]);
  const angles = g.one('Unsqueeze', [g.one('Concat', [half, half], { axis: 1 }), g.i64([1])]);
  const cos = g.one('Cos', [angles]);
  const sign = new Float32Array(hd).map((_, i) => (i < hd / 2 ? -1 : 1));
  const signedSin = g.one('Mul', [g.one('Sin', [angles]), g.init('rope_sign', [hd], sign)]);
  const halves = g.i64([hd / 2, hd / 2]);
  const rope = (x: string): string => {
    const [x1, x2] = g.op('Split', [x, halves], { axis: 2 }, 2);
    return g.one('Add', [g.one('Mul', [x, cos]), g.one('Mul', [g.one('Concat', [x2, x1], { axis: 2 }), signedSin])]);
  };
  const pastRows = g.i64([0, 0, 2, -1, hd]);

  /** q, k, v of one layer (RoPE on q and k), then the decoder graph's tree attention over its KV buffers; returns [N, qDim]. */
  const attention = (layer: number, x: string, inWidth: number, p: string): string => {
    const scale = 1 / Math.sqrt(hd);
    const qkvW = new Float32Array((qDim + 2 * kvDim) * inWidth);
    qkvW.set(w.get(p + 'self_attn.q_proj.weight', [qDim, inWidth]).map((v) => v * scale), 0);
    qkvW.set(w.get(p + 'self_attn.k_proj.weight', [kvDim, inWidth]), qDim * inWidth);
    qkvW.set(w.get(p + 'self_attn.v_proj.weight', [kvDim, inWidth]), (qDim + kvDim) * inWidth);
    let qkvB: string | null = null;
    if (L.qkvBias) {
      const b = new Float32Array(qDim + 2 * kvDim);
      b.set(w.get(p + 'self_attn.q_proj.bias', [qDim]).map((v) => v * scale), 0);
      b.set(w.get(p + 'self_attn.k_proj.bias', [kvDim]), qDim);
      b.set(w.get(p + 'self_attn.v_proj.bias', [kvDim]), qDim + kvDim);
      qkvB = g.init(`${p}qkv_bias`, [qDim + 2 * kvDim], b);
    }
    const qkv = linear(x, `${p}qkv_proj.weight`, qkvW, [qDim + 2 * kvDim, inWidth], qkvB);
    const [qkFlat, vFlat] = g.op('Split', [qkv, g.i64([qDim + kvDim, kvDim])], { axis: 1 }, 2);
    const qk = g.one('Reshape', [qkFlat, g.i64([-1, nH + kvH, hd])]);
    const [qRoped, kRoped] = g.op('Split', [rope(qk), g.i64([nH, kvH])], { axis: 1 }, 2);
    // The attention's layouts: q [N, kvH, G, hd], k and v together [N, kvH, 2, hd] as the session
    // stores them; the past comes as [kvH, 2·S/P, P·hd] blocks.
    const q = g.one('Reshape', [qRoped, g.i64([-1, kvH, nH / kvH, hd])]);
    const k = g.one('Reshape', [kRoped, g.i64([-1, kvH, 1, hd])]);
    const v = g.one('Reshape', [vFlat, g.i64([-1, kvH, 1, hd])]);
    const kv = g.one('Concat', [k, v], { axis: 2 }, `new_kv_${layer}`);
    const buffers = kvBufferValues(layer, dims);
    inputs.push(...buffers.inputs);
    outputs.push(...buffers.outputs);
    return treeAttention(g, layer, dims, q, kv, pastRows);
  };
  const norm = (name: string): string => g.init(name, [H], w.get(name, [H]));
  const bias = (name: string, n: number, used: boolean): string | null => (used ? g.init(name, [n], w.get(name, [n])) : null);
  /** o_proj + residual, then the SiLU MLP + residual. */
  const finishLayer = (attn: string, residual: string, p: string): string => {
    const o = linear(attn, `${p}self_attn.o_proj.weight`, w.get(`${p}self_attn.o_proj.weight`, [H, qDim]), [H, qDim], bias(`${p}self_attn.o_proj.bias`, H, L.oBias));
    const h = g.one('Add', [residual, o]);
    const y = rmsNorm(h, norm(`${p}post_attention_layernorm.weight`), 1);
    const gate = linear(y, `${p}mlp.gate_proj.weight`, w.get(`${p}mlp.gate_proj.weight`, [I, H]), [I, H], bias(`${p}mlp.gate_proj.bias`, I, L.mlpBias));
    const up = linear(y, `${p}mlp.up_proj.weight`, w.get(`${p}mlp.up_proj.weight`, [I, H]), [I, H], bias(`${p}mlp.up_proj.bias`, I, L.mlpBias));
    const act = g.one('Mul', [g.one('Mul', [gate, g.one('Sigmoid', [gate])]), up]);
    const down = linear(act, `${p}mlp.down_proj.weight`, w.get(`${p}mlp.down_proj.weight`, [H, I]), [H, I], bias(`${p}mlp.down_proj.bias`, H, L.mlpBias));
    return g.one('Add', [h, down]);
  };

  // The incoming state of every row: fc(features) for committed positions, the parent's output otherwise.
  const fcOut = linear('features', 'fc.weight', w.get('fc.weight', [H, 3 * Ht]), [H, 3 * Ht], bias('fc.bias', H, cfg.fcBias));
  const incoming = g.one('Gather', [g.one('Concat', [fcOut, 'prev_hidden'], { axis: 0 }), 'hidden_source'], { axis: 0 });
  const tokenEmbedding = gatherEmbedding(g, 'embed_tokens.weight', [V, H], weights.embedding, 'input_ids').lookup;

  // Layer 0 (midlayer): q/k/v read [input_layernorm(embedding), hidden_norm(incoming)].
  const first = 'midlayer.';
  const x0 = g.one('Concat', [rmsNorm(tokenEmbedding, norm(`${first}input_layernorm.weight`), 1), rmsNorm(incoming, norm(`${first}hidden_norm.weight`), 1)], { axis: 1 });
  let hidden = finishLayer(attention(0, x0, 2 * H, first), incoming, first);
  for (let layer = 1; layer < L.numLayers; layer++) {
    const p = `layers.${layer}.`;
    const x = rmsNorm(hidden, norm(`${p}input_layernorm.weight`), 1);
    hidden = finishLayer(attention(layer, x, H, p), hidden, p);
  }
  g.one('Identity', [hidden], {}, 'hidden_out');

  const normed = rmsNorm(hidden, norm('norm.weight'), 1);
  const lmHead = w.get('lm_head.weight', [Vd, H]);
  // One projection initializer shared by the three heads (quantized once).
  const projectShared = projection(g, precision, 'lm_head.weight', lmHead, Vd, H);
  // The output heads as in the decoder graph; their ids map from the draft vocabulary to the target's.
  const toTarget = g.init('draft_to_target', [Vd], weights.draftToTarget);
  outputHeads(g, normed, projectShared, (ids, name) => g.one('Gather', [toTarget, ids], { axis: 0 }, name));

  return { nodes: g.nodes, initializers: g.initializers, inputs, outputs };
}
