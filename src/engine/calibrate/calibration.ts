// Calibration math (paper §3.2, docs/echo.md): from per-depth layer confidences labelled
// accepted / rejected, find the sweet spots D_sig where confidence separates the two
// (AUC_d > δ) and the threshold τ_d at each: the one that separates them best (Youden's J, the
// paper's rule), or the one that gains most for what a truncation's released budget buys instead.
import { mannWhitneyAuc } from '../metrics/auc.js';

export interface DepthSamples {
  depth: number;
  accepted: ArrayLike<number>;
  rejected: ArrayLike<number>;
}

export interface ThresholdChoice {
  /** Gate passes when c > tau. */
  tau: number;
  /**
   * The acceptance rate a truncated sample's tokens were weighed against: the depth's own rate
   * for Youden's J, the next layer's for the budget rule.
   */
  alternative: number;
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
  /** How τ_d is chosen (default DEFAULT_TAU_RULE). */
  tauRule?: TauRule;
  /** A cut must truncate samples accepted significantly less often than its alternative, at this level (default DEFAULT_SIGNIFICANCE). */
  significance?: number;
}

/**
 * How calibration picks τ_d. Both maximise what truncating the samples at or below τ gains,
 * Σ (a − accepted), where `a` is the chance that the tokens the truncation frees are accepted
 * elsewhere:
 * - `separation` (the paper's, Youden's J): a = the depth's own acceptance rate π_d. The gain is
 *   then n·π_d·(1 − π_d)·J, so this is exactly the τ maximising J = TPR − FPR.
 * - `budget`: a = π_{d+1}, the acceptance rate of the next layer, which is what a released token
 *   buys under Priority 1 (a confident request's next node). Deeper tokens are accepted less
 *   often, so this gate truncates only the samples that lose to them, never ones that a
 *   depth extension would do worse than.
 */
export type TauRule = 'separation' | 'budget';
export const TAU_RULES: readonly TauRule[] = ['separation', 'budget'];
/**
 * `budget`: on the demo pair Youden's τ_0 truncates roots the target still accepts more often
 * than the deeper nodes their budget then buys, and echo lost 1–7 % at batch 8 for it
 * (docs/echo.md, "Choosing τ_d").
 */
export const DEFAULT_TAU_RULE: TauRule = 'budget';

export const DEFAULT_DELTA = 0.75;
/**
 * The level at which a τ's truncated warm-up samples must be accepted less often than what their
 * budget buys (one-sided binomial test). The best of a few hundred cuts over ~200 samples always
 * gains something on the warm-up it was fitted to; a gain that chance explains is noise, and a
 * gate acting on it cut prose's root near-ties for nothing (docs/echo.md, "Choosing τ_d").
 */
export const DEFAULT_SIGNIFICANCE = 0.05;
export const DEFAULT_MIN_SAMPLES = 8;

/**
 * The τ for the rule "pass when c > τ" that gains most when each truncated sample's tokens go to
 * something accepted with probability `alternative`: truncating a sample gains `alternative` and
 * loses the sample's own acceptance, so τ maximises Σ_{c ≤ τ} (alternative − accepted). Cuts are
 * the midpoints between consecutive distinct values (and just below the smallest: truncate
 * nothing, gain 0). Ties go to the lowest τ: truncating less when two cuts gain the same. With a
 * `significance` below 1, only cuts whose truncated samples are accepted significantly less often
 * than `alternative` (one-sided binomial test at that level) count; without one, τ truncates nothing.
 */
export function breakEvenThreshold(accepted: ArrayLike<number>, rejected: ArrayLike<number>, alternative: number, significance = 1): ThresholdChoice | null {
  const nAcc = accepted.length;
  const nRej = rejected.length;
  if (nAcc === 0 || nRej === 0) return null;
  if (!(alternative >= 0 && alternative <= 1)) throw new Error(`calibration: the alternative's acceptance rate is ${alternative}`);
  const pooled: { v: number; acc: boolean }[] = [];
  for (let i = 0; i < nAcc; i++) pooled.push({ v: accepted[i], acc: true });
  for (let i = 0; i < nRej; i++) pooled.push({ v: rejected[i], acc: false });
  for (const p of pooled) if (!Number.isFinite(p.v)) throw new Error(`calibration: a confidence sample is ${p.v}`);
  pooled.sort((a, b) => a.v - b.v);
  // Walk cuts from below everything upwards; `accBelow` / `rejBelow` count samples ≤ the cut.
  let accBelow = 0;
  let rejBelow = 0;
  let best = { tau: Math.max(0, pooled[0].v / 2), gain: 0, accBelow: 0, rejBelow: 0 };
  const eps = 1e-9 * (nAcc + nRej);
  let i = 0;
  while (i < pooled.length) {
    const v = pooled[i].v;
    while (i < pooled.length && pooled[i].v === v) {
      if (pooled[i].acc) accBelow++;
      else rejBelow++;
      i++;
    }
    const next = i < pooled.length ? pooled[i].v : Math.min(1, v + (1 - v) / 2);
    const gain = alternative * (accBelow + rejBelow) - accBelow;
    if (gain > best.gain + eps && (significance >= 1 || binomialAtMost(accBelow, accBelow + rejBelow, alternative) <= significance)) {
      best = { tau: (v + next) / 2, gain, accBelow, rejBelow };
    }
  }
  const truePositiveRate = (nAcc - best.accBelow) / nAcc;
  const falsePositiveRate = (nRej - best.rejBelow) / nRej;
  return { tau: best.tau, alternative, j: truePositiveRate - falsePositiveRate, truePositiveRate, falsePositiveRate };
}

/** P(X ≤ k) for X ~ Binomial(n, p). */
export function binomialAtMost(k: number, n: number, p: number): number {
  if (k >= n || p <= 0) return 1;
  if (p >= 1) return 0;
  // In logs: (1 − p)^n underflows to 0 for a warm-up of a few hundred samples per depth.
  const logRatio = Math.log(p) - Math.log1p(-p);
  const logTerms = [n * Math.log1p(-p)]; // log P(X = 0)
  for (let i = 1; i <= k; i++) logTerms.push(logTerms[i - 1] + Math.log((n - i + 1) / i) + logRatio);
  const top = Math.max(...logTerms);
  let sum = 0;
  for (const logTerm of logTerms) sum += Math.exp(logTerm - top);
  return Math.min(1, Math.exp(top) * sum);
}

/**
 * The τ maximising Youden's J = TPR − FPR (the paper's "best separation"): the break-even τ
 * against the depth's own acceptance rate (see TauRule). Ties go to the lowest τ.
 */
export function youdenThreshold(accepted: ArrayLike<number>, rejected: ArrayLike<number>, significance = 1): ThresholdChoice | null {
  const n = accepted.length + rejected.length;
  return n === 0 ? null : breakEvenThreshold(accepted, rejected, accepted.length / n, significance);
}

/**
 * Per depth, the acceptance rate a truncation there is weighed against (index = depth; null where
 * a depth has no samples). `budget`: the next layer's rate; past the deepest measured layer, its
 * rate times the last layer-to-layer continuation rate.
 */
export function alternativeRates(samples: readonly DepthSamples[], rule: TauRule): (number | null)[] {
  const rate = (s: DepthSamples | undefined) => {
    const n = s ? s.accepted.length + s.rejected.length : 0;
    return s && n > 0 ? s.accepted.length / n : null;
  };
  const byDepth = new Map(samples.map((s) => [s.depth, s]));
  return samples.map((s) => {
    const own = rate(s);
    if (rule === 'separation' || own === null) return own;
    const next = rate(byDepth.get(s.depth + 1));
    if (next !== null) return next;
    const previous = rate(byDepth.get(s.depth - 1));
    return previous ? own * Math.min(1, own / previous) : own;
  });
}

/** Per-depth AUC, threshold and sweet-spot flag. */
export function calibrateDepths(samples: readonly DepthSamples[], options: CalibrationOptions): DepthCalibration[] {
  const { delta, targetDepth } = options;
  const minSamples = options.minSamples ?? DEFAULT_MIN_SAMPLES;
  if (!(delta >= 0.5 && delta < 1)) throw new Error(`δ must be in [0.5, 1): an AUC bar above chance, got ${delta}`);
  const alternatives = alternativeRates(samples, options.tauRule ?? DEFAULT_TAU_RULE);
  return samples.map(({ depth, accepted, rejected }, i) => {
    const enough = accepted.length >= minSamples && rejected.length >= minSamples;
    const auc = enough ? mannWhitneyAuc(accepted, rejected) : null;
    const alternative = alternatives[i];
    const threshold = enough && alternative !== null ? breakEvenThreshold(accepted, rejected, alternative, options.significance ?? DEFAULT_SIGNIFICANCE) : null;
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
