// The knee of a measured forward-time curve T(tokens): where verification stops being nearly
// free and its cost turns linear in the packed token count. We fit the paper's own cost model
//   T_ver(K) ≈ T_ar · (1 + γ · [K − K_max]^+)
// to the measurements: flat at T_ar up to the knee K_max, then a line of slope T_ar·γ. The fitted
// K_max is the natural verification budget on this hardware.

export interface TimedPoint {
  /** Packed tokens in one forward. */
  tokens: number;
  /** Forward time, milliseconds (a median of repeats, ideally). */
  ms: number;
}

export interface TverModel {
  /** Time of a forward at or below the knee (≈ one autoregressive step). */
  tArMs: number;
  /** Relative cost of each token past the knee: T grows by T_ar·γ per token. */
  gamma: number;
  /** The knee: tokens verified at (nearly) the price of one. */
  kmax: number;
}

export interface KneeFit extends TverModel {
  /** Root-mean-square relative error of the fit over the points. */
  rmsRelativeError: number;
}

/** The paper's cost model: verification time of K packed tokens. */
export function tverMs(model: TverModel, tokens: number): number {
  return model.tArMs * (1 + model.gamma * Math.max(0, tokens - model.kmax));
}

/**
 * Least-squares fit of T = a + b·[K − k]^+ in relative error (the curve spans two orders of
 * magnitude, so absolute error would only see the largest batches), trying every measured token
 * count as the knee k. Ties go to the larger knee.
 */
export function fitKnee(points: readonly TimedPoint[]): KneeFit {
  const pts = points.filter((p) => p.tokens > 0 && p.ms > 0).sort((x, y) => x.tokens - y.tokens);
  if (pts.length < 3) throw new Error(`a knee needs at least 3 measured token counts, got ${pts.length}`);
  let best: KneeFit | null = null;
  for (const { tokens: knee } of pts) {
    const fit = fitHinge(pts, knee);
    if (fit === null) continue;
    if (best === null || fit.rmsRelativeError <= best.rmsRelativeError + 1e-12) best = fit;
  }
  if (best === null) throw new Error('could not fit a knee to the measurements');
  return best;
}

/** Weighted least squares (weights 1/T²) of T = a + b·h with h = [K − knee]^+, b ≥ 0. */
function fitHinge(pts: readonly TimedPoint[], knee: number): KneeFit | null {
  let sw = 0;
  let swh = 0;
  let swhh = 0;
  let swt = 0;
  let swht = 0;
  for (const p of pts) {
    const w = 1 / (p.ms * p.ms);
    const h = Math.max(0, p.tokens - knee);
    sw += w;
    swh += w * h;
    swhh += w * h * h;
    swt += w * p.ms;
    swht += w * h * p.ms;
  }
  const det = sw * swhh - swh * swh;
  let a: number;
  let b: number;
  if (det <= 1e-18 * sw * swhh || swhh === 0) {
    a = swt / sw;
    b = 0;
  } else {
    a = (swhh * swt - swh * swht) / det;
    b = (sw * swht - swh * swt) / det;
    if (b < 0) {
      a = swt / sw;
      b = 0;
    }
  }
  if (!(a > 0)) return null;
  let sq = 0;
  for (const p of pts) {
    const predicted = a + b * Math.max(0, p.tokens - knee);
    sq += ((predicted - p.ms) / p.ms) ** 2;
  }
  return { tArMs: a, gamma: b / a, kmax: knee, rmsRelativeError: Math.sqrt(sq / pts.length) };
}

/**
 * K_max to suggest for a batch: the knee, but never below the batch (every request verifies its
 * root) — past the knee each extra token costs γ·T_ar, which speculation has to earn back.
 */
export function suggestKmax(fit: TverModel, batch: number): number {
  return Math.max(batch, Math.round(fit.kmax));
}
