// Shared test helpers: temp folders, prefill logits and logits comparisons.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OrtModelSession } from '../../../src/engine/model/index.js';

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

const chain = (len: number): number[] => Array.from({ length: len }, (_, i) => i - 1);

/** Every position's logits of the prompts, prefilled together in one packed forward on fresh slots. */
export async function prefillLogits(session: OrtModelSession, prompts: number[][]): Promise<Float32Array[]> {
  const slots = prompts.map(() => session.allocSlot());
  const rows: number[] = [];
  let packed = 0;
  for (const p of prompts) {
    for (let i = 0; i < p.length; i++) rows.push(packed + i);
    packed += p.length;
  }
  const r = await session.forward(
    prompts.map((p, i) => ({ slot: slots[i], tokens: p, parents: chain(p.length) })),
    { logitsRows: rows },
  );
  for (const s of slots) session.freeSlot(s);
  const v = session.info.vocabSize;
  return rows.map((_, i) => r.logits!.slice(i * v, (i + 1) * v));
}
