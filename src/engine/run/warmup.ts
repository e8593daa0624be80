// Warm-up runs for calibration: run the real pair greedily with an ungated tree that reaches
// every depth to be calibrated, and record each drafted layer's confidence labelled by whether
// the target accepted the path that far (the metrics' label rule). The result feeds
// calibrateDepths and buildProfile.
import { ConfidenceSignalSchema, type ConfidenceSignal, type TreeShape } from '../../shared/config.js';
import type { DepthHistogramAccumulator } from '../metrics/depth-histograms.js';
import type { ModelSession } from '../model/types.js';
import { WarmupTreePolicy } from '../policy/warmup-tree.js';
import { startRun } from './instrumented-run.js';
import type { WorkItem } from './runner.js';
import { acceptanceFromSamples } from '../calibrate/acceptance.js';
import type { ChildCounts } from '../calibrate/child-acceptance.js';
import { calibrateDepths, DEFAULT_DELTA, DEFAULT_SIGNIFICANCE, DEFAULT_TAU_RULE, type DepthCalibration, type TauRule } from '../calibrate/calibration.js';
import { buildProfile, type EchoProfile } from '../calibrate/profile.js';
import { Refusal } from '../refusal.js';

export interface WarmupOptions {
  target: ModelSession;
  draft: ModelSession;
  workload: readonly WorkItem[];
  eosTokenIds: readonly number[];
  /** Layers to calibrate: depths 0 … depth − 1; the last is the target depth. */
  depth: number;
  /** Children per node of the warm-up tree (its beam). */
  topk?: number;
  batch: number;
  maxNewTokens: number;
  maxLength?: number;
  /** The signal whose layer confidences are collected (default `path-prob`). */
  confidence?: ConfidenceSignal;
  /**
   * After every warm-up step: prompts finished so far and in all. With several signals measured
   * (calibrateSignals), one warm-up per signal, counted together.
   */
  onProgress?: (finished: number, total: number) => void;
}

export interface WarmupSamples {
  accumulator: DepthHistogramAccumulator;
  /** Conditional acceptance samples by rank and own confidence (every verified node whose parent was accepted). */
  children: ChildCounts;
  steps: number;
  requestSteps: number;
  prompts: number;
}

/** The warm-up tree: every layer down to `depth`, topk wide at the root, then a chain plus one spare per layer. */
export function warmupShape(depth: number, topk: number): TreeShape {
  return { depth, topk, tokens: depth + (topk - 1) * 2 };
}

export const WARMUP_TOPK = 3;

/** Enough budget that no request's warm-up tree is ever cut by the cap. */
export function warmupKmax(batch: number, depth: number, topk = WARMUP_TOPK): number {
  return batch * (1 + warmupShape(depth, topk).tokens);
}

/** A policy that never gates and gives every request its whole warm-up tree. */
export function warmupPolicy(depth: number, topk: number, confidence: ConfidenceSignal = 'path-prob'): WarmupTreePolicy {
  return new WarmupTreePolicy(warmupShape(depth, topk), confidence);
}

/**
 * Warm-up progress as log lines: one once `everyMs` have passed since the start or the last line,
 * so a quick warm-up (the demo pair's 1–3 s) prints none and a long one says how far it is.
 */
export function warmupProgressLog(log: (line: string) => void, everyMs = 2000, now: () => number = () => performance.now()): (finished: number, total: number) => void {
  const start = now();
  let last = start;
  return (finished, total) => {
    const t = now();
    if (t - last < everyMs) return;
    last = t;
    log(`warm-up: ${finished} of ${total} prompt runs finished (${((t - start) / 1000).toFixed(0)} s)`);
  };
}

export async function collectWarmupSamples(options: WarmupOptions): Promise<WarmupSamples> {
  const { depth, batch } = options;
  if (!(depth >= 1)) throw new Error(`calibration depth must be at least 1, got ${depth}`);
  const topk = options.topk ?? WARMUP_TOPK;
  const kmax = warmupKmax(batch, depth, topk);
  let steps = 0;
  let requestSteps = 0;
  let finished = 0;
  // The run's metrics label every drafted layer's confidence: those samples are the warm-up's yield.
  const policy = warmupPolicy(depth, topk, options.confidence);
  const run = startRun(
    {
      pair: { target: options.target, draft: options.draft },
      config: { batch, kmax, maxNewTokens: options.maxNewTokens, temperature: 0, seed: 0 },
      policy,
      workload: options.workload,
      maxLength: options.maxLength,
      eosTokenIds: options.eosTokenIds,
    },
    {
      onStep: (event) => {
        for (const r of event.requests) {
          requestSteps++;
          if (r.finished) finished++;
        }
        steps++;
        options.onProgress?.(finished, options.workload.length);
      },
    },
  );
  await run.runner.run();
  const accumulator = run.metrics.depthHistograms;
  return { accumulator, children: policy.children.snapshot(), steps, requestSteps, prompts: options.workload.length };
}

export interface SampleCalibrationOptions {
  /** Layers calibrated: depths 0 … depth − 1. */
  depth: number;
  delta?: number;
  minSamples?: number;
  tauRule?: TauRule;
  /** A τ's truncations must be significantly worse than their alternative at this level (default DEFAULT_SIGNIFICANCE; 1: off). */
  significance?: number;
}

/** Per-depth calibration of warm-up samples: AUC, τ_d, sweet spots. */
export function calibrateSamples(samples: WarmupSamples, options: SampleCalibrationOptions): DepthCalibration[] {
  const { depth, delta = DEFAULT_DELTA, minSamples, tauRule, significance } = options;
  const perDepth = Array.from({ length: depth }, (_, d) => ({ depth: d, ...samples.accumulator.samples(d) }));
  return calibrateDepths(perDepth, { delta, targetDepth: depth - 1, minSamples, tauRule, significance });
}

export interface CalibrateRunOptions extends Omit<WarmupOptions, 'confidence'> {
  delta?: number;
  minSamples?: number;
  /** How τ_d is chosen (default DEFAULT_TAU_RULE; `separation` is the paper's Youden J). */
  tauRule?: TauRule;
  /** See SampleCalibrationOptions.significance. */
  significance?: number;
  models: { draft: string; target: string };
  domain: string;
  /** Signals to measure (default: every signal), so the profile shows how well each separates. */
  signals?: readonly ConfidenceSignal[];
  /**
   * The signal the profile keeps (its τ_d, histograms and AUCs): one of the measured, or `auto`
   * (the default): the one with the highest mean AUC, unless that is within CLEARLY_BETTER_AUC of
   * the paper's `path-prob` (autoSignal).
   */
  keep?: ConfidenceSignal | 'auto';
}

/** A calibration found no depth whose confidence separates accepted from rejected drafts. */
export class NoSweetSpotError extends Refusal {
  constructor(
    message: string,
    /** Every measured depth's AUC, per signal, as one line. */
    readonly aucs: string,
  ) {
    super(message);
    this.name = 'NoSweetSpotError';
  }
}

/** Fewer distinct prompts than this and a calibration says its AUCs and τ_d rest on little. */
export const FEW_CALIBRATION_PROMPTS = 8;

/**
 * The prompts a calibration may learn from: each distinct token sequence once (a copy of a prompt
 * decodes greedily to the same samples, which would only inflate the counts the AUC and the
 * significance test read), with notes for what was left out and for too few; none left is refused.
 */
export function calibrationWorkload(items: readonly WorkItem[], source: string): { workload: WorkItem[]; notes: string[] } {
  const seen = new Map<string, string>();
  const workload: WorkItem[] = [];
  const copies: string[] = [];
  for (const item of items) {
    if (item.promptTokens.length === 0) continue;
    const key = item.promptTokens.join(',');
    if (seen.has(key)) copies.push(item.id);
    else {
      seen.set(key, item.id);
      workload.push(item);
    }
  }
  if (workload.length === 0) throw new Error(`cannot calibrate on ${source}: it has no prompt with any tokens`);
  const notes: string[] = [];
  if (copies.length > 0) {
    const shown = copies.slice(0, 5).map((id) => `"${id}"`).join(', ');
    notes.push(`note: left ${copies.length} prompt${copies.length === 1 ? '' : 's'} out of the calibration, the same tokens as an earlier one (copies add no information): ${shown}${copies.length > 5 ? ', …' : ''}`);
  }
  if (workload.length < FEW_CALIBRATION_PROMPTS) {
    notes.push(`warning: calibrating on only ${workload.length} distinct prompt${workload.length === 1 ? '' : 's'}; AUCs and τ_d from so few samples are unreliable (give ${FEW_CALIBRATION_PROMPTS} or more)`);
  }
  return { workload, notes };
}

/** Mean AUC over the depths that had enough samples for one; null when none had. */
export function meanAuc(depths: readonly DepthCalibration[]): number | null {
  const aucs = depths.flatMap((d) => (d.auc === null ? [] : [d.auc]));
  return aucs.length === 0 ? null : aucs.reduce((a, b) => a + b, 0) / aucs.length;
}

/**
 * How much higher another signal's mean AUC must be for `auto` to leave the paper's `path-prob`:
 * a short warm-up's AUCs move by about this much from one prompt set to the next.
 */
export const CLEARLY_BETTER_AUC = 0.01;

/**
 * `auto`'s choice among measured signals: the highest mean AUC, except that the paper's
 * `path-prob`, when measured, stays unless another beats it by more than CLEARLY_BETTER_AUC.
 */
export function autoSignal(measured: ReadonlyArray<{ confidence: ConfidenceSignal; meanAuc: number | null }>): ConfidenceSignal {
  if (measured.length === 0) throw new Error('no measured signal to choose from');
  const best = measured.reduce((a, b) => ((b.meanAuc ?? 0) > (a.meanAuc ?? 0) ? b : a));
  const paper = measured.find((m) => m.confidence === 'path-prob');
  if (paper && (best.meanAuc ?? 0) - (paper.meanAuc ?? 0) <= CLEARLY_BETTER_AUC) return paper.confidence;
  return best.confidence;
}

/** Every measured signal's calibration, and the profile of any of them. */
export interface SignalCalibrations {
  /** The signal `keep` picks (`auto`: see autoSignal); throws, naming every AUC, when it has no sweet spot. */
  pick(keep: ConfidenceSignal | 'auto'): ConfidenceSignal;
  /** The profile of a measured signal with a sweet spot; it records every measured mean AUC. */
  profile(signal: ConfidenceSignal): EchoProfile;
}

/**
 * One warm-up and per-depth calibration per signal (the trees, and so the samples, depend on the
 * signal the scheduler ranks by).
 */
export async function calibrateSignals(options: CalibrateRunOptions): Promise<SignalCalibrations> {
  const delta = options.delta ?? DEFAULT_DELTA;
  const tauRule = options.tauRule ?? DEFAULT_TAU_RULE;
  const significance = options.significance ?? DEFAULT_SIGNIFICANCE;
  const signals = options.signals ?? ConfidenceSignalSchema.options;
  if (signals.length === 0) throw new Error('calibration needs at least one confidence signal');
  const measured: { confidence: ConfidenceSignal; samples: WarmupSamples; depths: DepthCalibration[]; meanAuc: number | null }[] = [];
  for (const [i, confidence] of signals.entries()) {
    const onProgress = (finished: number, total: number) => options.onProgress?.(i * total + finished, signals.length * total);
    const samples = await collectWarmupSamples({ ...options, confidence, onProgress });
    const depths = calibrateSamples(samples, { depth: options.depth, delta, minSamples: options.minSamples, tauRule, significance });
    measured.push({ confidence, samples, depths, meanAuc: meanAuc(depths) });
  }
  const usable = (keep: ConfidenceSignal | 'auto') =>
    measured.filter((m) => m.depths.some((d) => d.sweetSpot) && (keep === 'auto' || m.confidence === keep));
  return {
    pick(keep) {
      const candidates = usable(keep);
      if (candidates.length === 0) {
        const aucs = measured
          .map((m) => `${m.confidence}: ${m.depths.map((d) => `d${d.depth}=${d.auc === null ? 'n/a' : d.auc.toFixed(3)}`).join(' ')}`)
          .join('; ');
        throw new NoSweetSpotError(`no depth separates accepted from rejected well enough (AUC ${aucs}); lower --delta or give more prompts`, aucs);
      }
      return autoSignal(candidates);
    },
    profile(signal) {
      const m = usable(signal)[0];
      if (m === undefined) throw new Error(`no ${signal} profile: it was not measured or has no sweet spot`);
      const histograms = m.samples.accumulator.histograms();
      return buildProfile({
        models: options.models,
        targetPrecision: options.target.info.precision,
        domain: options.domain,
        delta,
        tauRule,
        significance,
        confidence: m.confidence,
        signals: measured.map((x) => ({ confidence: x.confidence, meanAuc: x.meanAuc })),
        targetDepth: options.depth - 1,
        samples: { prompts: m.samples.prompts, steps: m.samples.steps, requestSteps: m.samples.requestSteps },
        depths: m.depths,
        histograms: m.depths.map((d) => {
          const h = histograms[d.depth];
          return h ? { edges: h.edges, accepted: h.accepted, rejected: h.rejected } : { edges: [], accepted: [], rejected: [] };
        }),
        children: m.samples.children,
        acceptance: m.depths.map((d) => {
          const { accepted, rejected } = m.samples.accumulator.samples(d.depth);
          return acceptanceFromSamples(accepted, rejected);
        }),
      });
    },
  };
}

/**
 * Warm-up, per-depth calibration, profile: the whole of `echo-studio calibrate` below the CLI.
 * Every measured signal's mean AUC goes into the profile, which keeps one (`keep`, default
 * `auto`: the signal that separates accepted from rejected best on this pair). Separating better
 * was not always gating better: under Youden's τ the margin's root gate truncated near-ties the
 * target still accepted, and `path-prob` stayed the default until the budget τ rule removed that
 * cost (docs/echo.md, "Confidence signals").
 */
export async function calibratePair(options: CalibrateRunOptions): Promise<EchoProfile> {
  const signals = options.signals ?? ConfidenceSignalSchema.options;
  const keep = options.keep ?? 'auto';
  if (keep !== 'auto' && !signals.includes(keep)) throw new Error(`cannot keep ${keep}: it was not measured (measured: ${signals.join(', ')})`);
  const calibrations = await calibrateSignals(options);
  return calibrations.profile(calibrations.pick(keep));
}
