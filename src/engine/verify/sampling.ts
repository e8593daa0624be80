// Tree speculative sampling (temperature > 0), lossless: the draft is treated as one-hot on each
// drafted token. At a node with target distribution p, try its verified children in draft-rank
// order: accept child x with probability p(x); on rejection set p(x) = 0 and renormalise, then
// try the next child. If every child is rejected, the bonus is a sample from what remains of p
// (and the step ends there); if a child is accepted, continue from it. At a leaf the bonus is a
// sample from the leaf's own p. Each emitted token is therefore distributed exactly as p.
import type { Rng } from '../rng.js';
import type { PackedRequest } from './pack.js';
import type { Verdict } from './greedy.js';

/** softmax(logits / temperature) into `out` (float64 so that renormalising stays exact). */
export function targetProbabilities(logits: ArrayLike<number>, temperature: number, out: Float64Array): void {
  let max = -Infinity;
  for (let v = 0; v < out.length; v++) if (logits[v] > max) max = logits[v];
  let sum = 0;
  for (let v = 0; v < out.length; v++) {
    const e = Math.exp((logits[v] - max) / temperature);
    out[v] = e;
    sum += e;
  }
  for (let v = 0; v < out.length; v++) out[v] /= sum;
}

/** A token drawn from the (unnormalised, non-negative) weights `p`. */
export function sampleFrom(p: Float64Array, rng: Rng): number {
  let total = 0;
  for (let v = 0; v < p.length; v++) total += p[v];
  let u = rng.next() * total;
  let last = -1;
  for (let v = 0; v < p.length; v++) {
    if (p[v] <= 0) continue;
    last = v;
    u -= p[v];
    if (u < 0) return v;
  }
  if (last === -1) throw new Error('cannot sample from an all-zero distribution');
  return last; // u landed on the rounding edge: the last token with mass
}

/**
 * `logits` holds full target logits for every packed row of the Super-Tree ([rows, vocab]);
 * `scratch` is a vocab-sized work buffer.
 */
export function verifySampled(
  packed: PackedRequest,
  logits: Float32Array,
  vocab: number,
  temperature: number,
  rng: Rng,
  scratch: Float64Array = new Float64Array(vocab),
): Verdict {
  const tree = packed.tree;
  const accepted: number[] = [];
  const p = scratch;
  let node = 0;
  for (;;) {
    const row = packed.offset + packed.rowOfNode[node];
    targetProbabilities(logits.subarray(row * vocab, (row + 1) * vocab), temperature, p);
    let mass = 1;
    let next = -1;
    for (const child of tree.verifiedChildren(node)) {
      const x = tree.token[child];
      if (rng.next() * mass < p[x]) {
        next = child;
        break;
      }
      mass -= p[x];
      p[x] = 0;
    }
    if (next === -1) return { accepted, bonus: sampleFrom(p, rng) };
    accepted.push(next);
    node = next;
  }
}
