// Run metrics, accumulated step by step from StepEvents alone, so the live run and a trace file
// read back later give the same numbers. Definitions: docs/trace-format.md, "Metrics".

import type { DepthHistogram, FinishReason, RunMetrics, StepEvent, StepTimeSplit } from '../../shared/events.js';
import { DepthHistogramAccumulator, type DepthHistogramOptions } from './depth-histograms.js';
import { percentile } from './percentile.js';

interface RequestClock {
  /** Start of the first step the request took part in (after that step's prefill), ms since run start. */
  firstStepStartMs: number;
  /** End of the latest step it took part in. */
  lastStepEndMs: number;
  outputTokens: number;
  steps: number;
  acceptedTokens: number;
  finished?: FinishReason;
}

/** One request's share of the run: per-request acceptance, which batch means hide. */
export interface RequestMetrics {
  requestId: string;
  steps: number;
  generatedTokens: number;
  /** Mean accepted draft tokens per step of this request, bonus excluded. */
  meanAcceptedTokens: number;
  /** Time per output token over its decode phase, ms (see tpotP50Ms). */
  tpotMs: number;
  /** Absent while the request was still running when the trace ended. */
  finished?: FinishReason;
}

export interface RunMetricsOptions extends DepthHistogramOptions {
  policy: string;
}

export class RunMetricsAccumulator {
  readonly policy: string;
  private stepCount = 0;
  private lastStepIndex = -1;
  private lastStepEndMs = 0;
  /** Σ over steps of their time minus the prefill inside it. */
  private decodeMs = 0;
  /** Σ over steps of their time, and of its parts. */
  private readonly time = { totalMs: 0, draftMs: 0, verifyMs: 0, prefillMs: 0 };
  private requestSteps = 0;
  private acceptedTokens = 0;
  private emittedTokens = 0;
  private verifiedDraftTokens = 0;
  private verifiedTokens = 0;
  private paddingWasteSum = 0;
  /** reachedPosition[p] = request-steps whose accepted length > p. */
  private readonly reachedPosition: number[] = [];
  /** Deepest position any request-step verified a draft node at, + 1. */
  private positions = 0;
  private readonly requests = new Map<string, RequestClock>();
  /** Layer confidences by depth, labelled accepted or rejected (a calibration reads the samples). */
  readonly depthHistograms: DepthHistogramAccumulator;

  constructor(options: RunMetricsOptions) {
    this.policy = options.policy;
    this.depthHistograms = new DepthHistogramAccumulator(options);
  }

  /** Fold one step in. Steps must arrive in order, as the engine emits them. */
  addStep(event: StepEvent): void {
    if (event.step <= this.lastStepIndex) {
      throw new Error(`metrics: step ${event.step} arrived after step ${this.lastStepIndex}; steps must be in order`);
    }
    this.lastStepIndex = event.step;
    this.stepCount++;
    this.lastStepEndMs = event.t;
    this.verifiedTokens += event.verifiedTokens;
    this.paddingWasteSum += event.paddingWaste;
    // Decode starts after the prefill of requests admitted just before this step (TTFT-like, excluded).
    const prefillMs = event.timings.prefillMs ?? 0;
    const stepStartMs = event.t - event.timings.totalMs + prefillMs;
    this.decodeMs += event.timings.totalMs - prefillMs;
    this.time.totalMs += event.timings.totalMs;
    this.time.draftMs += event.timings.draftMs;
    this.time.verifyMs += event.timings.verifyMs;
    this.time.prefillMs += prefillMs;

    for (const request of event.requests) {
      this.requestSteps++;
      const acceptedLength = request.accepted.length;
      this.acceptedTokens += acceptedLength;
      this.emittedTokens += request.emitted.length;
      for (let p = 0; p < acceptedLength; p++) this.reachedPosition[p] = (this.reachedPosition[p] ?? 0) + 1;
      for (const node of request.nodes) {
        if (node.depth < 0 || !node.verified) continue;
        this.verifiedDraftTokens++;
        if (node.depth + 1 > this.positions) this.positions = node.depth + 1;
      }
      if (acceptedLength > this.positions) this.positions = acceptedLength;
      this.depthHistograms.addRequestStep(request);

      let clock = this.requests.get(request.requestId);
      if (clock === undefined) {
        clock = { firstStepStartMs: stepStartMs, lastStepEndMs: event.t, outputTokens: 0, steps: 0, acceptedTokens: 0 };
        this.requests.set(request.requestId, clock);
      }
      clock.lastStepEndMs = event.t;
      clock.outputTokens += request.emitted.length;
      clock.steps++;
      clock.acceptedTokens += acceptedLength;
      if (request.finished) clock.finished = request.finished;
    }
  }

  /**
   * The metrics so far. wallMs defaults to the end of the last step (ms since run start); pass
   * the runner's own clock to include time after it (e.g. shutdown).
   */
  metrics(wallMs: number = this.lastStepEndMs): RunMetrics {
    const tpots: number[] = [];
    for (const clock of this.requests.values()) {
      if (clock.outputTokens > 0) tpots.push((clock.lastStepEndMs - clock.firstStepStartMs) / clock.outputTokens);
    }
    const perRequestStep = (x: number) => (this.requestSteps > 0 ? x / this.requestSteps : 0);
    const acceptancePerPosition: number[] = [];
    for (let p = 0; p < this.positions; p++) acceptancePerPosition.push(perRequestStep(this.reachedPosition[p] ?? 0));
    return {
      policy: this.policy,
      steps: this.stepCount,
      requests: this.requests.size,
      generatedTokens: this.emittedTokens,
      wallMs,
      throughput: wallMs > 0 ? this.emittedTokens / (wallMs / 1000) : 0,
      decodeThroughput: this.decodeMs > 0 ? this.emittedTokens / (this.decodeMs / 1000) : 0,
      stepTime: this.stepTime(),
      meanAcceptedTokens: perRequestStep(this.acceptedTokens),
      meanAcceptanceLength: perRequestStep(this.emittedTokens),
      draftUtilisation: this.verifiedDraftTokens > 0 ? this.acceptedTokens / this.verifiedDraftTokens : 0,
      verifiedTokensPerStep: this.stepCount > 0 ? this.verifiedTokens / this.stepCount : 0,
      acceptancePerPosition,
      paddingWaste: this.stepCount > 0 ? this.paddingWasteSum / this.stepCount : 0,
      tpotP50Ms: percentile(tpots, 50),
      tpotP99Ms: percentile(tpots, 99),
    };
  }

  private stepTime(): StepTimeSplit {
    const n = Math.max(1, this.stepCount);
    const { totalMs, draftMs, verifyMs, prefillMs } = this.time;
    return { draftMs: draftMs / n, verifyMs: verifyMs / n, prefillMs: prefillMs / n, otherMs: (totalMs - draftMs - verifyMs - prefillMs) / n };
  }

  /** Per request, in order of first appearance. */
  perRequest(): RequestMetrics[] {
    return [...this.requests].map(([requestId, c]) => ({
      requestId,
      steps: c.steps,
      generatedTokens: c.outputTokens,
      meanAcceptedTokens: c.steps > 0 ? c.acceptedTokens / c.steps : 0,
      tpotMs: c.outputTokens > 0 ? (c.lastStepEndMs - c.firstStepStartMs) / c.outputTokens : 0,
      ...(c.finished ? { finished: c.finished } : {}),
    }));
  }

  /** Accepted vs rejected layer-confidence histograms and AUC, per drafted depth. */
  histograms(): DepthHistogram[] {
    return this.depthHistograms.histograms();
  }

  /** Raw per-depth confidence samples, for calibration. */
  confidenceSamples(depth: number): { accepted: Float64Array; rejected: Float64Array } {
    return this.depthHistograms.samples(depth);
  }
}

/** "drafting 4.25 ms · verification 16.80 ms · prefill 9.31 ms · the rest 0.62 ms" (mean per step). */
export function formatStepTime(s: StepTimeSplit): string {
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  return `drafting ${ms(s.draftMs)} · verification ${ms(s.verifyMs)} · prefill ${ms(s.prefillMs)} · the rest ${ms(s.otherMs)}`;
}

/** Metrics and histograms of a whole recorded run in one call. */
export function computeRunMetrics(
  steps: Iterable<StepEvent>,
  options: RunMetricsOptions & { wallMs?: number },
): { metrics: RunMetrics; histograms: DepthHistogram[]; requests: RequestMetrics[] } {
  const accumulator = new RunMetricsAccumulator(options);
  for (const step of steps) accumulator.addStep(step);
  return { metrics: accumulator.metrics(options.wallMs), histograms: accumulator.histograms(), requests: accumulator.perRequest() };
}

/** What a trace's closing summary line adds to its steps' metrics (its `metrics`, shared/trace-schema.ts). */
export interface RecordedEnd {
  metrics: Pick<RunMetrics, 'wallMs' | 'speedupVsAr'>;
}

/**
 * A recorded run's metrics as its trace tells them: folded from its steps (`fold` holds the steps
 * read so far) and, once the fold has reached the trace's last step (`end`: its summary line, given
 * only then), with the run's own wall clock — which may run past the last step, shutdown included —
 * and the speedup over ar it measured, neither of which the steps hold. Before the end, the steps'
 * own clock. The studio's replay (frame by frame), a late client's catch-up and `trace summary`
 * all read a trace's metrics here.
 */
export function metricsAsRecorded(fold: RunMetricsAccumulator, end?: RecordedEnd): RunMetrics {
  const metrics = fold.metrics(end?.metrics.wallMs);
  if (end?.metrics.speedupVsAr !== undefined) metrics.speedupVsAr = end.metrics.speedupVsAr;
  return metrics;
}

/** metricsAsRecorded over a trace's steps held in memory, with their histograms and per-request metrics. */
export function traceMetrics(
  steps: Iterable<StepEvent>,
  options: RunMetricsOptions & { end?: RecordedEnd },
): { metrics: RunMetrics; histograms: DepthHistogram[]; requests: RequestMetrics[] } {
  const fold = new RunMetricsAccumulator(options);
  for (const step of steps) fold.addStep(step);
  return { metrics: metricsAsRecorded(fold, options.end), histograms: fold.histograms(), requests: fold.perRequest() };
}

/**
 * Wall-clock speedup of a run over an `ar` run of the same requests: the ratio of throughputs
 * (generated tokens per wall second), which equals the ratio of wall times when both runs
 * generated the same tokens.
 */
export function speedupVsAr(run: RunMetrics, ar: RunMetrics): number {
  if (ar.policy !== 'ar') throw new Error(`speedup baseline must be an 'ar' run, got policy '${ar.policy}'`);
  if (!(ar.throughput > 0)) throw new Error('speedup baseline has no throughput (no tokens or no wall time)');
  return run.throughput / ar.throughput;
}

/** A copy of run with speedupVsAr filled in. */
export function withSpeedupVsAr(run: RunMetrics, ar: RunMetrics): RunMetrics {
  return { ...run, speedupVsAr: speedupVsAr(run, ar) };
}
