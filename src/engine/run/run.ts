// The run facade: how anything outside the engine runs it. `prepare(config)` resolves the model
// folders and prompts, loads the pair, resolves τ_d and starts the run; the `Run` it returns takes
// one speculative step at a time (`step`) or runs to its end (`toEnd`), is paused, stepped, stopped
// and has its knobs turned between steps, and tells its listeners each step, finished request and
// KV reallocation (`on`). A loaded setup starts further runs on the same pair (`startOn`: a sweep's
// entries, reproduce's probes). The CLI's commands and the engine host reach the engine through
// the door beside this file (index.ts).
import type { Knobs, RunConfig } from '../../shared/config.js';
import type { RunMetrics, StepEvent } from '../../shared/events.js';
import type { TraceSummary } from '../../shared/trace-schema.js';
import type { ModelledClock } from '../cost/clock.js';
import { runToEnd, startRun, type FinishedRun, type InstrumentedRun, type RunOutcome, type RunSource } from './instrumented-run.js';
import type { RunMetricsAccumulator } from '../metrics/run-metrics.js';
import type { SpeculationPolicy } from '../policy/types.js';
import type { RequestResult, Runner, RunSummary, SlotGrowth } from './runner.js';
import { loadRunSetup, runTraceHeader, type RunSetup, type RunSetupOptions } from './session-run.js';
import { TraceRecorder } from '../trace/writer.js';

/** What a run tells its listeners, by event name. */
export interface RunEvents {
  /** Every speculative step, as it is taken. */
  step: StepEvent;
  /** Each request as it finishes. */
  requestFinished: RequestResult;
  /** A raised batch reallocating the KV slots, as it goes. */
  slotsGrow: SlotGrowth;
}

/** How a run on a loaded setup is instrumented. */
export interface StartOptions {
  /** Instead of the setup's (a sweep runs other policies and smaller batches on one loaded pair). */
  policy?: SpeculationPolicy;
  batch?: number;
  kmax?: number;
  /** Also time every step on this modelled clock. */
  clock?: ModelledClock;
  /** Step events carry each step's emitted text (the studio and recorded traces show it). */
  decodeText?: boolean;
  /** Every step goes to this trace (the run's metrics are then the recorder's). */
  recorder?: TraceRecorder | null;
  /** With a recorder: each draft expansion's top-k goes to the trace too (`trace what-if` re-scores it). */
  recordCandidates?: boolean;
}

export interface PrepareOptions extends RunSetupOptions, Omit<StartOptions, 'recorder' | 'policy' | 'batch' | 'kmax'> {
  /** Record the run's JSONL trace at this path (step events then carry their text). */
  trace?: string;
  /** Also run the workload under `ar` beside the run, step for step, for the speedup (toEnd does). */
  compareAr?: boolean;
}

type Listener<E extends keyof RunEvents> = (event: RunEvents[E]) => void;

/** A run set up and not yet finished. release() frees its models when it loaded them (prepare). */
export class Run {
  private readonly listeners: { [E in keyof RunEvents]: Array<Listener<E>> } = { step: [], requestFinished: [], slotsGrow: [] };
  private readonly instrumented: InstrumentedRun;
  /** ar beside the run is timed on the run's clock too. */
  private readonly clock: ModelledClock | undefined;
  /** Whether release() frees the setup's models (a prepared run's) or leaves them to the caller. */
  private readonly owned: boolean;
  /** Whether toEnd runs ar beside the run (prepare's compareAr). */
  private readonly besideAr: boolean;

  constructor(
    /** What the run steps over: its loaded setup (models, prompts, policy, τ_d). */
    readonly setup: RunSetup,
    options: StartOptions = {},
    how: { owned?: boolean; besideAr?: boolean } = {},
  ) {
    this.clock = options.clock;
    this.owned = how.owned ?? false;
    this.besideAr = how.besideAr ?? false;
    this.instrumented = startRun(setup, {
      ...options,
      onStep: (event) => this.emit('step', event),
      onRequestFinished: (result) => this.emit('requestFinished', result),
      onSlotsGrow: (growth) => this.emit('slotsGrow', growth),
    });
  }

  /** The run's config, τ_d resolved. */
  get config(): RunConfig {
    return this.setup.config;
  }

  /** Calls `listener` on every `event` from now on; returns what removes it. */
  on<E extends keyof RunEvents>(event: E, listener: Listener<E>): () => void {
    const list = this.listeners[event] as Array<Listener<E>>;
    list.push(listener);
    return () => {
      const at = list.indexOf(listener);
      if (at >= 0) list.splice(at, 1);
    };
  }

  /** One speculative step over the requests in flight (admitting those that arrived); null once all are done. */
  step(): Promise<StepEvent | null> {
    return this.instrumented.runner.next();
  }

  /**
   * Steps the run to its end and measures it; with `compareAr` at prepare, ar takes turns with it
   * step by step on the same pair. `yieldBetweenSteps` gives the event loop a turn between steps,
   * so that pause, single steps, stop and knobs are heard (`onPark` says when it parks and resumes).
   */
  async toEnd(options: { yieldBetweenSteps?: boolean; onPark?: (parked: boolean) => void; log?: (line: string) => void } = {}): Promise<FinishedRun> {
    if (this.besideAr) return runToEnd(this.instrumented, { source: this.setup, clock: this.clock, log: options.log });
    // The runner's loop: step() until every request is done, parking while paused.
    const main = this.instrumented.measure(await this.runner.run({ yieldBetweenSteps: options.yieldBetweenSteps, onPark: options.onPark }));
    return { main, metrics: main.metrics };
  }

  /** Pauses before the next step. */
  pause(): void {
    this.runner.pause();
  }

  resume(): void {
    this.runner.resume();
  }

  /** One step while paused; while running, pause after the next step. */
  stepOnce(): void {
    if (!this.runner.isPaused) this.runner.pause();
    this.runner.stepOnce();
  }

  /** Ends the run after the step in flight. */
  stop(): void {
    this.runner.stop();
  }

  /** Knobs apply from the next step; refuses, with the reason, a K_max below the batch or the requests in flight. */
  setKnobs(knobs: Knobs): void {
    this.runner.setKnobs(knobs);
  }

  /** The metrics so far (the recorder's when recording). */
  get metrics(): RunMetricsAccumulator {
    return this.instrumented.metrics;
  }

  get recorder(): TraceRecorder | null {
    return this.instrumented.recorder;
  }

  /** What a summary of this run measures (for a caller that drove the runner itself, as rounds do). */
  measure(summary: RunSummary): RunOutcome {
    return this.instrumented.measure(summary);
  }

  /** Ends the recording once (the trace's summary line) and returns the run's metrics; later calls return the same. */
  end(reason: TraceSummary['reason'], options?: { wallMs?: number; message?: string; speedupVsAr?: number }): RunMetrics {
    return this.instrumented.end(reason, options);
  }

  /** Frees the models when this run loaded them; a run started on a caller's setup leaves them. */
  async release(): Promise<void> {
    if (this.owned) await this.setup.release();
  }

  /** The runner, for the engine's own drivers that interleave runs step by step (rounds, lockstep). */
  get runner(): Runner {
    return this.instrumented.runner;
  }

  private emit<E extends keyof RunEvents>(event: E, value: RunEvents[E]): void {
    for (const listener of this.listeners[event] as Array<Listener<E>>) listener(value);
  }
}

/** A run on a setup already loaded (its models stay the caller's to release). */
export function startOn(setup: RunSetup, options: StartOptions = {}): Run {
  return new Run(setup, options);
}

/**
 * Loads a run's setup and starts its run: the one way `echo-studio run` and the studio's run begin.
 * A run that cannot start releases what it loaded.
 */
export async function prepare(config: RunConfig, options: PrepareOptions = {}): Promise<Run> {
  // Checked before anything loads: the flags alone say it cannot run.
  if (options.recordCandidates && !options.trace) throw new Error('--record-candidates needs --trace FILE');
  const besideAr = options.compareAr === true && config.policy !== 'ar';
  // ar beside the run takes turns with it step by step, each on its own KV slots.
  const setup = await loadRunSetup(config, besideAr ? { ...options, slots: 2 * config.batch } : options);
  try {
    const recorder = options.trace ? new TraceRecorder(options.trace, await runTraceHeader(setup, options.recordCandidates)) : null;
    return new Run(
      setup,
      { recorder, recordCandidates: options.recordCandidates, clock: options.clock, decodeText: options.decodeText ?? recorder !== null },
      { owned: true, besideAr },
    );
  } catch (err) {
    await setup.release();
    throw err;
  }
}

export type { FinishedRun, RunOutcome, RunSource };
