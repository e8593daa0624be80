// config.json parsing details that the end-to-end tests do not reach.
import { expect, test } from 'vitest';
import { parseModelConfig, ropeInverseFrequencies } from '../../../src/engine/model/config.js';

const base = {
  architectures: ['LlamaForCausalLM'],
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  vocab_size: 100,
};

test('transformers 5 rope_parameters, eos lists, null head_dim and missing kv heads', () => {
  const c = parseModelConfig(
    { ...base, head_dim: null, eos_token_id: [7, 9], rope_parameters: { rope_type: 'llama3', rope_theta: 500000, factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 } },
    'config.json',
  );
  expect(c.rope.theta).toBe(500000);
  expect(c.rope.type).toBe('llama3');
  expect(c.headDim).toBe(16);
  expect(c.numKvHeads).toBe(4);
  expect(c.eosTokenIds).toEqual([7, 9]);
  expect(c.tieWordEmbeddings).toBe(false);
});

test('Llama 3 scaling keeps high frequencies, divides low ones by the factor, blends between', () => {
  const rope = { theta: 10000, type: 'llama3' as const, factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 64 };
  const plain = ropeInverseFrequencies({ ...rope, type: 'default' }, 16);
  const scaled = ropeInverseFrequencies(rope, 16);
  const wavelen = (i: number) => (2 * Math.PI) / plain[i];
  let bands = 0;
  for (let i = 0; i < 8; i++) {
    if (wavelen(i) < 64 / 4) expect(scaled[i]).toBeCloseTo(plain[i], 6);
    else if (wavelen(i) > 64) expect(scaled[i]).toBeCloseTo(plain[i] / 8, 6);
    else {
      expect(scaled[i]).toBeLessThan(plain[i]);
      expect(scaled[i]).toBeGreaterThan(plain[i] / 8);
      bands++;
    }
  }
  expect(bands).toBeGreaterThan(0);
});

test('Qwen2 always has q/k/v bias; Qwen3 has q/k norms; Mistral uses its sliding window', () => {
  expect(parseModelConfig({ ...base, architectures: ['Qwen2ForCausalLM'] }, 'c').qkvBias).toBe(true);
  expect(parseModelConfig({ ...base, architectures: ['Qwen3ForCausalLM'] }, 'c').qkNorm).toBe(true);
  expect(parseModelConfig({ ...base, architectures: ['MistralForCausalLM'], sliding_window: 4096 }, 'c').slidingWindow).toBe(4096);
  expect(parseModelConfig({ ...base, architectures: ['Qwen2ForCausalLM'], sliding_window: 4096, use_sliding_window: false }, 'c').slidingWindow).toBeNull();
});

test('bad values name the key', () => {
  expect(() => parseModelConfig({ ...base, hidden_size: -1 }, 'x/config.json')).toThrow(/x\/config\.json: "hidden_size" must be a positive integer, got -1/);
  expect(() => parseModelConfig({ ...base, hidden_act: 'gelu' }, 'config.json')).toThrow(/hidden_act "gelu" is not supported/);
  const { vocab_size: _drop, ...noVocab } = base;
  expect(() => parseModelConfig(noVocab, 'config.json')).toThrow(/missing "vocab_size"/);
});
