// The ONNX EAGLE-3 head against tools/eagle3/reference.py (PyTorch), on the committed random-weight
// fixtures (test/engine/fixtures/eagle3, written by tools/eagle3/make_fixtures.py): the target's
// features feed the head teacher-forced over a token sequence, and every row's depth-0 top-k and
// the depth-1 top-k after the last row must equal the reference's. Then the one-line refusals.
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadModel } from '../../../src/engine/model/index.js';
import { openHeadFolder, loadHead } from '../../../src/engine/model/head-loader.js';
import { parseModelConfig, readConfigJson } from '../../../src/engine/model/config.js';
import { tempDir } from './helpers.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'eagle3');
interface Top {
  ids: number[];
  logprobs: number[];
}
const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as {
  tokens: number[];
  topk: number;
  heads: Record<string, { target: string; boundaries: number[]; depth0: Top[]; depth1: Top & { token: number } }>;
};
const tmp = tempDir('echo-eagle3-');
afterAll(() => tmp.cleanup());
const cacheDir = join(tmp.path, 'cache');

function targetConfig(dir: string) {
  const { path, json } = readConfigJson(dir);
  return parseModelConfig(json, path);
}

/** Same top-k: log-probabilities within tolerance, ids equal except where neighbours tie. */
function expectTop(ids: ArrayLike<number>, logprobs: ArrayLike<number>, want: Top, where: string): void {
  for (let j = 0; j < want.ids.length; j++) {
    expect(Math.abs(logprobs[j] - want.logprobs[j]), `${where} rank ${j} log-prob`).toBeLessThan(2e-4);
    const tiedWithNeighbour = (j > 0 && want.logprobs[j - 1] - want.logprobs[j] < 1e-4) || (j + 1 < want.ids.length && want.logprobs[j] - want.logprobs[j + 1] < 1e-4);
    if (!tiedWithNeighbour) expect(ids[j], `${where} rank ${j} id`).toBe(want.ids[j]);
  }
}

describe.each(Object.keys(expected.heads))('%s', (name) => {
  const want = expected.heads[name];
  const headDir = join(FIXTURES, name);
  const targetDir = join(FIXTURES, want.target);

  test('features feed the head; depth-0 and depth-1 top-k equal the reference', async () => {
    const head = openHeadFolder(headDir, targetConfig(targetDir));
    expect(head.featureBoundaries).toEqual(want.boundaries);
    const target = await loadModel(targetDir, { slots: 1, maxLength: 32, cacheDir, featureBoundaries: head.featureBoundaries });
    const draft = await loadHead(headDir, targetDir, { slots: 1, maxLength: 32, cacheDir });
    try {
      const tokens = expected.tokens;
      const n = tokens.length - 1;
      const ts = target.allocSlot();
      const rows = Array.from({ length: n }, (_, i) => i);
      const t = await target.forward([{ slot: ts, tokens: tokens.slice(0, n), parents: rows.map((i) => i - 1) }], { featureRows: rows });
      expect(t.features!.length).toBe(n * draft.featureWidth);
      const hs = draft.allocSlot();
      draft.pushFeatures(hs, t.features!);
      const k = expected.topk;
      const d0 = await draft.forward([{ slot: hs, tokens: tokens.slice(1), parents: rows.map((i) => i - 1) }], { topkRows: rows, topk: k });
      expect(draft.queuedFeatures(hs)).toBe(0);
      for (let p = 0; p < n; p++) {
        expectTop(d0.topkIds!.subarray(p * k, (p + 1) * k), d0.topkLogprobs!.subarray(p * k, (p + 1) * k), want.depth0[p], `depth 0 row ${p}`);
      }
      // Depth 1: the top-1 token reads the last row's own output, one position on.
      const d1 = await draft.forward([{ slot: hs, tokens: [want.depth1.token], parents: [n - 1] }], { topkRows: [0], topk: k });
      expectTop(d1.topkIds!, d1.topkLogprobs!, want.depth1, 'depth 1');
    } finally {
      await Promise.all([target.release(), draft.release()]);
    }
  });
});

test('a target loaded without a head has no feature output, so plain runs pay nothing for it', async () => {
  const target = await loadModel(join(FIXTURES, 'llama-target'), { slots: 1, maxLength: 16, cacheDir });
  try {
    expect(target.info.featureWidth).toBeUndefined();
    const slot = target.allocSlot();
    await expect(target.forward([{ slot, tokens: [1, 2], parents: [-1, 0] }], { featureRows: [0] })).rejects.toThrow(/not loaded with EAGLE-3 features/);
  } finally {
    await target.release();
  }
});

describe('refusals, one line each', () => {
  const llamaTarget = join(FIXTURES, 'llama-target');
  const qwenTarget = join(FIXTURES, 'qwen3-target');
  /** A copy of a fixture head with its config edited. */
  function editedHead(from: string, edit: (cfg: Record<string, unknown>) => void): string {
    const dir = join(tmp.path, `head-${Math.random().toString(36).slice(2)}`);
    cpSync(join(FIXTURES, from), dir, { recursive: true });
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    edit(cfg);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
    return dir;
  }
  const refusal = (headDir: string, targetDir: string): string => {
    try {
      openHeadFolder(headDir, targetConfig(targetDir));
    } catch (err) {
      const message = (err as Error).message;
      expect(message).not.toContain('\n');
      return message;
    }
    throw new Error('not refused');
  };

  test('feature width that does not match the target', () => {
    expect(refusal(editedHead('llama-head-untied', (c) => (c.target_hidden_size = 32)), llamaTarget)).toMatch(/features of width 3 × 32.*hidden size is 16/);
  });
  test('a vocabulary that does not match', () => {
    expect(refusal(join(FIXTURES, 'llama-head-untied'), qwenTarget)).toMatch(/vocab_size is 96, the target's 80/);
  });
  test('aux layer ids out of range', () => {
    expect(refusal(editedHead('qwen3-head', (c) => (c.eagle_config = { eagle_aux_hidden_state_layer_ids: [0, 1, 4] })), qwenTarget)).toMatch(/names layer 4.*4 layers/);
  });
  test('a target too shallow for the default layers, without named ids', () => {
    expect(refusal(editedHead('qwen3-head', (c) => delete c.eagle_config), qwenTarget)).toMatch(/must name its layers/);
  });
  test('a missing tensor', async () => {
    const dir = editedHead('llama-head-untied', () => {});
    // Drop `norm.weight` by renaming it in the header (same length keeps the offsets valid).
    const path = join(dir, 'model.safetensors');
    const bytes = readFileSync(path);
    const at = bytes.indexOf('"norm.weight"');
    bytes.write('"nXrm.weight"', at);
    writeFileSync(path, bytes);
    await expect(loadHead(dir, llamaTarget, { slots: 1, maxLength: 16, cacheDir })).rejects.toThrow(/missing tensor norm\.weight/);
  });
});
