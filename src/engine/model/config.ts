// config.json → a normalised architecture description. Only what the graph builder and the
// runtime need; every field is checked here so later stages can trust it.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ModelLoadError } from './errors.js';
import type { ModelInfo } from './types.js';
import { jsonErrorPosition } from '../json-error.js';

export type Architecture = ModelInfo['architecture'];

export interface RopeConfig {
  theta: number;
  /** 'default' = plain RoPE; 'llama3' and 'linear' rescale the frequencies. */
  type: 'default' | 'llama3' | 'linear';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositions: number;
}

export interface ModelConfig {
  architecture: Architecture;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  rope: RopeConfig;
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry a bias (Qwen2, or Llama with attention_bias). */
  qkvBias: boolean;
  /** o_proj carries a bias (Llama attention_bias). */
  oBias: boolean;
  mlpBias: boolean;
  /** Per-head RMSNorm on q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  maxPositions: number;
  /** Sliding-window attention size, or null when every token sees the whole past. */
  slidingWindow: number | null;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** The dtype declared in config.json, if any (the weights' real dtype comes from safetensors). */
  declaredDtype: string | null;
}

const ARCHITECTURE_BY_CLASS: Record<string, Architecture> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  MistralForCausalLM: 'mistral',
};
const ARCHITECTURE_BY_MODEL_TYPE: Record<string, Architecture> = {
  llama: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  mistral: 'mistral',
};

export function readConfigJson(dir: string): { path: string; text: string; json: Record<string, unknown> } {
  const path = join(dir, 'config.json');
  if (!existsSync(dir)) throw new ModelLoadError(dir, 'folder does not exist');
  if (!existsSync(path)) throw new ModelLoadError(path, 'missing (not a Hugging Face model folder?)');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    // A config.json that is a folder or may not be read: the folder's fault, said in one line.
    throw new ModelLoadError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ModelLoadError(path, `not valid JSON${jsonErrorPosition(err)}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ModelLoadError(path, 'expected a JSON object');
  }
  return { path, text, json: json as Record<string, unknown> };
}

export function parseModelConfig(json: Record<string, unknown>, path: string): ModelConfig {
  const fail = (problem: string): never => {
    throw new ModelLoadError(path, problem);
  };
  const int = (key: string, fallback?: number): number => {
    const v = json[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      return fail(`missing "${key}"`);
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) return fail(`"${key}" must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const num = (obj: Record<string, unknown>, key: string, fallback: number, where = ''): number => {
    const v = obj[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(`"${where}${key}" must be a number, got ${JSON.stringify(v)}`);
    return v;
  };

  const classes = Array.isArray(json.architectures) ? (json.architectures as unknown[]).map(String) : [];
  const modelType = typeof json.model_type === 'string' ? json.model_type : '';
  let architecture: Architecture | undefined;
  for (const c of classes) architecture ??= ARCHITECTURE_BY_CLASS[c];
  architecture ??= ARCHITECTURE_BY_MODEL_TYPE[modelType];
  if (architecture === undefined) {
    const named = classes.length > 0 ? classes.join(', ') : modelType || '(none given)';
    fail(`unknown architecture ${named}; supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM`);
  }
  const arch = architecture as Architecture;

  const hiddenAct = json.hidden_act ?? 'silu';
  if (hiddenAct !== 'silu') fail(`hidden_act "${String(hiddenAct)}" is not supported (only silu)`);

  const hiddenSize = int('hidden_size');
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) fail(`num_attention_heads (${numHeads}) is not a multiple of num_key_value_heads (${numKvHeads})`);
  const headDimDefault = Math.floor(hiddenSize / numHeads);
  const headDim = int('head_dim', headDimDefault);
  if (headDim % 2 !== 0) fail(`head_dim (${headDim}) must be even for RoPE`);

  // RoPE: transformers 4.x keeps rope_theta + rope_scaling; 5.x moves both into rope_parameters.
  const ropeParams = (json.rope_parameters ?? json.rope_scaling ?? null) as Record<string, unknown> | null;
  if (ropeParams !== null && typeof ropeParams !== 'object') fail('"rope_scaling" must be an object or null');
  const theta = num(json, 'rope_theta', ropeParams ? num(ropeParams, 'rope_theta', 10000, 'rope_parameters.') : 10000);
  const ropeTypeRaw = ropeParams ? String(ropeParams.rope_type ?? ropeParams.type ?? 'default') : 'default';
  if (ropeTypeRaw !== 'default' && ropeTypeRaw !== 'llama3' && ropeTypeRaw !== 'linear') {
    fail(`rope type "${ropeTypeRaw}" is not supported (supported: default, llama3, linear)`);
  }
  const maxPositions = int('max_position_embeddings', 4096);
  const rope: RopeConfig = {
    theta,
    type: ropeTypeRaw as RopeConfig['type'],
    factor: ropeParams ? num(ropeParams, 'factor', 1, 'rope_scaling.') : 1,
    lowFreqFactor: ropeParams ? num(ropeParams, 'low_freq_factor', 1, 'rope_scaling.') : 1,
    highFreqFactor: ropeParams ? num(ropeParams, 'high_freq_factor', 4, 'rope_scaling.') : 4,
    originalMaxPositions: ropeParams ? num(ropeParams, 'original_max_position_embeddings', 8192, 'rope_scaling.') : 8192,
  };
  if (rope.type !== 'default' && !(rope.factor > 0)) fail('rope_scaling.factor must be positive');
  if (rope.type === 'llama3' && !(rope.highFreqFactor > rope.lowFreqFactor)) {
    fail('rope_scaling.high_freq_factor must exceed low_freq_factor');
  }

  const attentionBias = json.attention_bias === true;
  const qkvBias = arch === 'qwen2' ? true : attentionBias;
  const oBias = arch === 'qwen2' || arch === 'qwen3' ? false : attentionBias;

  let slidingWindow: number | null = null;
  const sw = json.sliding_window;
  const swUsed = arch === 'mistral' ? true : json.use_sliding_window === true;
  if (swUsed && typeof sw === 'number' && sw > 0) slidingWindow = sw;

  const eosRaw = json.eos_token_id;
  const eosTokenIds = Array.isArray(eosRaw)
    ? eosRaw.filter((v): v is number => typeof v === 'number')
    : typeof eosRaw === 'number'
      ? [eosRaw]
      : [];
  const bosTokenId = typeof json.bos_token_id === 'number' ? json.bos_token_id : null;
  const declared = json.torch_dtype ?? json.dtype;

  return {
    architecture: arch,
    vocabSize: int('vocab_size'),
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    numLayers: int('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: num(json, 'rms_norm_eps', 1e-6),
    rope,
    tieWordEmbeddings: json.tie_word_embeddings === true,
    qkvBias,
    oBias,
    mlpBias: json.mlp_bias === true,
    qkNorm: arch === 'qwen3',
    maxPositions,
    slidingWindow,
    bosTokenId,
    eosTokenIds,
    declaredDtype: typeof declared === 'string' ? declared : null,
  };
}

/** RoPE inverse frequencies [headDim/2], with Llama 3 / linear scaling applied (as transformers does). */
export function ropeInverseFrequencies(rope: RopeConfig, headDim: number): Float32Array {
  return Float32Array.from(inverseFrequencies(rope, headDim));
}

/**
 * Positions the graph's RoPE tables cover: the model's own maximum, and at least MIN_ROPE_ROWS so
 * that a small model can still be run past what it was trained on (its output is then its own
 * business); a session's maxLength may not exceed it.
 */
export function ropeTableRows(cfg: Pick<ModelConfig, 'maxPositions'>): number {
  return Math.max(cfg.maxPositions, MIN_ROPE_ROWS);
}
export const MIN_ROPE_ROWS = 4096;

/** cos and sin of position × inverse frequency, [rows, headDim/2] each, computed in float64. */
export function ropeTables(rope: RopeConfig, headDim: number, rows: number): { cosTable: Float32Array; sinTable: Float32Array } {
  const inv = inverseFrequencies(rope, headDim);
  const half = headDim / 2;
  const cosTable = new Float32Array(rows * half);
  const sinTable = new Float32Array(rows * half);
  for (let pos = 0; pos < rows; pos++) {
    for (let i = 0; i < half; i++) {
      cosTable[pos * half + i] = Math.cos(pos * inv[i]);
      sinTable[pos * half + i] = Math.sin(pos * inv[i]);
    }
  }
  return { cosTable, sinTable };
}

function inverseFrequencies(rope: RopeConfig, headDim: number): number[] {
  const half = headDim / 2;
  const out: number[] = [];
  for (let i = 0; i < half; i++) {
    let inv = 1 / Math.pow(rope.theta, (2 * i) / headDim);
    if (rope.type === 'linear') {
      inv /= rope.factor;
    } else if (rope.type === 'llama3') {
      const lowWavelen = rope.originalMaxPositions / rope.lowFreqFactor;
      const highWavelen = rope.originalMaxPositions / rope.highFreqFactor;
      const wavelen = (2 * Math.PI) / inv;
      if (wavelen > lowWavelen) {
        inv /= rope.factor;
      } else if (wavelen >= highWavelen) {
        const smooth = (rope.originalMaxPositions / wavelen - rope.lowFreqFactor) / (rope.highFreqFactor - rope.lowFreqFactor);
        inv = ((1 - smooth) * inv) / rope.factor + smooth * inv;
      }
    }
    out.push(inv);
  }
  return out;
}
