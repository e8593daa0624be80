// `echo-studio model info` on a folder whose weights disagree with its config.json: refused in
// one line naming the first disagreeing tensor; a matching folder still opens.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { register } from '../../../src/cli/commands/model.js';
import { runCli } from '../helpers.js';
import { writeFixtureModel } from '../../engine/model/fixtures.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';

const folders = tinyPairFolders('echo-model-weights-');

/** Rewrites config.json with `change` applied. */
function editConfig(dir: string, change: Record<string, unknown>): void {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...change }));
}

describe('echo-studio model info against config.json', () => {
  it('refuses, in one line, weights whose shapes disagree with hidden_size', async () => {
    const dir = join(folders.path, 'wrong-hidden');
    writeFixtureModel(dir, { hiddenSize: 32, numHeads: 4, numKvHeads: 2 });
    editConfig(dir, { hidden_size: 48 }); // head dim 12 now: every projection disagrees
    const refusal = runCli(register, ['model', 'info', dir]);
    await expect(refusal).rejects.toThrow(/model\.safetensors: model\.embed_tokens\.weight has shape \[\d+, 32\], config\.json implies \[\d+, 48\]: the weights do not match config\.json$/);
    await expect(refusal).rejects.toThrow(/^[^\n]+$/);
  });

  it('refuses a folder missing a layer its config counts, and one holding a layer it does not', async () => {
    const missing = join(folders.path, 'missing-layer');
    writeFixtureModel(missing, { hiddenSize: 32, numLayers: 2 });
    editConfig(missing, { num_hidden_layers: 3 });
    await expect(runCli(register, ['model', 'info', missing])).rejects.toThrow(
      `${join(missing, 'model.safetensors')}: missing tensor model.layers.2.input_layernorm.weight: the weights do not match config.json (config.json has 3 layers of hidden size 32)`,
    );
    const extra = join(folders.path, 'extra-layer');
    writeFixtureModel(extra, { hiddenSize: 32, numLayers: 2 });
    editConfig(extra, { num_hidden_layers: 1 });
    await expect(runCli(register, ['model', 'info', extra])).rejects.toThrow(
      `${join(extra, 'model.safetensors')}: holds layer 1, and config.json has 1 layer of hidden size 32 (num_hidden_layers): the weights do not match config.json`,
    );
  });

  it('a matching folder still opens', async () => {
    const info = JSON.parse((await runCli(register, ['model', 'info', folders.targetDir, '--json'])).stdout);
    expect(info.hiddenSize).toBe(32);
  });
});
