// How often a layer is accepted at a given confidence, as the warm-up measured it: per depth, the
// share of accepted layers in each confidence bin (bins of equal sample counts, stored in the
// profile; older profiles: the bins of their histograms). The scheduler's
// draft price reads it to judge whether a request's next layer could pay for its draft forward
// (the draft's own probabilities are no such estimate: on the demo pair they under-state how
// often deep tokens are accepted several times over).

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

/** A depth's layers counted by confidence bin, accepted and rejected (a profile's histogram). */
export interface ConfidenceHistogram {
  edges: readonly number[];
  accepted: readonly number[];
  rejected: readonly number[];
}

/** What the acceptance table reads of one depth of a calibration profile. */
export interface DepthAcceptance {
  depth: number;
  acceptance?: AcceptanceCurve | null;
  histogram: ConfidenceHistogram;
}

/**
 * A depth's curve from its histogram: each bin's accepted share, shrunk towards the depth's rate
 * by PRIOR_SAMPLES, then made non-decreasing in confidence (pool-adjacent-violators, weighted by
 * samples): a higher confidence is never read as a lower chance. Null without samples.
 */
export function acceptanceCurve(histogram: ConfidenceHistogram): AcceptanceCurve | null {
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

/** Samples per bin that a depth's warm-up samples are cut into (at most MAX_BINS bins). */
export const SAMPLES_PER_BIN = 20;
export const MAX_BINS = 10;

/**
 * A depth's curve from its raw warm-up samples, in bins of equal sample counts: confidences bunch
 * up (deep path probabilities all sit near 0), so the profile's even histogram bins would put
 * nearly every sample in one bin. Null without samples.
 */
export function acceptanceFromSamples(accepted: ArrayLike<number>, rejected: ArrayLike<number>): AcceptanceCurve | null {
  const all = [...Array.from(accepted), ...Array.from(rejected)].sort((a, b) => a - b);
  if (all.length === 0) return null;
  const bins = Math.max(1, Math.min(MAX_BINS, Math.floor(all.length / SAMPLES_PER_BIN)));
  const edges = [0];
  for (let b = 1; b < bins; b++) {
    // No edge at or below the smallest sample, nor at the largest: a bin past it would be empty.
    const edge = all[Math.floor((b * all.length) / bins)];
    if (edge > edges[edges.length - 1] && edge > all[0] && edge < all[all.length - 1]) edges.push(edge);
  }
  edges.push(Math.max(1, all[all.length - 1]));
  const count = (values: ArrayLike<number>) => {
    const counts = new Array<number>(edges.length - 1).fill(0);
    for (const c of Array.from(values)) counts[binOf(edges, c)]++;
    return counts;
  };
  return acceptanceCurve({ edges, accepted: count(accepted), rejected: count(rejected) });
}

/** Every depth's curve from a profile, indexed by depth: its sample-binned curve, else one from its histogram. */
export function acceptanceTable(depths: readonly DepthAcceptance[]): AcceptanceTable {
  const table: (AcceptanceCurve | null)[] = [];
  for (const entry of depths) {
    while (table.length < entry.depth) table.push(null);
    table[entry.depth] = entry.acceptance ?? acceptanceCurve(entry.histogram);
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
  return curve.rates[binOf(curve.edges, confidence)];
}

/** The bin [edges[b], edges[b + 1]) holding a value; values past either end go to the end bins. */
function binOf(edges: readonly number[], value: number): number {
  let bin = 0;
  while (bin < edges.length - 2 && value >= edges[bin + 1]) bin++;
  return bin;
}

/** Weighted isotonic (non-decreasing) fit by pooling adjacent violators. */
export function nonDecreasing(values: readonly number[], weights: readonly number[]): number[] {
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
