// What a step costs, as the elastic scheduler prices it: the verification forward of the tokens it
// grants and the draft forwards it runs, in the target's one-token forwards (T_ar). Two sources:
// a T_ver fit (flat to a knee, then γ per token, and a roofline for draft rows: the paper's model,
// `--verify-cost` and the modelled devices), or the forward times profile-hw measured, read as
// they are (the `curves` clock): on a CPU the target's forward grows from the first token, and a
// fit that calls the tokens below its knee free lets a policy spend them as if they were. Timed
// at several contexts, the curves price each step at its own longest past, as the clock times it.
import type { PriceCurves } from '../../shared/config.js';
import { contextCurves } from '../cost/clock.js';
import type { VerifyCost } from './types.js';

export interface StepPrice {
  /** Verifying `tokens` packed tokens of `requests` requests. */
  verify(tokens: number, requests: number): number;
  /** One draft forward of `rows` rows over `requests` requests. */
  draft(rows: number, requests: number): number;
  /** What one more drafted row adds to a draft forward. */
  readonly row: number;
  /** What the step's `index`-th draft forward costs beyond its curve (they run after the target's forward, cold). */
  afterTarget(index: number): number;
}

/** A step's price by its longest committed past in rows (StepContext.past; absent: the price's base context). */
export type PriceAtPast = (past: number | undefined) => StepPrice;

/**
 * The price a gated policy reads: the measured curves when the cost carries them, else the fit.
 * `draftForward` is the one-row draft forward (`--draft-cost`, 0 when drafting is not priced).
 */
export function stepPrice(cost: VerifyCost | undefined, draftForward: number): PriceAtPast {
  if (cost?.curves) return curvePrice(cost.curves);
  const fit = fitPrice(cost, draftForward);
  return () => fit;
}

/** The T_ver fit: 1 + γ·(K − knee)⁺ for verification; a draft forward its one-row price or its rows', whichever is more. */
export function fitPrice(cost: VerifyCost | undefined, draftForward: number): StepPrice {
  const row = cost?.draftRow ?? 0;
  return {
    verify: (tokens) => 1 + (cost ? cost.gamma * Math.max(0, tokens - cost.knee) : 0),
    draft: (rows) => Math.max(draftForward, rows * row),
    row,
    afterTarget: () => 0,
  };
}

/**
 * Both forwards read off the measured curves by their rows, their requests and the step's past
 * (cost/clock.ts contextCurves), in the one-token forward at the curves' base context: one unit
 * for every step, so a step at a longer past is dearer, as it is.
 */
export function curvePrice(curves: PriceCurves): PriceAtPast {
  const atPast = contextCurves(curves, curves.spread);
  const tAr = atPast(undefined).target(1, 1);
  const afterTarget = (index: number) => (curves.draftAfterTargetMs?.[index] ?? 0) / tAr;
  return (past) => {
    const { target, draft } = atPast(past);
    return {
      verify: (tokens, requests) => target(Math.max(1, tokens), Math.max(1, requests)) / tAr,
      draft: (rows, requests) => draft(Math.max(1, rows), Math.max(1, requests)) / tAr,
      row: (draft(2, 1) - draft(1, 1)) / tAr,
      afterTarget,
    };
  };
}
