// Two greedy runs of one target can part without a bug: where the target's two best tokens tie
// within float rounding, each packing of a forward (which rows share it, in which order) rounds
// the logits a little differently, and greedy may then pick either token. Anywhere else a
// difference means the runs did not decode the same target the same way.
import type { ModelSession } from '../model/types.js';

/** Logit gaps below this are float rounding between packings, not a preference of the target. */
export const TIE_GAP = 1e-4;

/** The first position where two token lists differ (a missing token counts), or -1. */
export function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** The gap between the target's two largest logits after `context`, from one packed forward. */
export async function topTwoGap(target: ModelSession, context: readonly number[]): Promise<number> {
  const slot = target.allocSlot();
  try {
    const parents = Int32Array.from(context, (_, j) => j - 1);
    const out = await target.forward([{ slot, tokens: context, parents }], { logitsRows: [context.length - 1] });
    let first = -Infinity;
    let second = -Infinity;
    for (const x of out.logits!) {
      if (x > first) [first, second] = [x, first];
      else if (x > second) second = x;
    }
    return first - second;
  } finally {
    target.freeSlot(slot);
  }
}

/** Where one request's output parts from the reference's, and how close the target's choice was. */
export interface Divergence {
  /** The request's index in the workload. */
  request: number;
  /** Generated-token position of the first difference. */
  position: number;
  /** The target's top-two logit gap there, after the reference's tokens up to that position. */
  gap: number;
  /** Whether the gap is within float rounding (TIE_GAP). */
  tie: boolean;
}

/**
 * Explains every request whose tokens differ from the reference's: the first one that is not a
 * tie if there is one, else the first tie; null when all are equal. Ties are looked up with one
 * target forward per differing request, so this costs nothing when outputs agree.
 */
export async function explainDifferences(
  target: ModelSession,
  prompts: readonly (readonly number[])[],
  reference: readonly (readonly number[])[],
  other: readonly (readonly number[])[],
): Promise<{ first: Divergence; requests: number } | null> {
  let first: Divergence | null = null;
  let requests = 0;
  for (let i = 0; i < reference.length; i++) {
    const position = firstDifference(other[i] ?? [], reference[i]);
    if (position === -1) continue;
    requests++;
    // Where one output merely ends first, the choice was between an end token and another one:
    // the same question, asked after the same context.
    const gap = await topTwoGap(target, [...prompts[i], ...reference[i].slice(0, position)]);
    const divergence = { request: i, position, gap, tie: gap < TIE_GAP };
    if (first === null || (first.tie && !divergence.tie)) first = divergence;
  }
  return first ? { first, requests } : null;
}
