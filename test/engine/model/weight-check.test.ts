// The weights a folder must hold for its config.json: the list the check uses is exactly what the
// graph builder reads, and a folder that disagrees is named by its first disagreeing tensor (what
// `model info` and every load refuse it with: test/cli/commands/model-weight-check.test.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfig, readConfigJson } from '../../../src/engine/model/config.js';
import { buildGraph } from '../../../src/engine/model/graph-builder.js';
import { weightSource } from '../../../src/engine/model/loader.js';
import { indexWeights } from '../../../src/engine/model/safetensors.js';
import { expectedWeights, optionalWeights, weightsMismatch } from '../../../src/engine/model/weight-check.js';
import { writeFixtureModel, type FixtureOptions } from './fixtures.js';
import { tinyPairFolders } from './tiny-pair-folders.js';

const folders = tinyPairFolders('echo-weight-check-');

function configOf(dir: string) {
  const { path, json } = readConfigJson(dir);
  return parseModelConfig(json, path);
}

/** Rewrites config.json with `change` applied. */
function editConfig(dir: string, change: Record<string, unknown>): void {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...change }));
}

describe('weights against config.json', () => {
  const variants: Array<[string, FixtureOptions]> = [
    ['llama', { architecture: 'llama' }],
    ['llama with attention bias, tied', { architecture: 'llama', attentionBias: true, tieWordEmbeddings: true }],
    ['qwen2', { architecture: 'qwen2' }],
    ['qwen3', { architecture: 'qwen3', headDim: 16 }],
    ['mistral', { architecture: 'mistral' }],
  ];
  it.each(variants)('expects exactly the tensors the graph builder reads (%s)', (name, options) => {
    const dir = join(folders.path, `variant-${name.replace(/\W+/g, '-')}`);
    writeFixtureModel(dir, { hiddenSize: 32, numLayers: 2, ...options });
    const cfg = configOf(dir);
    const weights = indexWeights(dir);
    const source = weightSource(weights);
    const read: string[] = [];
    buildGraph(cfg, { ...source, get: (tensor, shape, rows) => (read.push(tensor), source.get(tensor, shape, rows)) });
    const optional = optionalWeights(cfg).filter((t) => weights.tensors.has(t.name)).map((t) => t.name);
    expect(read).toEqual([...expectedWeights(cfg).map((t) => t.name), ...optional]);
    expect(weightsMismatch(cfg, weights)).toBeNull();
  });

  it('names the first disagreeing tensor: a shape hidden_size does not imply, a layer missing, a layer too many', () => {
    const wrongHidden = join(folders.path, 'wrong-hidden');
    writeFixtureModel(wrongHidden, { hiddenSize: 32, numHeads: 4, numKvHeads: 2 });
    editConfig(wrongHidden, { hidden_size: 48 }); // head dim 12 now: every projection disagrees
    expect(weightsMismatch(configOf(wrongHidden), indexWeights(wrongHidden))?.message).toMatch(
      /model\.safetensors: model\.embed_tokens\.weight has shape \[\d+, 32\], config\.json implies \[\d+, 48\]: the weights do not match config\.json$/,
    );
    const missing = join(folders.path, 'missing-layer');
    writeFixtureModel(missing, { hiddenSize: 32, numLayers: 2 });
    editConfig(missing, { num_hidden_layers: 3 });
    expect(weightsMismatch(configOf(missing), indexWeights(missing))?.message).toBe(
      `${join(missing, 'model.safetensors')}: missing tensor model.layers.2.input_layernorm.weight: the weights do not match config.json (config.json has 3 layers of hidden size 32)`,
    );
    const extra = join(folders.path, 'extra-layer');
    writeFixtureModel(extra, { hiddenSize: 32, numLayers: 2 });
    editConfig(extra, { num_hidden_layers: 1 });
    expect(weightsMismatch(configOf(extra), indexWeights(extra))?.message).toBe(
      `${join(extra, 'model.safetensors')}: holds layer 1, and config.json has 1 layer of hidden size 32 (num_hidden_layers): the weights do not match config.json`,
    );
  });
});
