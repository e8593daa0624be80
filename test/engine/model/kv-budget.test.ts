import { describe, expect, it } from 'vitest';
import { kvCacheBytes, kvFitProblem } from '../../../src/engine/model/kv-budget.js';

const small = { numLayers: 2, numKvHeads: 2, headDim: 32 };

describe('KV cache sizes', () => {
  it('counts every layer, keys and values, rows rounded up to whole past blocks', () => {
    // 10 rows round up to 16 (two blocks of 8): 2 layers · 2 (K, V) · 3 slots · 16 rows · 2 heads · 32 · 4 bytes.
    expect(kvCacheBytes(small, 3, 10)).toBe(2 * 2 * 3 * 16 * 2 * 32 * 4);
  });

  it('refuses, with the reason, caches over the machine memory or one array', () => {
    const gib = 2 ** 30;
    expect(kvFitProblem([{ name: 'target', config: small }], 16, 256, 16 * gib)).toBeNull();
    const big = { numLayers: 24, numKvHeads: 8, headDim: 128 };
    expect(kvFitProblem([{ name: 'target', config: big }, { name: 'draft', config: small }], 1024, 66_000, 24 * gib)).toMatch(
      /^1024 KV slots of 66000 rows make one layer's cache of the target 69206\d+ floats, more than one array can hold/,
    );
    expect(kvFitProblem([{ name: 'target', config: big }], 64, 4096, 8 * gib)).toMatch(/need 48\.0 GiB for the target of KV cache, more than 75 % of this machine's 8\.0 GiB/);
  });
});
