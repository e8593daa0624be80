// Fair shares of K_max for the non-ECHO policies (docs/conventions.md, "Budget per request").
import { kmaxProblem, type TreeShape } from '../../shared/config.js';

/**
 * Draft tokens each of `n` requests may verify so that Σ (1 + K_i) ≤ kmax: floor(kmax / n) − 1
 * each, and one more for the first (kmax mod n) requests — or for none of them when
 * `spreadRemainder` is false (the ECHO scheduler grants that remainder by confidence instead).
 */
export function fairShares(kmax: number, n: number, spreadRemainder = true): number[] {
  if (n === 0) return [];
  const kmaxRule = kmaxProblem(kmax, n, 'the requests in flight');
  if (kmaxRule !== null) throw new Error(kmaxRule);
  const each = Math.floor(kmax / n) - 1;
  const extra = spreadRemainder ? kmax % n : 0;
  const shares: number[] = new Array(n);
  for (let i = 0; i < n; i++) shares[i] = each + (i < extra ? 1 : 0);
  return shares;
}

/**
 * Draft tokens a request may verify: its shape's tokens cut to its fair share, and, when
 * `remaining` is given, to the remaining − 1 tokens it can still accept.
 */
export function draftAllowance(shapeTokens: number, share: number, remaining = Infinity): number {
  return Math.max(0, Math.min(shapeTokens, share, remaining - 1));
}

/**
 * Layers worth drafting for a request that may emit `remaining` more tokens: accepting layers
 * 0..L−1 emits L tokens plus the bonus, so layers past remaining − 1 can never be kept.
 */
export function usefulLayers(remaining: number): number {
  return Math.max(0, remaining - 1);
}

/**
 * A shape cut down to `tokens` draft tokens: no deeper than the tokens allow, and no wider than
 * ⌈√tokens⌉ children per node (a small tree spends its few tokens on depth, not on siblings).
 */
export function scaleShape(shape: TreeShape, tokens: number): TreeShape {
  if (tokens >= shape.tokens) return shape;
  return {
    depth: Math.min(shape.depth, tokens),
    topk: Math.min(shape.topk, Math.ceil(Math.sqrt(tokens))),
    tokens,
  };
}

/** The paper's shapes: low concurrency EAGLE-3 (8 / 10 / 60), high concurrency (3 / 3 / 5). */
export const LOW_LOAD_SHAPE: TreeShape = { depth: 8, topk: 10, tokens: 60 };
export const HIGH_LOAD_SHAPE: TreeShape = { depth: 3, topk: 3, tokens: 5 };
