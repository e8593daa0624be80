// Small random-weight Hugging Face model folders, written inside tests (no downloads): config.json,
// model.safetensors (or shards + index), tokenizer.json and tokenizer_config.json. Exported for
// other test suites (the speculative engine's) to reuse.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../../src/engine/rng.js';
import { mulberry32 } from '../../shared/mulberry32.js';

export type FixtureArchitecture = 'llama' | 'qwen2' | 'qwen3' | 'mistral';
export type FixtureDtype = 'float32' | 'float16' | 'bfloat16';

export interface FixtureOptions {
  architecture?: FixtureArchitecture;
  hiddenSize?: number;
  intermediateSize?: number;
  numLayers?: number;
  numHeads?: number;
  numKvHeads?: number;
  /** Explicit head_dim in config.json (Qwen3 style); default hiddenSize / numHeads. */
  headDim?: number;
  /** Default: the fixture tokenizer's size. Larger pads the vocabulary. */
  vocabSize?: number;
  tieWordEmbeddings?: boolean;
  dtype?: FixtureDtype;
  /** Llama 3 style rope_scaling. */
  llama3RopeScaling?: boolean;
  /** Split the weights over this many shard files (with model.safetensors.index.json). */
  shards?: number;
  /** Weight RNG seed: the same seed and shape give the same weights (a draft/target pair can differ). */
  seed?: number;
  /** Skip tokenizer.json (to test the error). */
  withoutTokenizer?: boolean;
  /** Llama with attention_bias: q/k/v/o projections carry biases. */
  attentionBias?: boolean;
  /** Write a chat_template into tokenizer_config.json. */
  chatTemplate?: string;
  /** Mistral's sliding_window (default 4096); with `useSlidingWindow`, Qwen2's. */
  slidingWindow?: number;
  /** Qwen2's use_sliding_window. */
  useSlidingWindow?: boolean;
}

export interface FixtureTensor {
  shape: number[];
  /** The values exactly as stored (already rounded to the fixture's dtype). */
  data: Float32Array;
}

export interface FixtureModel {
  dir: string;
  config: Record<string, unknown>;
  tensors: Map<string, FixtureTensor>;
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  architecture: FixtureArchitecture;
}

const ARCH_CLASS: Record<FixtureArchitecture, string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  mistral: 'MistralForCausalLM',
};

function floatToHalfBits(value: number): number {
  const f32 = new Float32Array([value]);
  const x = new Uint32Array(f32.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant = (mant | 0x800000) >> (1 - exp);
    return sign | ((mant + 0x1000) >> 13);
  }
  if (exp >= 31) return sign | 0x7c00;
  const rounded = (exp << 10) | (mant >> 13);
  return sign | (rounded + ((mant >> 12) & 1));
}

function halfBitsToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** Encodes values in `dtype` and returns the bytes plus the values as they round-trip. */
function encode(values: Float32Array, dtype: FixtureDtype): { bytes: Uint8Array; stored: Float32Array } {
  if (dtype === 'float32') return { bytes: new Uint8Array(values.slice().buffer), stored: values };
  const halves = new Uint16Array(values.length);
  const stored = new Float32Array(values.length);
  const u32 = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < values.length; i++) {
    if (dtype === 'float16') {
      halves[i] = floatToHalfBits(values[i]);
      stored[i] = halfBitsToFloat(halves[i]);
    } else {
      halves[i] = u32[i] >>> 16; // truncation is a valid bf16 value; rounding mode does not matter here
      stored[i] = new Float32Array(new Uint32Array([halves[i] << 16]).buffer)[0];
    }
  }
  return { bytes: new Uint8Array(halves.buffer), stored };
}

/** Writes a safetensors file holding `names` from `tensors`. */
export function writeSafetensors(path: string, entries: { name: string; shape: number[]; bytes: Uint8Array; dtype: FixtureDtype }[]): void {
  const tag = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' } as const;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const e of entries) {
    header[e.name] = { dtype: tag[e.dtype], shape: e.shape, data_offsets: [offset, offset + e.bytes.length] };
    offset += e.bytes.length;
  }
  let headerText = JSON.stringify(header);
  while ((8 + headerText.length) % 8 !== 0) headerText += ' ';
  const headerBytes = Buffer.from(headerText, 'utf8');
  const out = Buffer.alloc(8 + headerBytes.length + offset);
  out.writeBigUInt64LE(BigInt(headerBytes.length), 0);
  headerBytes.copy(out, 8);
  let pos = 8 + headerBytes.length;
  for (const e of entries) {
    out.set(e.bytes, pos);
    pos += e.bytes.length;
  }
  writeFileSync(path, out);
}

// GPT-2 byte ↔ unicode map used by byte-level BPE tokenizers.
function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (keep.includes(b)) map[b] = String.fromCharCode(b);
    else map[b] = String.fromCharCode(256 + extra++);
  }
  return map;
}

const MERGES: [string, string][] = [
  ['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['i', 'n'], ['e', 'r'], ['a', 'n'], ['o', 'n'], ['Ġ', 'a'],
  ['r', 'e'], ['Ġ', 's'], ['e', 'n'], ['a', 't'], ['o', 'r'], ['Ġ', 'w'], ['i', 's'], ['Ġ', 'c'],
  ['e', 's'], ['Ġ', 'o'], ['in', 'g'], ['Ġ', 'b'], ['Ġ', 'f'], ['e', 'd'], ['Ġ', 'p'], ['Ġa', 'n'],
  ['Ġan', 'd'], ['l', 'l'], ['Ġ', 'm'], ['o', 'u'], ['Ġo', 'f'], ['Ġ', 'h'], ['i', 't'], ['Ġ', 'd'],
];
export const FIXTURE_SPECIAL_TOKENS = ['<s>', '</s>', '<|pad|>'] as const;

/** A byte-level BPE tokenizer.json (256 byte tokens, a few merges, <s> </s> <|pad|>). */
export function fixtureTokenizerJson(): { json: Record<string, unknown>; size: number; bosId: number; eosId: number } {
  const byteMap = bytesToUnicode();
  const vocab: Record<string, number> = {};
  byteMap.forEach((ch, i) => (vocab[ch] = i));
  let next = 256;
  for (const [a, b] of MERGES) vocab[a + b] = next++;
  const bosId = next;
  const eosId = next + 1;
  const added = FIXTURE_SPECIAL_TOKENS.map((content, k) => ({
    id: next + k,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const size = next + FIXTURE_SPECIAL_TOKENS.length;
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [bosId], tokens: ['<s>'] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  return { json, size, bosId, eosId };
}

/** Writes a random-weight model folder into `dir` and returns its weights for reference checks. */
export function writeFixtureModel(dir: string, options: FixtureOptions = {}): FixtureModel {
  mkdirSync(dir, { recursive: true });
  const architecture = options.architecture ?? 'llama';
  const tok = fixtureTokenizerJson();
  const H = options.hiddenSize ?? 48;
  const I = options.intermediateSize ?? 2 * H;
  const L = options.numLayers ?? 2;
  const nH = options.numHeads ?? 4;
  const kvH = options.numKvHeads ?? 2;
  const hd = options.headDim ?? H / nH;
  const V = options.vocabSize ?? tok.size;
  const dtype = options.dtype ?? 'float32';
  const tied = options.tieWordEmbeddings ?? false;
  const rand = mulberry32(options.seed ?? 1234);
  const qkvBias = architecture === 'qwen2' || options.attentionBias === true;
  const oBias = options.attentionBias === true;
  const qkNorm = architecture === 'qwen3';

  const tensors = new Map<string, FixtureTensor>();
  const order: { name: string; shape: number[]; bytes: Uint8Array }[] = [];
  const add = (name: string, shape: number[], make: () => number): void => {
    const count = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(count);
    for (let i = 0; i < count; i++) values[i] = make();
    const { bytes, stored } = encode(values, dtype);
    tensors.set(name, { shape, data: stored });
    order.push({ name, shape, bytes });
  };
  const uniform = (scale: number) => () => (rand() * 2 - 1) * scale;
  const nearOne = () => 1 + (rand() * 2 - 1) * 0.2;
  const lin = (inDim: number) => uniform(Math.sqrt(3 / inDim));

  add('model.embed_tokens.weight', [V, H], uniform(1));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}.`;
    add(p + 'input_layernorm.weight', [H], nearOne);
    add(p + 'self_attn.q_proj.weight', [nH * hd, H], lin(H));
    add(p + 'self_attn.k_proj.weight', [kvH * hd, H], lin(H));
    add(p + 'self_attn.v_proj.weight', [kvH * hd, H], lin(H));
    if (qkvBias) {
      add(p + 'self_attn.q_proj.bias', [nH * hd], uniform(0.5));
      add(p + 'self_attn.k_proj.bias', [kvH * hd], uniform(0.5));
      add(p + 'self_attn.v_proj.bias', [kvH * hd], uniform(0.5));
    }
    if (qkNorm) {
      add(p + 'self_attn.q_norm.weight', [hd], nearOne);
      add(p + 'self_attn.k_norm.weight', [hd], nearOne);
    }
    add(p + 'self_attn.o_proj.weight', [H, nH * hd], lin(nH * hd));
    if (oBias) add(p + 'self_attn.o_proj.bias', [H], uniform(0.5));
    add(p + 'post_attention_layernorm.weight', [H], nearOne);
    add(p + 'mlp.gate_proj.weight', [I, H], lin(H));
    add(p + 'mlp.up_proj.weight', [I, H], lin(H));
    add(p + 'mlp.down_proj.weight', [H, I], lin(I));
  }
  add('model.norm.weight', [H], nearOne);
  if (!tied) add('lm_head.weight', [V, H], lin(H));

  const config: Record<string, unknown> = {
    architectures: [ARCH_CLASS[architecture]],
    model_type: architecture,
    hidden_size: H,
    intermediate_size: I,
    num_hidden_layers: L,
    num_attention_heads: nH,
    num_key_value_heads: kvH,
    vocab_size: V,
    hidden_act: 'silu',
    max_position_embeddings: 512,
    rms_norm_eps: 1e-5,
    rope_theta: architecture === 'llama' ? 500000 : 10000,
    tie_word_embeddings: tied,
    torch_dtype: dtype,
    bos_token_id: tok.bosId,
    eos_token_id: tok.eosId,
  };
  if (options.headDim !== undefined || architecture === 'qwen3') config.head_dim = hd;
  if (architecture === 'mistral') config.sliding_window = options.slidingWindow ?? 4096;
  if (options.useSlidingWindow) {
    config.use_sliding_window = true;
    config.sliding_window = options.slidingWindow ?? 4096;
  }
  if (options.attentionBias) config.attention_bias = true;
  if (options.llama3RopeScaling) {
    // A short original context so that all three frequency bands occur at this head size.
    config.rope_scaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 };
  }
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));

  const shards = options.shards ?? 1;
  if (shards <= 1) {
    writeSafetensors(join(dir, 'model.safetensors'), order.map((e) => ({ ...e, dtype })));
  } else {
    const weightMap: Record<string, string> = {};
    const per = Math.ceil(order.length / shards);
    for (let s = 0; s < shards; s++) {
      const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = order.slice(s * per, (s + 1) * per);
      for (const e of part) weightMap[e.name] = file;
      writeSafetensors(join(dir, file), part.map((e) => ({ ...e, dtype })));
    }
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }, null, 2));
  }

  if (!options.withoutTokenizer) {
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok.json));
    const tokConfig: Record<string, unknown> = {
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: '<s>',
      eos_token: '</s>',
      pad_token: '<|pad|>',
      add_bos_token: true,
    };
    if (options.chatTemplate !== undefined) tokConfig.chat_template = options.chatTemplate;
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokConfig, null, 2));
  }

  return { dir, config, tensors, vocabSize: V, hiddenSize: H, numLayers: L, numHeads: nH, numKvHeads: kvH, headDim: hd, intermediateSize: I, architecture };
}

/**
 * A draft/target pair of fixture models: `targetDir` gets a random model, `draftDir` the same one
 * with every weight scaled by (1 + noise · u), u uniform in [−1, 1] drawn from Rng(seed, stream):
 * a draft that agrees with the target often but not always. Returns the target's weights.
 */
export function writePerturbedPair(
  targetDir: string,
  draftDir: string,
  options: FixtureOptions & { seed: number },
  perturbation: { noise: number; stream: number },
): FixtureModel {
  const target = writeFixtureModel(targetDir, options);
  writeFixtureModel(draftDir, options);
  const rng = new Rng(options.seed, perturbation.stream);
  const entries = [...target.tensors].map(([name, t]) => {
    const values = Float32Array.from(t.data, (v) => v * (1 + perturbation.noise * (2 * rng.next() - 1)));
    return { name, shape: t.shape, bytes: new Uint8Array(values.buffer), dtype: 'float32' as const };
  });
  writeSafetensors(join(draftDir, 'model.safetensors'), entries);
  return target;
}

/**
 * A fixture model whose tokenizer.json swaps the ids of its first two vocabulary entries: the same
 * size as every other fixture's vocabulary, but not the same vocabulary.
 */
export function writeSwappedVocabModel(dir: string, options: FixtureOptions = {}): FixtureModel {
  const model = writeFixtureModel(dir, options);
  const path = join(dir, 'tokenizer.json');
  const tok = JSON.parse(readFileSync(path, 'utf8'));
  const vocab = tok.model.vocab as Record<string, number>;
  const [first, second] = Object.keys(vocab);
  [vocab[first], vocab[second]] = [vocab[second], vocab[first]];
  writeFileSync(path, JSON.stringify(tok));
  return model;
}
