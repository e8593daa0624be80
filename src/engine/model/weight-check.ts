// Whether a folder's weights are the ones its config.json describes, from the safetensors headers
// alone: every tensor the decoder graph reads (graph-builder.ts) present with the shape the config
// implies, and no layer beyond the config's count. A folder whose weights disagree is refused when
// it is opened, in one line naming the first disagreement, instead of failing mid-build or running
// a model that is not what the config says.
import { dirname, join } from 'node:path';
import type { ModelConfig } from './config.js';
import { ModelLoadError } from './errors.js';
import type { WeightIndex } from './safetensors.js';

export interface ExpectedTensor {
  name: string;
  shape: number[];
}

/**
 * The tensors the graph reads for `cfg`, in the order it reads them. lm_head is left out: a file
 * without it ties the head to the embeddings (see optionalWeights).
 */
export function expectedWeights(cfg: ModelConfig): ExpectedTensor[] {
  const H = cfg.hiddenSize;
  const qDim = cfg.numHeads * cfg.headDim;
  const kvDim = cfg.numKvHeads * cfg.headDim;
  const I = cfg.intermediateSize;
  const out: ExpectedTensor[] = [{ name: 'model.embed_tokens.weight', shape: [cfg.vocabSize, H] }];
  for (let layer = 0; layer < cfg.numLayers; layer++) {
    const p = `model.layers.${layer}.`;
    const add = (name: string, shape: number[]) => out.push({ name: p + name, shape });
    add('input_layernorm.weight', [H]);
    add('self_attn.q_proj.weight', [qDim, H]);
    add('self_attn.k_proj.weight', [kvDim, H]);
    add('self_attn.v_proj.weight', [kvDim, H]);
    if (cfg.qkvBias) {
      add('self_attn.q_proj.bias', [qDim]);
      add('self_attn.k_proj.bias', [kvDim]);
      add('self_attn.v_proj.bias', [kvDim]);
    }
    if (cfg.qkNorm) {
      add('self_attn.q_norm.weight', [cfg.headDim]);
      add('self_attn.k_norm.weight', [cfg.headDim]);
    }
    add('self_attn.o_proj.weight', [H, qDim]);
    if (cfg.oBias) add('self_attn.o_proj.bias', [H]);
    add('post_attention_layernorm.weight', [H]);
    add('mlp.gate_proj.weight', [I, H]);
    add('mlp.up_proj.weight', [I, H]);
    if (cfg.mlpBias) {
      add('mlp.gate_proj.bias', [I]);
      add('mlp.up_proj.bias', [I]);
    }
    add('mlp.down_proj.weight', [H, I]);
    if (cfg.mlpBias) add('mlp.down_proj.bias', [H]);
  }
  out.push({ name: 'model.norm.weight', shape: [H] });
  return out;
}

/** Tensors the graph reads only when the file has them: an untied lm_head. */
export function optionalWeights(cfg: ModelConfig): ExpectedTensor[] {
  return cfg.tieWordEmbeddings ? [] : [{ name: 'lm_head.weight', shape: [cfg.vocabSize, cfg.hiddenSize] }];
}

const sameShape = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);
const shapeText = (shape: readonly number[]) => `[${shape.join(', ')}]`;

/**
 * The first way the weights disagree with the config, as the error to throw (naming the file the
 * tensor is in, or should be in); null when they agree.
 */
export function weightsMismatch(cfg: ModelConfig, weights: WeightIndex): ModelLoadError | null {
  const layers = `config.json has ${cfg.numLayers} layer${cfg.numLayers === 1 ? '' : 's'} of hidden size ${cfg.hiddenSize}`;
  const indexFile = weights.files.length === 1 ? weights.files[0].path : join(dirname(weights.files[0].path), 'model.safetensors.index.json');
  const wrongShape = (file: string, name: string, shape: readonly number[], expected: readonly number[]) =>
    new ModelLoadError(file, `${name} has shape ${shapeText(shape)}, config.json implies ${shapeText(expected)}: the weights do not match config.json`);
  for (const expected of expectedWeights(cfg)) {
    const entry = weights.tensors.get(expected.name);
    if (entry === undefined) return new ModelLoadError(indexFile, `missing tensor ${expected.name}: the weights do not match config.json (${layers})`);
    if (!sameShape(entry.shape, expected.shape)) return wrongShape(entry.file, expected.name, entry.shape, expected.shape);
  }
  for (const expected of optionalWeights(cfg)) {
    const entry = weights.tensors.get(expected.name);
    if (entry !== undefined && !sameShape(entry.shape, expected.shape)) return wrongShape(entry.file, expected.name, entry.shape, expected.shape);
  }
  let deepest = -1;
  for (const name of weights.tensors.keys()) {
    const match = /^model\.layers\.(\d+)\./.exec(name);
    if (match) deepest = Math.max(deepest, Number(match[1]));
  }
  if (deepest >= cfg.numLayers) {
    return new ModelLoadError(indexFile, `holds layer ${deepest}, and ${layers} (num_hidden_layers): the weights do not match config.json`);
  }
  return null;
}
