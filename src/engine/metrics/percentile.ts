/**
 * The q-th percentile (q in [0, 100]) by linear interpolation between closest ranks — numpy's
 * default, which the vLLM/SGLang benchmark scripts report. 0 for an empty sample.
 */
export function percentile(values: ArrayLike<number>, q: number): number {
  if (!(q >= 0 && q <= 100)) throw new Error(`percentile: q must be in [0, 100], got ${q}`);
  const n = values.length;
  if (n === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  const position = (q / 100) * (n - 1);
  const lower = Math.floor(position);
  const upper = Math.min(lower + 1, n - 1);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - lower);
}
