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
  const ratios = x.map((v, i) => v / y[i]);
  return { median: percentile(ratios, 50), min: Math.min(...ratios), max: Math.max(...ratios), rounds: ratios.length };
}

/** "1.043" for one round, "1.043 (0.991–1.072)" for several. */
export function formatPairedRatio(r: PairedRatio, digits = 3): string {
  const v = (x: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
  return r.rounds > 1 ? `${v(r.median)} (${v(r.min)}–${v(r.max)})` : v(r.median);
}
