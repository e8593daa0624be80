// Mann–Whitney U and the AUC it implies: how well a score separates positives from negatives.
// AUC = P(score of a random positive > score of a random negative) + ½ P(tie). Calibration uses it
// per depth to find the sweet spots where layer confidence tells accepted from rejected.

export interface MannWhitneyResult {
  /** U of the positives: pairs (positive, negative) with positive > negative, ties count ½. */
  u: number;
  /** u / (positives × negatives), in [0, 1]; 0.5 means no separation. */
  auc: number;
  positives: number;
  negatives: number;
}

/**
 * Mann–Whitney U by midranks over the pooled sample (ties share the mean of their ranks), which
 * is exact for ties and O(n log n). Returns null when either group is empty: no pair to compare.
 */
export function mannWhitneyU(
  positives: ArrayLike<number>,
  negatives: ArrayLike<number>,
): MannWhitneyResult | null {
  const nPos = positives.length;
  const nNeg = negatives.length;
  if (nPos === 0 || nNeg === 0) return null;

  // Pool as (value, isPositive) and sort by value; NaN would make ranks meaningless.
  const total = nPos + nNeg;
  const values = new Float64Array(total);
  const isPositive = new Uint8Array(total);
  for (let i = 0; i < nPos; i++) {
    const v = positives[i];
    if (Number.isNaN(v)) throw new Error(`mannWhitneyU: positive sample ${i} is NaN`);
    values[i] = v;
    isPositive[i] = 1;
  }
  for (let j = 0; j < nNeg; j++) {
    const v = negatives[j];
    if (Number.isNaN(v)) throw new Error(`mannWhitneyU: negative sample ${j} is NaN`);
    values[nPos + j] = v;
  }
  const order = Array.from({ length: total }, (_, k) => k);
  order.sort((a, b) => values[a] - values[b]);

  // Sum of the positives' midranks (ranks start at 1).
  let positiveRankSum = 0;
  let start = 0;
  while (start < total) {
    let end = start + 1;
    while (end < total && values[order[end]] === values[order[start]]) end++;
    const midrank = (start + 1 + end) / 2; // mean of ranks start+1 … end
    for (let k = start; k < end; k++) if (isPositive[order[k]]) positiveRankSum += midrank;
    start = end;
  }
  const u = positiveRankSum - (nPos * (nPos + 1)) / 2;
  return { u, auc: u / (nPos * nNeg), positives: nPos, negatives: nNeg };
}

/** AUC of positives over negatives; null when either group has fewer than minPerGroup samples. */
export function mannWhitneyAuc(
  positives: ArrayLike<number>,
  negatives: ArrayLike<number>,
  minPerGroup = 1,
): number | null {
  if (positives.length < minPerGroup || negatives.length < minPerGroup) return null;
  return mannWhitneyU(positives, negatives)?.auc ?? null;
}
