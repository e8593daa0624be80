// How often a layer is accepted at a given confidence, as the warm-up measured it: per depth, the
// share of accepted layers in each confidence bin of the profile's histograms. The scheduler's
// draft price reads it to judge whether a request's next layer could pay for its draft forward
// (the draft's own probabilities are no such estimate: on the demo pair they under-state how
// often deep tokens are accepted several times over).
import type { EchoProfile } from './profile';

/** One depth's acceptance rate by confidence bin: bin b covers [edges[b], edges[b + 1]). */
export interface AcceptanceCurve {
  edges: number[];
  rates: number[];
}

/** Curves by depth (index = depth); null where the warm-up saw no layer at that depth. */
export type AcceptanceTable = ReadonlyArray<AcceptanceCurve | null>;

/**
 * Pseudo-samples at the depth's overall rate added to every bin: a bin seen twice says little
 * about its rate, one seen fifty times says much.
 */
export const PRIOR_SAMPLES = 4;

type Histogram = EchoProfile['depths'][number]['histogram'];

/**
 * A depth's curve from its histogram: each bin's accepted share, shrunk towards the depth's rate
 * by PRIOR_SAMPLES, then made non-decreasing in confidence (pool-adjacent-violators, weighted by
 * samples): a higher confidence is never read as a lower chance. Null without samples.
 */
export function acceptanceCurve(histogram: Histogram): AcceptanceCurve | null {
  const { edges, accepted, rejected } = histogram;
  if (edges.length < 2 || accepted.length !== edges.length - 1 || rejected.length !== accepted.length) return null;
  let acceptedTotal = 0;
  let total = 0;
  for (let b = 0; b < accepted.length; b++) {
    acceptedTotal += accepted[b];
    total += accepted[b] + rejected[b];
  }
  if (total === 0) return null;
  const overall = acceptedTotal / total;
  const rates: number[] = [];
  const weights: number[] = [];
  for (let b = 0; b < accepted.length; b++) {
    const n = accepted[b] + rejected[b];
    rates.push((accepted[b] + overall * PRIOR_SAMPLES) / (n + PRIOR_SAMPLES));
    weights.push(n + PRIOR_SAMPLES);
  }
  return { edges: [...edges], rates: nonDecreasing(rates, weights) };
}

/** Every depth's curve from a profile, indexed by depth. */
export function acceptanceTable(depths: EchoProfile['depths']): AcceptanceTable {
  const table: (AcceptanceCurve | null)[] = [];
  for (const entry of depths) {
    while (table.length < entry.depth) table.push(null);
    table[entry.depth] = acceptanceCurve(entry.histogram);
  }
  return table;
}

/**
 * The measured chance that a layer at `depth` with confidence `confidence` is accepted. Past the
 * deepest measured depth, that depth's curve; with no curve at all, 1 (nothing is known, so
 * nothing may be judged not worth drafting).
 */
export function acceptanceAt(table: AcceptanceTable, depth: number, confidence: number): number {
  let d = Math.min(depth, table.length - 1);
  while (d >= 0 && !table[d]) d--;
  const curve = d >= 0 ? table[d] : null;
  if (!curve) return 1;
  const { edges, rates } = curve;
  let bin = 0;
  while (bin < rates.length - 1 && confidence >= edges[bin + 1]) bin++;
  return rates[bin];
}

/** Weighted isotonic (non-decreasing) fit by pooling adjacent violators. */
function nonDecreasing(values: readonly number[], weights: readonly number[]): number[] {
  const blocks: { value: number; weight: number; size: number }[] = [];
  for (let i = 0; i < values.length; i++) {
    blocks.push({ value: values[i], weight: weights[i], size: 1 });
    while (blocks.length > 1 && blocks[blocks.length - 2].value > blocks[blocks.length - 1].value) {
      const last = blocks.pop()!;
      const prev = blocks[blocks.length - 1];
      const weight = prev.weight + last.weight;
      prev.value = (prev.value * prev.weight + last.value * last.weight) / weight;
      prev.weight = weight;
      prev.size += last.size;
    }
  }
  return blocks.flatMap((b) => new Array<number>(b.size).fill(b.value));
}
