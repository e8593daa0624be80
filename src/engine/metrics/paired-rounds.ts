// Comparing policies on a machine whose speed drifts. Policies run interleaved, round by round;
// a ratio is taken within each round, between runs that ran minutes apart at most, and the
// rounds' ratios are summarised by their median and range. A ratio of two medians taken over
// all rounds would pair a policy's best round with another's worst whenever the drift is slow.
import { percentile } from './percentile.js';

/**
 * The order policies run in, in a given round: rotated by one each round, so that no policy is
 * always the first after a batch-size change or always the one before a long neighbour.
 */
export function roundOrder<T>(policies: readonly T[], round: number): T[] {
  const n = policies.length;
  if (n === 0) return [];
  const start = ((round % n) + n) % n;
  return [...policies.slice(start), ...policies.slice(0, start)];
}

/**
 * The order runs take turns in within a round when they step in lockstep: rotated every other
 * round and reversed on odd rounds. A turn follows the previous one's step, whose data it finds in
 * the caches and whose garbage the collector may sweep during it; rotation alone keeps the cycle
 * (each run always follows the same other), reversal lets each follow both its neighbours.
 */
export function turnOrder<T>(policies: readonly T[], round: number): T[] {
  const order = roundOrder(policies, Math.floor(round / 2));
  return round % 2 === 1 ? order.reverse() : order;
}

/** The round whose `by` is the median (the upper one of an even count): what a row reports. */
export function medianRound<T>(rounds: readonly T[], by: (round: T) => number): T {
  if (rounds.length === 0) throw new Error('median round: no rounds');
  return rounds.slice().sort((a, b) => by(a) - by(b))[Math.floor(rounds.length / 2)];
}

export interface PairedRatio {
  /** Median over rounds of x_r ÷ y_r. */
  median: number;
  min: number;
  max: number;
  rounds: number;
}

/** Per-round ratios x_r ÷ y_r of two policies measured in the same rounds. */
export function pairedRatio(x: readonly number[], y: readonly number[]): PairedRatio {
  if (x.length !== y.length) throw new Error(`paired ratio: ${x.length} rounds against ${y.length}`);
  if (x.length === 0) throw new Error('paired ratio: no rounds');
  return roundRatios(x.map((v, i) => v / y[i]));
}

/** Rounds' ratios, each already taken within its round, summarised as pairedRatio does. */
export function roundRatios(ratios: readonly number[]): PairedRatio {
  if (ratios.length === 0) throw new Error('paired ratio: no rounds');
  return { median: percentile(ratios, 50), min: Math.min(...ratios), max: Math.max(...ratios), rounds: ratios.length };
}

/** "1.043" for one round, "1.043 (0.991–1.072)" for several. */
export function formatPairedRatio(r: PairedRatio, digits = 3): string {
  const v = (x: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
  return r.rounds > 1 ? `${v(r.median)} (${v(r.min)}–${v(r.max)})` : v(r.median);
}

/**
 * Σ over steps of each step's median time across rounds, or null when the rounds took different
 * numbers of steps. A greedy run repeats the same steps in every round, so step k's times differ
 * only by the machine: a burst of other work that slowed one round's step k is outvoted by the
 * others' (with three rounds or more), where a round's total would keep it.
 */
export function stepMedianMs(rounds: readonly (readonly number[])[]): number | null {
  if (rounds.length === 0 || rounds.some((r) => r.length !== rounds[0].length)) return null;
  let total = 0;
  for (let k = 0; k < rounds[0].length; k++) total += percentile(rounds.map((r) => r[k]), 50);
  return total;
}
