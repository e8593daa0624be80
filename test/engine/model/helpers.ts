// Shared test helpers: temp folders and logits comparisons.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(prefix = 'echo-model-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Largest |a[row*vocab + v] − expected[v]| over the vocabulary. */
export function maxRowDiff(actual: Float32Array, row: number, expected: ArrayLike<number>): number {
  const vocab = expected.length;
  let worst = 0;
  for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(actual[row * vocab + v] - expected[v]));
  return worst;
}

export function logSoftmax(logits: ArrayLike<number>): number[] {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) m = Math.max(m, logits[i]);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i] - m);
  const lz = m + Math.log(z);
  return Array.from(logits, (v) => v - lz);
}

export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}
