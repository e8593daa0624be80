// Builds the ONNX graph of an EAGLE-3 draft head (docs/model-runtime.md, "EAGLE-3 draft heads").
//
// The attention inputs, KV buffers and output heads are the decoder graph's (graph-builder.ts), so
// the same session code packs, masks and stores a head's rows, and its layers are built by the
// decoder's own blocks (fused q/k/v and gate/up projections, one RoPE kernel, norms that add the
// residual in their kernel), so a head forward runs as few kernels as a decoder layer does. What
// differs is a row's input: the token's embedding together with an incoming hidden state, which is
// either fc(target features) (a committed position) or the head's own pre-norm output at the
// parent node (a drafted one):
//   features [F, 3·H_target], prev_hidden [P, H]   the two kinds of incoming state
//   hidden_source [N] int32                        row of [fc(features); prev_hidden] each packed row reads
// extra outputs:
//   hidden_out [N, H]                              pre-norm output of every packed row (its children read it)
// topk_ids and argmax are target ids (draft id + d2t[draft id]); logits are over the draft vocabulary.
import type { WeightPrecision } from '../../shared/config.js';
import type { Eagle3Config } from './eagle3-config.js';
import {
  attentionAndMlp,
  gatherEmbedding,
  GraphBuilder,
  headOutputs,
  linearLayer,
  outputHeads,
  projection,
  ResidualStream,
  rmsNorm,
  ropeBlock,
  sessionInputs,
  valueInfo,
  type BuiltGraph,
  type Decoder,
  type WeightSource,
  type WeightStore,
} from './graph-builder.js';
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
  const V = L.vocabSize;
  const Vd = cfg.draftVocabSize;
  const Ht = cfg.targetHiddenSize;
  const w = weights.head;
  const d: Decoder = { g, cfg: L, weights: w, precision };

  const inputs: ValueInfoProtoJs[] = [
    ...sessionInputs(),
    valueInfo('features', DataType.FLOAT, ['F', 3 * Ht]),
    valueInfo('prev_hidden', DataType.FLOAT, ['P', H]),
    valueInfo('hidden_source', DataType.INT32, ['N']),
  ];
  const outputs: ValueInfoProtoJs[] = [...headOutputs(Vd), valueInfo('hidden_out', DataType.FLOAT, ['N', H])];
  const norm = (name: string): string => g.init(name, [H], w.get(name, [H]));
  const bias = (name: string, n: number, used: boolean): string | null => (used ? g.init(name, [n], w.get(name, [n])) : null);
  const rope = ropeBlock(d);

  // The incoming state of every row: fc(features) for committed positions, the parent's output otherwise.
  const fcOut = linearLayer(g, precision, 'features', 'fc.weight', w.get('fc.weight', [H, 3 * Ht]), [H, 3 * Ht], bias('fc.bias', H, cfg.fcBias));
  const incoming = g.one('Gather', [g.one('Concat', [fcOut, 'prev_hidden'], { axis: 0 }), 'hidden_source'], { axis: 0 });
  const tokenEmbedding = gatherEmbedding(g, 'embed_tokens.weight', [V, H], weights.embedding, 'input_ids').lookup;

  // The incoming state is layer 0's residual; each layer's attention and MLP are branches added to it.
  const stream = new ResidualStream(d, incoming);
  for (let layer = 0; layer < L.numLayers; layer++) {
    // Layer 0 (midlayer) reads [input_layernorm(embedding), hidden_norm(incoming)], twice the width.
    const prefix = layer === 0 ? 'midlayer.' : `layers.${layer}.`;
    const x =
      layer === 0
        ? g.one('Concat', [rmsNorm(d, tokenEmbedding, norm(`${prefix}input_layernorm.weight`)), rmsNorm(d, incoming, norm(`${prefix}hidden_norm.weight`))], { axis: 1 })
        : stream.addAndNorm(norm(`${prefix}input_layernorm.weight`));
    const buffers = attentionAndMlp(d, stream, layer, x, rope, { prefix, width: layer === 0 ? 2 * H : H });
    inputs.push(...buffers.inputs);
    outputs.push(...buffers.outputs);
  }
  const normed = stream.addAndNorm(norm('norm.weight'));
  // The pre-norm output, which a drafted child row reads as its incoming state.
  g.one('Identity', [stream.residual], {}, 'hidden_out');

  const lmHead = w.get('lm_head.weight', [Vd, H]);
  // One projection initializer shared by the three heads (quantized once).
  const projectShared = projection(g, precision, 'lm_head.weight', lmHead, Vd, H);
  // The output heads as in the decoder graph; their ids map from the draft vocabulary to the target's.
  const toTarget = g.init('draft_to_target', [Vd], weights.draftToTarget);
  outputHeads(g, normed, projectShared, (ids, name) => g.one('Gather', [toTarget, ids], { axis: 0 }, name));

  return { nodes: g.nodes, initializers: g.initializers, inputs, outputs };
}
