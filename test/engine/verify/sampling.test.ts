// Tree speculative sampling keeps the target distribution: over many seeds, the first emitted
// token of a fixed tree is distributed as softmax(target logits at the root / T), and the second,
// given that the first was an accepted draft node, as the target's distribution at that node.
// A sampler with a classic bug (no renormalisation after a rejection) fails the same check.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../src/engine/rng.js';
import { DraftTree } from '../../../src/engine/tree.js';
import type { Verdict } from '../../../src/engine/verify/greedy.js';
import { packSuperTree, type PackedRequest } from '../../../src/engine/verify/pack.js';
import { sampleFrom, targetProbabilities, verifySampled } from '../../../src/engine/verify/sampling.js';
import { chiSquareFit } from './stats.js';

const VOCAB = 40;
const T = 0.8;
const SAMPLES = 20_000;

/** A tree whose root has 3 verified children (the target's likeliest tokens) and whose first child has 2. */
function fixedTree(rootTop: number[], childTop: number[]): DraftTree {
  const tree = new DraftTree('r', 5);
  tree.setCandidates(0, 0, Int32Array.from(rootTop), Float32Array.from([-0.5, -1.5, -2, -3]));
  const [a, b, c] = tree.addTopChildren(0, 3);
  tree.setCandidates(a, 1, Int32Array.from(childTop), Float32Array.from([-0.3, -2, -2.5, -4]));
  const [a1, a2] = tree.addTopChildren(a, 2);
  for (const id of [a, b, c, a1, a2]) tree.verify(id);
  return tree;
}

function randomLogits(rows: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: rows * VOCAB }, () => 3 * (rng.next() + rng.next() + rng.next() - 1.5));
}

function topTokens(p: Float64Array, n: number): number[] {
  return Array.from(p.keys()).sort((x, y) => p[y] - p[x]).slice(0, n);
}

type Sampler = (packed: PackedRequest, logits: Float32Array, rng: Rng) => Verdict;

/** Same walk as verifySampled but, after rejecting every child, samples from the unmodified p. */
const forgetsToRenormalise: Sampler = (packed, logits, rng) => {
  const tree = packed.tree;
  const accepted: number[] = [];
  const p = new Float64Array(VOCAB);
  let node = 0;
  for (;;) {
    const row = packed.offset + packed.rowOfNode[node];
    targetProbabilities(logits.subarray(row * VOCAB, (row + 1) * VOCAB), T, p);
    let next = -1;
    for (const child of tree.verifiedChildren(node)) {
      if (rng.next() < p[tree.token[child]]) {
        next = child;
        break;
      }
    }
    if (next === -1) return { accepted, bonus: sampleFrom(p, rng) };
    accepted.push(next);
    node = next;
  }
};

const correct: Sampler = (packed, logits, rng) => verifySampled(packed, logits, VOCAB, T, rng);

function emittedCounts(sampler: Sampler, seed: number) {
  const logits = randomLogits(6, seed);
  const rootP = new Float64Array(VOCAB);
  targetProbabilities(logits.subarray(0, VOCAB), T, rootP);
  // Draft candidates: the target's likeliest tokens at the root, so acceptance happens often.
  const rootTop = topTokens(rootP, 4);
  // Row 1 of the pack is the root's first child; its candidates are that row's likeliest tokens.
  const childP = new Float64Array(VOCAB);
  targetProbabilities(logits.subarray(VOCAB, 2 * VOCAB), T, childP);
  const tree = fixedTree(rootTop, topTokens(childP, 4));
  const packed = packSuperTree([tree], [0]).requests[0];
  expect(packed.rowOfNode[1]).toBe(1);
  const first = new Float64Array(VOCAB);
  const secondAfterFirstChild = new Float64Array(VOCAB);
  const rng = new Rng(seed, 1);
  for (let s = 0; s < SAMPLES; s++) {
    const v = sampler(packed, logits, rng);
    const emitted = [...v.accepted.map((n) => tree.token[n]), v.bonus];
    first[emitted[0]]++;
    if (v.accepted[0] === 1) secondAfterFirstChild[emitted[1]]++;
  }
  return { first, secondAfterFirstChild, rootP, childP };
}

describe('tree speculative sampling', () => {
  it.each([1, 2, 3])('emits the first token with the target distribution (logits seed %i)', (seed) => {
    const { first, rootP } = emittedCounts(correct, seed);
    const fit = chiSquareFit(first, rootP);
    expect(fit.statistic, JSON.stringify(fit)).toBeLessThanOrEqual(fit.critical);
  });

  it('emits the token after an accepted draft node with the target distribution at that node', () => {
    const { secondAfterFirstChild, childP } = emittedCounts(correct, 4);
    expect(secondAfterFirstChild.reduce((a, b) => a + b, 0)).toBeGreaterThan(2000);
    const fit = chiSquareFit(secondAfterFirstChild, childP);
    expect(fit.statistic, JSON.stringify(fit)).toBeLessThanOrEqual(fit.critical);
  });

  it('catches a sampler that does not renormalise after rejections', () => {
    const { first, rootP } = emittedCounts(forgetsToRenormalise, 1);
    const fit = chiSquareFit(first, rootP);
    expect(fit.statistic).toBeGreaterThan(fit.critical);
  });
});
