// A model folder with a real config.json and safetensors header but no weights written: the data
// region is a sparse file (zeros that take no disk), so a large model's shape can be inspected and
// sized without gigabytes on disk. Only what reads headers may use it (`model info`, the memory
// check); building a graph from it would read gigabytes of zeros.
import { closeSync, copyFileSync, mkdirSync, openSync, ftruncateSync, writeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig } from '../../../src/engine/model/config.js';
import { expectedWeights, optionalWeights } from '../../../src/engine/model/weight-check.js';

export interface SparseModel {
  dir: string;
  /** Every tensor the header lists, with its shape. */
  tensors: { name: string; shape: number[] }[];
}

/** A Llama-shaped config.json (bfloat16 on disk) merged with `overrides`. */
export function llamaConfig(overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    rms_norm_eps: 1e-5,
    rope_theta: 500000,
    bos_token_id: 1,
    eos_token_id: 2,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
    ...overrides,
  };
}

/** Writes config.json and a header-only model.safetensors (bfloat16 unless told F32) for it; `tokenizerFrom` copies that folder's tokenizer files. */
export function writeSparseModel(dir: string, config: Record<string, unknown>, tokenizerFrom?: string, dtype: 'BF16' | 'F32' = 'BF16'): SparseModel {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const cfg = parseModelConfig(config, join(dir, 'config.json'));
  const tensors = [...expectedWeights(cfg), ...optionalWeights(cfg)];
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    const bytes = (dtype === 'F32' ? 4 : 2) * t.shape.reduce((a, b) => a * b, 1);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  while (text.length % 8 !== 0) text += ' ';
  const head = Buffer.alloc(8 + text.length);
  head.writeBigUInt64LE(BigInt(text.length), 0);
  head.write(text, 8, 'utf8');
  const fd = openSync(join(dir, 'model.safetensors'), 'w');
  try {
    writeSync(fd, head);
    ftruncateSync(fd, head.length + offset);
  } finally {
    closeSync(fd);
  }
  if (tokenizerFrom) for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizerFrom, f), join(dir, f));
  return { dir, tensors };
}
