// Calibration math (paper §3.2, docs/echo.md): from per-depth layer confidences labelled
// accepted / rejected, find the sweet spots D_sig where confidence separates the two
// (AUC_d > δ) and the threshold τ_d at each that separates them best (Youden's J).
import { mannWhitneyAuc } from '../metrics/auc';

export interface DepthSamples {
  depth: number;
  accepted: ArrayLike<number>;
  rejected: ArrayLike<number>;
}

export interface ThresholdChoice {
  /** Gate passes when c > tau. */
  tau: number;
  /** Youden's J at tau: P(accepted passes) − P(rejected passes). */
  j: number;
  /** P(accepted passes) at tau. */
  truePositiveRate: number;
  /** P(rejected passes) at tau. */
  falsePositiveRate: number;
}

export interface DepthCalibration {
  depth: number;
  accepted: number;
  rejected: number;
  /** Mann–Whitney AUC of accepted over rejected; null with fewer than minSamples in a group. */
  auc: number | null;
  /** Best-separating threshold; null without enough samples. */
  threshold: ThresholdChoice | null;
  sweetSpot: boolean;
}

export interface CalibrationOptions {
  /** Sweet-spot bar: AUC_d > delta. */
  delta: number;
  /**
   * The target depth (last layer of the base tree). It and the root layer are the paper's
   * standing sweet spots: they are kept whenever their confidence beats chance (AUC > 0.5),
   * even under δ; intermediate depths must clear δ.
   */
  targetDepth: number;
  /** Fewest samples per group for an AUC or a τ at a depth. */
  minSamples?: number;
}

export const DEFAULT_DELTA = 0.75;
export const DEFAULT_MIN_SAMPLES = 8;

/**
 * The τ maximising Youden's J = TPR − FPR for the rule "pass when c > τ", over the midpoints
 * between consecutive distinct sample values (and just below the smallest). Ties go to the
 * lowest τ: truncating less when two cuts separate equally well.
 */
export function youdenThreshold(accepted: ArrayLike<number>, rejected: ArrayLike<number>): ThresholdChoice | null {
  const nAcc = accepted.length;
  const nRej = rejected.length;
  if (nAcc === 0 || nRej === 0) return null;
  const pooled: { v: number; acc: boolean }[] = [];
  for (let i = 0; i < nAcc; i++) pooled.push({ v: accepted[i], acc: true });
  for (let i = 0; i < nRej; i++) pooled.push({ v: rejected[i], acc: false });
  for (const p of pooled) if (!Number.isFinite(p.v)) throw new Error(`calibration: a confidence sample is ${p.v}`);
  pooled.sort((a, b) => a.v - b.v);
  // Walk cuts from below everything upwards; `accBelow` / `rejBelow` count samples ≤ the cut.
  let accBelow = 0;
  let rejBelow = 0;
  let best: ThresholdChoice = { tau: Math.max(0, pooled[0].v / 2), j: 0, truePositiveRate: 1, falsePositiveRate: 1 };
  let i = 0;
  while (i < pooled.length) {
    const v = pooled[i].v;
    while (i < pooled.length && pooled[i].v === v) {
      if (pooled[i].acc) accBelow++;
      else rejBelow++;
      i++;
    }
    const next = i < pooled.length ? pooled[i].v : Math.min(1, v + (1 - v) / 2);
    const tpr = (nAcc - accBelow) / nAcc;
    const fpr = (nRej - rejBelow) / nRej;
    const j = tpr - fpr;
    if (j > best.j + 1e-12) best = { tau: (v + next) / 2, j, truePositiveRate: tpr, falsePositiveRate: fpr };
  }
  return best;
}

/** Per-depth AUC, threshold and sweet-spot flag. */
export function calibrateDepths(samples: readonly DepthSamples[], options: CalibrationOptions): DepthCalibration[] {
  const { delta, targetDepth } = options;
  const minSamples = options.minSamples ?? DEFAULT_MIN_SAMPLES;
  if (!(delta >= 0.5 && delta < 1)) throw new Error(`δ must be in [0.5, 1): an AUC bar above chance, got ${delta}`);
  return samples.map(({ depth, accepted, rejected }) => {
    const enough = accepted.length >= minSamples && rejected.length >= minSamples;
    const auc = enough ? mannWhitneyAuc(accepted, rejected) : null;
    const threshold = enough ? youdenThreshold(accepted, rejected) : null;
    const anchor = depth === 0 || depth === targetDepth;
    const sweetSpot = auc !== null && threshold !== null && (auc > delta || (anchor && auc > 0.5));
    return { depth, accepted: accepted.length, rejected: rejected.length, auc, threshold, sweetSpot };
  });
}

/** τ_d keyed by depth: at the sweet spots (for `echo`), or at every depth with a τ (for `dense`). */
export function tausOf(depths: readonly DepthCalibration[], which: 'sweet-spots' | 'all'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of depths) {
    if (d.threshold === null || (which === 'sweet-spots' && !d.sweetSpot)) continue;
    out[String(d.depth)] = significant(d.threshold.tau, 4);
  }
  return out;
}

/** Deep layers of a weak draft have confidences like 1e-5: keep significant digits, not decimals. */
function significant(x: number, digits: number): number {
  return x === 0 ? 0 : Number(x.toPrecision(digits));
}
