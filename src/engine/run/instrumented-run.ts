// One instrumented run: the runner over a loaded pair and its requests, with the policy, the trace
// recording and the modelled clock a caller asks for, and one way to measure what it did. Every
// run goes through here: `echo-studio run` (and its --compare-ar partner), each entry of a sweep
// round, the calibration warm-up, and the studio's live run in the engine host.
import type { RunConfig } from '../../shared/config.js';
import type { RunMetrics, StepEvent } from '../../shared/events.js';
import type { TraceSummary } from '../../shared/trace-schema.js';
import type { ModelledClock } from '../cost/clock.js';
import { RunMetricsAccumulator, withSpeedupVsAr } from '../metrics/run-metrics.js';
import { runLockstep } from './lockstep.js';
import { createPolicy } from '../policy/index.js';
import type { ModelSession } from '../model/types.js';
import type { SpeculationPolicy } from '../policy/types.js';
import { Runner, type RequestResult, type RunSummary, type SlotGrowth, type SlotLimit, type WorkItem } from './runner.js';
import { ExpansionRecorder } from '../trace/expansions.js';
import type { TraceRecorder } from '../trace/writer.js';

/**
 * What a run steps over and with. A loaded run setup (session-run.ts) is one; the warm-up builds
 * its own from the sessions it was given.
 */
export interface RunSource {
  pair: { target: ModelSession; draft: ModelSession | null; tokenizer?: { decode(ids: number[]): string } };
  config: Pick<RunConfig, 'batch' | 'kmax' | 'maxNewTokens' | 'temperature' | 'seed'>;
  policy: SpeculationPolicy;
  workload: readonly WorkItem[];
  /** KV rows per slot the pair was loaded with. */
  maxLength?: number;
  /** Token ids that end a request (default: the target's). */
  eosTokenIds?: readonly number[];
  /** How far a raised batch may grow the pair's KV slots (absent: the slots it was loaded with). */
  slotLimit?: SlotLimit;
}

export interface RunInstruments {
  /** Instead of the source's (a sweep runs other policies and smaller batches on one loaded pair). */
  policy?: SpeculationPolicy;
  batch?: number;
  kmax?: number;
  /** Every step goes to this trace (its metrics are then the recorder's). */
  recorder?: TraceRecorder | null;
  /** With a recorder: each draft expansion's top-k goes to the trace too, so `trace what-if` can re-score it. */
  recordCandidates?: boolean;
  /** Also time every step on this modelled clock. */
  clock?: ModelledClock;
  /** Events carry each step's emitted text (the studio and recorded traces show it). */
  decodeText?: boolean;
  onStep?: (event: StepEvent) => void;
  /** Each request as it finishes. */
  onRequestFinished?: (result: RequestResult) => void;
  /** A raised batch reallocating the KV slots, as it goes. */
  onSlotsGrow?: (growth: SlotGrowth) => void;
}

/** A run's time on a modelled clock. */
export interface ModelledTime {
  clock: string;
  ms: number;
  draftMs: number;
  verifyMs: number;
  /** Generated tokens per modelled second. */
  throughput: number;
}

/** What a finished run measured. */
export interface RunOutcome {
  summary: RunSummary;
  metrics: RunMetrics;
  /** Share of step time spent outside onnxruntime's run() (the engine's own work). */
  engineOverhead: number;
  /** Each step's time, prefill included. */
  stepMs: number[];
  /**
   * Each decode step's time (a step with no prefill in it) split in two: onnxruntime's run() calls
   * (the draft's and the target's) and the engine's own work around them (scheduling, packing,
   * feeds, commit, the step's event). What separates two policies whose forwards are alike.
   */
  decodeSteps: DecodeStepTimes;
  /** With a modelled clock. */
  modelled?: ModelledTime;
}

export interface DecodeStepTimes {
  modelMs: number[];
  engineMs: number[];
}

/** A run set up and not started: its runner (step it, pause it, turn its knobs) and its measures. */
export interface InstrumentedRun {
  runner: Runner;
  /** The metrics so far (the live view reads them; the recorder's own when recording). */
  metrics: RunMetricsAccumulator;
  recorder: TraceRecorder | null;
  /** What the run's summary measures. */
  measure(summary: RunSummary): RunOutcome;
  /**
   * Ends the recording once, writing the trace's summary line when recording, and returns the
   * run's metrics; later calls return the same.
   */
  end(reason: TraceSummary['reason'], options?: { wallMs?: number; message?: string; speedupVsAr?: number }): RunMetrics;
}

export function startRun(source: RunSource, instruments: RunInstruments = {}): InstrumentedRun {
  const { pair, config } = source;
  const recorder = instruments.recorder ?? null;
  const expansions = recorder && instruments.recordCandidates ? new ExpansionRecorder() : null;
  const inner = instruments.policy ?? source.policy;
  const policy = expansions ? expansions.wrap(inner) : inner;
  const metrics = recorder?.metrics ?? new RunMetricsAccumulator({ policy: inner.name });
  const stepMs: number[] = [];
  const decodeSteps: DecodeStepTimes = { modelMs: [], engineMs: [] };
  let modelMs = 0;
  const modelled = { totalMs: 0, draftMs: 0, verifyMs: 0 };
  const clock = instruments.clock;
  const decode = instruments.decodeText && pair.tokenizer ? pair.tokenizer : null;
  const runner = new Runner(
    {
      target: pair.target,
      draft: pair.draft,
      policy,
      batch: instruments.batch ?? config.batch,
      kmax: instruments.kmax ?? config.kmax,
      maxNewTokens: config.maxNewTokens,
      temperature: config.temperature,
      seed: config.seed,
      eosTokenIds: source.eosTokenIds ?? pair.target.info.eosTokenIds,
      maxLength: source.maxLength,
      ...(source.slotLimit ? { slotLimit: source.slotLimit } : {}),
      ...(instruments.onSlotsGrow ? { onSlotsGrow: instruments.onSlotsGrow } : {}),
      // Headless runs skip decoding each step's text.
      ...(decode ? { decode: (ids: number[]) => decode.decode(ids) } : {}),
      onStep: (event) => {
        if (recorder) recorder.step(expansions ? expansions.annotate(event) : event);
        else metrics.addStep(event);
        const { totalMs, modelMs: stepModelMs = 0, prefillMs } = event.timings;
        stepMs.push(totalMs);
        modelMs += stepModelMs;
        if (!prefillMs) {
          decodeSteps.modelMs.push(stepModelMs);
          decodeSteps.engineMs.push(totalMs - stepModelMs);
        }
        if (clock) {
          const t = clock.stepMs(event);
          modelled.totalMs += t.totalMs;
          modelled.draftMs += t.draftMs;
          modelled.verifyMs += t.verifyMs;
        }
        instruments.onStep?.(event);
      },
      onRequestFinished: instruments.onRequestFinished,
    },
    source.workload,
  );
  let ended: RunMetrics | null = null;
  return {
    runner,
    metrics,
    recorder,
    measure(summary) {
      const runMetrics = metrics.metrics(summary.wallMs);
      let totalMs = 0;
      for (const ms of stepMs) totalMs += ms;
      return {
        summary,
        metrics: runMetrics,
        engineOverhead: totalMs > 0 ? (totalMs - modelMs) / totalMs : 0,
        stepMs,
        decodeSteps,
        ...(clock
          ? {
              modelled: {
                clock: clock.label,
                ms: modelled.totalMs,
                draftMs: modelled.draftMs,
                verifyMs: modelled.verifyMs,
                throughput: modelled.totalMs > 0 ? runMetrics.generatedTokens / (modelled.totalMs / 1000) : 0,
              },
            }
          : {}),
      };
    },
    end(reason, options = {}) {
      if (ended) return ended;
      if (recorder) ended = recorder.finish(reason, options);
      else {
        ended = metrics.metrics(options.wallMs);
        if (options.speedupVsAr !== undefined) ended.speedupVsAr = options.speedupVsAr;
      }
      return ended;
    },
  };
}

/** A run stepped to its end: its outcome, ar's beside it when asked, and the metrics to report. */
export interface FinishedRun {
  main: RunOutcome;
  ar?: RunOutcome;
  /** The run's metrics, with its wall-time speedup over ar when ar ran beside it. */
  metrics: RunMetrics;
}

/**
 * Steps a started run to its end and measures it. With `besideAr`, the same workload under ar on
 * the same loaded pair (its own KV slots) takes turns with the run step by step, each timing only
 * its own steps, so the machine's drift falls on both alike.
 */
export async function runToEnd(run: InstrumentedRun, besideAr?: { source: RunSource; clock?: ModelledClock; log?: (line: string) => void }): Promise<FinishedRun> {
  if (!besideAr) {
    const main = run.measure(await run.runner.run());
    return { main, metrics: main.metrics };
  }
  besideAr.log?.('running the same workload under ar for the speedup, the two taking turns step by step');
  const arRun = startRun(besideAr.source, { policy: createPolicy('ar', { ...besideAr.source.config }), clock: besideAr.clock });
  const [mainSummary, arSummary] = await runLockstep([run.runner, arRun.runner]);
  const main = run.measure(mainSummary);
  const ar = arRun.measure(arSummary);
  return { main, ar, metrics: withSpeedupVsAr(main.metrics, ar.metrics) };
}
