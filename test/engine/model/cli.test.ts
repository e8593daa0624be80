// `model info` and `model check` through commander, as the CLI runs them.
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { register } from '../../../src/cli/commands/model.js';
import { ModelLoadError } from '../../../src/engine/model/index.js';
import { writeFixtureModel, type FixtureModel } from './fixtures.js';
import { argmax, tempDir } from './helpers.js';
import { referenceForward } from './reference.js';

const tmp = tempDir();
let fx: FixtureModel;
const savedCache = process.env.ECHO_STUDIO_CACHE;
beforeAll(() => {
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  fx = writeFixtureModel(join(tmp.path, 'm'), { architecture: 'qwen2', tieWordEmbeddings: true });
});
afterAll(() => {
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

async function run(args: string[]): Promise<string> {
  const program = new Command('echo-studio').exitOverride();
  register(program);
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['node', 'echo-studio', ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

test('model info reports architecture, parameters, dtype, vocabulary and cache status', async () => {
  const before = JSON.parse(await run(['model', 'info', fx.dir, '--json']));
  expect(before.architecture).toBe('qwen2');
  const expectedParams = [...fx.tensors.values()].reduce((s, t) => s + t.data.length, 0);
  expect(before.parameters).toBe(expectedParams);
  expect(before.dtype).toBe('float32');
  expect(before.vocabSize).toBe(fx.vocabSize);
  expect(before.tokenizerVocabSize).toBe(fx.vocabSize);
  expect(before.graphCached).toBe(false);
  await run(['model', 'check', fx.dir, '--text', 'hi', '--json']);
  const text = await run(['model', 'info', fx.dir]);
  expect(text).toMatch(/architecture\s+qwen2/);
  expect(text).toMatch(/graph cache\s+built/);
});

test('model check --json gives the token ids and the top-5 next tokens with logits at each position', async () => {
  const text = 'the cat and the hat';
  const r = JSON.parse(await run(['model', 'check', fx.dir, '--text', text, '--json']));
  expect(r.tokens[0]).toBe(fx.config.bos_token_id);
  expect(r.positions).toHaveLength(r.tokens.length);
  const ref = referenceForward(fx, r.tokens);
  r.positions.forEach((p: { top: { id: number; token: string; logit: number }[] }, i: number) => {
    expect(p.top).toHaveLength(5);
    expect(p.top[0].id).toBe(argmax(ref[i]));
    expect(Math.abs(p.top[0].logit - ref[i][p.top[0].id])).toBeLessThan(1e-4);
    for (let j = 1; j < 5; j++) expect(p.top[j].logit).toBeLessThanOrEqual(p.top[j - 1].logit);
    expect(typeof p.top[0].token).toBe('string');
  });
  const human = await run(['model', 'check', fx.dir, '--text', text]);
  expect(human.split('\n')[0]).toBe(`tokens (${r.tokens.length}): ${r.tokens.join(' ')}`);
});

test('a bad folder is a ModelLoadError with one line naming the file', async () => {
  await expect(run(['model', 'info', join(tmp.path, 'missing')])).rejects.toThrow(ModelLoadError);
  await expect(run(['model', 'check', join(tmp.path, 'missing'), '--text', 'x'])).rejects.toThrow(/missing: folder does not exist/);
});
