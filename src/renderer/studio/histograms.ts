// View-model for the per-depth confidence histograms and the draggable τ line.
import type { CalibrationSummary } from '../../shared/messages.js';
import type { DepthHistogram, StepEvent } from '../../shared/events.js';
import { formatProbability } from './tokens.js';

export interface HistogramBin {
  /** Bin label, its centre, 2 decimals. */
  label: string;
  centre: number;
  /** Share of that class's samples in this bin (each class sums to 1), so shapes compare. */
  accepted: number;
  rejected: number;
  /** Layers never verified: no outcome (see DepthHistogram.unverified). */
  unverified: number;
  acceptedCount: number;
  rejectedCount: number;
  unverifiedCount: number;
}

const total = (counts: readonly number[] | undefined): number => (counts ?? []).reduce((a, b) => a + b, 0);

export function histogramBins(h: DepthHistogram): HistogramBin[] {
  const totalAccepted = total(h.accepted);
  const totalRejected = total(h.rejected);
  const totalUnverified = total(h.unverified);
  const bins: HistogramBin[] = [];
  for (let i = 0; i + 1 < h.edges.length; i += 1) {
    const centre = (h.edges[i] + h.edges[i + 1]) / 2;
    const a = h.accepted[i] ?? 0;
    const r = h.rejected[i] ?? 0;
    const u = h.unverified?.[i] ?? 0;
    bins.push({
      label: centre.toFixed(2),
      centre,
      accepted: totalAccepted > 0 ? a / totalAccepted : 0,
      rejected: totalRejected > 0 ? r / totalRejected : 0,
      unverified: totalUnverified > 0 ? u / totalUnverified : 0,
      acceptedCount: a,
      rejectedCount: r,
      unverifiedCount: u,
    });
  }
  return bins;
}

/** Every sample of the depth: accepted, rejected and unverified. */
export function sampleCount(h: DepthHistogram): number {
  return total(h.accepted) + total(h.rejected) + total(h.unverified);
}

/** Layers at this depth never verified (no outcome). */
export function unverifiedCount(h: DepthHistogram): number {
  return total(h.unverified);
}

/** Minimum AUC for a depth to count as a sweet spot when the UI suggests gates. */
export const SWEET_SPOT_AUC = 0.75;

export function isSweetSpot(h: DepthHistogram, threshold = SWEET_SPOT_AUC): boolean {
  return h.auc !== null && h.auc > threshold;
}

/** A live badge leaves only this far below the bar, so an AUC that wobbles around it does not blink. */
export const SWEET_SPOT_HYSTERESIS = 0.05;
/** Least samples of each class before a live AUC may call a depth a sweet spot. */
export const SWEET_SPOT_MIN_SAMPLES = 20;

/** Where a depth's "sweet spot" badge comes from: the run's calibration (fixed for the run), or this run's own steps. */
export type SweetSpotSource = 'calibration' | 'live';

/**
 * Whether a depth shows as a sweet spot, and on whose word. With a calibration that measured the
 * depth, its verdict: it chose the gates, and it does not change as steps stream. Without one,
 * this run's AUC, with enough samples of each class, entering above the bar and leaving only
 * below it by SWEET_SPOT_HYSTERESIS (`was`: what the badge showed before).
 */
export function sweetSpot(
  h: DepthHistogram,
  calibration: CalibrationSummary | undefined,
  was: boolean,
): { on: boolean; source: SweetSpotSource } {
  const measured = calibration && (calibration.source === 'warm-up' || calibration.source === 'profile') ? calibration.depths.find((d) => d.depth === h.depth) : undefined;
  if (measured) return { on: measured.sweetSpot, source: 'calibration' };
  if (h.auc === null) return { on: false, source: 'live' };
  const enough = total(h.accepted) >= SWEET_SPOT_MIN_SAMPLES && total(h.rejected) >= SWEET_SPOT_MIN_SAMPLES;
  const on = was ? h.auc > SWEET_SPOT_AUC - SWEET_SPOT_HYSTERESIS : enough && h.auc > SWEET_SPOT_AUC;
  return { on, source: 'live' };
}

/** Who calibrated the τ_d, in a reader's words ("the warm-up calibration before the run"). */
export function calibrationSource(summary: CalibrationSummary): string {
  return summary.source === 'profile' ? 'calibration (profile)' : 'calibration (warm-up, before the run)';
}

/** τ for a pointer position over the plot area: clamped to [0, 1], rounded to 0.01. */
export function tauFromPointer(clientX: number, plotLeft: number, plotWidth: number): number {
  if (plotWidth <= 0) return 0;
  const v = (clientX - plotLeft) / plotWidth;
  return Math.round(Math.min(1, Math.max(0, v)) * 100) / 100;
}

/**
 * τ one arrow-key step up (direction 1) or down (-1): ±0.01 from 0.01 up; below it ×/÷ 1.5, down
 * to 1e-4 and then 0, since calibrated τ_d reach 4e-4 and a 0.01 step would jump over them.
 * Three significant figures, in [0, 1].
 */
export function stepTau(tau: number, direction: 1 | -1): number {
  const round = (v: number) => (v === 0 ? 0 : Number(v.toPrecision(3)));
  if (direction === 1) {
    if (tau <= 0) return 1e-4;
    return round(Math.min(1, tau < 0.01 ? Math.min(0.01, tau * 1.5) : tau + 0.01));
  }
  if (tau <= 1e-4) return 0;
  return round(tau <= 0.01 ? Math.max(1e-4, tau / 1.5) : Math.max(0.01, tau - 0.01));
}

export function pointerFromTau(tau: number, plotLeft: number, plotWidth: number): number {
  return plotLeft + Math.min(1, Math.max(0, tau)) * plotWidth;
}

/** The τ the engine used at each depth in the step (its gate checks), keyed by depth. */
export function tausInUse(step: StepEvent | null): Record<string, number> {
  const out: Record<string, number> = {};
  if (step === null) return out;
  for (const req of step.requests) for (const gate of req.gates) out[String(gate.depth)] ??= gate.tau;
  return out;
}

/** Why the calibration gated a depth or not, in a reader's words; null when it did not measure it. */
export function calibrationReason(summary: CalibrationSummary | undefined, depth: number): string | null {
  if (!summary) return null;
  if (summary.source === 'flags') return depth === 0 ? 'τ_d given with the run: no calibration' : null;
  if (summary.source === 'ungated') return depth === 0 ? 'the warm-up found no sweet spot: the run is ungated' : null;
  const d = summary.depths.find((entry) => entry.depth === depth);
  if (!d) return 'the calibration did not reach this depth';
  const counts = `${d.accepted} accepted, ${d.rejected} rejected`;
  const by = calibrationSource(summary);
  if (d.auc === null) return `${by}: too few samples to judge (${counts}): no gate`;
  const auc = `AUC ${d.auc.toFixed(2)}`;
  const test = summary.significance !== undefined && summary.significance < 1 ? ` at significance ${summary.significance}` : '';
  if (d.tau === null) return `${by}: ${auc}; no τ cut layers accepted significantly less often than the alternative${test}: no gate`;
  const anchor = depth === 0 || depth === summary.targetDepth;
  const bar = anchor ? 0.5 : summary.delta;
  if (!d.sweetSpot) return `${by}: ${auc} ≤ ${bar === undefined ? 'the bar' : bar === 0.5 ? 'chance (0.5)' : `δ ${bar}`}: not a sweet spot, no gate (τ ${formatProbability(d.tau)} passed the test${test})`;
  return `${by}: ${auc} > ${bar === 0.5 ? 'chance' : `δ ${bar ?? ''}`} and τ ${formatProbability(d.tau)} passed the test${test}: gated`;
}

/** One line on where the run's τ_d came from. */
export function calibrationHeadline(summary: CalibrationSummary | undefined, gated: number): string | null {
  if (!summary) return null;
  if (summary.source === 'ungated') return 'no τ_d: the warm-up found no depth whose confidence separates accepted from rejected drafts, so the run is ungated';
  const from = summary.source === 'flags' ? 'given with the run' : summary.source === 'profile' ? 'a calibration profile' : 'a warm-up calibration';
  const rule =
    summary.source === 'flags'
      ? ''
      : ` (${summary.confidence}${summary.delta !== undefined ? `, sweet spot: AUC > δ ${summary.delta}` : ''}${summary.significance !== undefined && summary.significance < 1 ? `, τ significant at ${summary.significance}` : ''})`;
  return `τ_d from ${from}${rule}: ${gated === 0 ? 'no gate chosen; the reasons are under each depth' : `${gated} gated ${gated === 1 ? 'depth' : 'depths'}`}`;
}
