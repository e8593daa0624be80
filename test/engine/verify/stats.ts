// Goodness of fit for sampler tests: Pearson's chi-square against an expected distribution,
// with categories of expected count < 5 lumped together, compared to the α = 0.001 critical
// value (Wilson–Hilferty approximation of the chi-square quantile).

export interface FitResult {
  statistic: number;
  degreesOfFreedom: number;
  critical: number;
  pass: boolean;
}

const Z_999 = 3.0902; // standard normal quantile at 1 − 0.001

export function chiSquareFit(counts: ArrayLike<number>, probabilities: ArrayLike<number>): FitResult {
  let n = 0;
  for (let v = 0; v < counts.length; v++) n += counts[v];
  let statistic = 0;
  let bins = 0;
  let lumpObserved = 0;
  let lumpExpected = 0;
  for (let v = 0; v < probabilities.length; v++) {
    const expected = n * probabilities[v];
    if (expected < 5) {
      lumpObserved += counts[v];
      lumpExpected += expected;
      continue;
    }
    statistic += (counts[v] - expected) ** 2 / expected;
    bins++;
  }
  if (lumpExpected > 0) {
    statistic += (lumpObserved - lumpExpected) ** 2 / lumpExpected;
    bins++;
  }
  const k = Math.max(1, bins - 1);
  const critical = k * (1 - 2 / (9 * k) + Z_999 * Math.sqrt(2 / (9 * k))) ** 3;
  return { statistic, degreesOfFreedom: k, critical, pass: statistic <= critical };
}
