// Studio runs in the engine host: run.start loads the pair (the bundled demo pair unless the config
// names folders), reports progress while loading and calibrating, then steps the engine and pushes
// every step with fresh histograms and metrics; pause, single step, resume, stop and knobs act
// between steps. Each run records a trace to a temporary file, so trace.export and trace.seek work
// on it like on an opened trace.
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { BUNDLED_DRAFT, BUNDLED_HEAD, BUNDLED_TARGET, faultStack, prepare, Refusal, startingTaus, tausAfter, type ResolvedGates, type Run } from '../engine/index.js';
import type { Knobs, RunConfig } from '../shared/config.js';
import type { CalibrationSummary, EngineKnobsEvent } from '../shared/messages.js';
import type { HandlerModule, HostContext, RequestContext } from './handler-context.js';

/**
 * Histograms and metrics go to the UI at most every 100 ms, and less often when computing them
 * gets expensive (the AUC sorts every sample so far): they never take more than a tenth of the time.
 */
const SNAPSHOT_INTERVAL_MS = 100;
const SNAPSHOT_COST_FACTOR = 10;

interface ActiveRun {
  /** Null while the models load; the run can be stopped before it steps. */
  live: Run | null;
  prepared: Run | null;
  stopRequested: boolean;
  /** Aborts the setup (loading, warm-up) when the run is stopped before it steps. */
  setup: AbortController;
  /** Steps emitted so far: the next step's index, where a knobs change takes effect. */
  steps: number;
  /** What the engine runs with now (null while loading). */
  knobs: EngineKnobsEvent | null;
}

/** The calibration behind a run's τ_d, with its per-depth reasons, for the studio to show. */
export function calibrationSummary(gates: ResolvedGates): CalibrationSummary {
  const profile = gates.profile;
  if (!profile) return { source: gates.source, confidence: gates.confidence, depths: [] };
  return {
    source: gates.source,
    confidence: profile.confidence,
    delta: profile.delta,
    significance: profile.significance,
    targetDepth: profile.targetDepth,
    depths: profile.depths.map((d) => ({ depth: d.depth, accepted: d.accepted, rejected: d.rejected, auc: d.auc, tau: d.tau, sweetSpot: d.sweetSpot })),
  };
}

/** The knobs a prepared run starts with: its config's batch and K_max, the τ_d it resolved. */
export function initialKnobs(prepared: Run): EngineKnobsEvent {
  const { config, gates } = prepared.setup;
  return {
    type: 'knobs',
    policy: config.policy,
    batch: config.batch,
    kmax: config.kmax,
    // Which depths show a τ, and which, is the policy's rule (engine/policy/shown-knobs.ts).
    ...startingTaus(config, gates),
    ...(gates ? { confidence: gates.confidence, calibration: calibrationSummary(gates) } : {}),
    batchLimit: { max: prepared.setup.slotLimit.max, beyond: prepared.setup.slotLimit.beyond },
  };
}

/** The knobs after the engine took a change (τ_d replace the old set; fixed keeps one τ for all). */
export function appliedKnobs(current: EngineKnobsEvent, change: Knobs): EngineKnobsEvent {
  const { refused: _refused, ...rest } = current;
  return { ...rest, batch: change.batch ?? current.batch, kmax: change.kmax ?? current.kmax, ...tausAfter(current.policy, current, change) };
}

/** The folders of the bundled demo pair (its demo EAGLE-3 head as the draft for `head`), as the host's model scan found them. */
async function bundledPair(host: HostContext, draftKind: RunConfig['draftKind']): Promise<{ draftDir: string; targetDir: string }> {
  const status = await host.refreshStatus();
  const find = (name: string) => status.bundledModels.find((m) => m.name === name)?.dir;
  const draftName = draftKind === 'head' ? BUNDLED_HEAD : BUNDLED_DRAFT;
  const draftDir = find(draftName);
  const targetDir = find(BUNDLED_TARGET);
  if (draftDir === undefined || targetDir === undefined) {
    const found = status.bundledModels.map((m) => m.name).join(', ') || 'none';
    throw new Refusal(`the bundled demo pair (${draftName}, ${BUNDLED_TARGET}) is not installed (found: ${found}); choose a draft and a target folder`);
  }
  return { draftDir, targetDir };
}

/**
 * The config with every path it names resolved through the host's file access: a path outside
 * the chosen folders is refused, with the answer a missing one gets, before anything is read.
 */
function readablePaths(host: HostContext, config: RunConfig): RunConfig {
  const resolved = { ...config };
  for (const key of ['draftDir', 'targetDir', 'promptsFile', 'profile'] as const) {
    const named = config[key];
    if (named !== undefined) resolved[key] = host.files.readable(named);
  }
  return resolved;
}

/** Errors reach the studio as one line; a fault's stack goes in the event's detail (faultStack). */
function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0];
}

function recordingPath(): string {
  const dir = path.join(tmpdir(), 'echo-studio-runs');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}.jsonl`);
}

/**
 * Loads the studio's run: its paths through the host's file access, the bundled pair the host
 * found unless folders are named, a core left to the window, a recording to `trace`; each step
 * goes to every studio, with histograms and metrics at most every 100 ms.
 */
async function prepareStudioRun(host: HostContext, config: RunConfig, trace: string, run: ActiveRun): Promise<Run> {
  config = readablePaths(host, config);
  const models = config.draftDir === undefined ? await bundledPair(host, config.draftKind) : undefined;
  const prepared = await prepare(config, {
    ...(models ? { models } : {}),
    // One core stays with the studio's window (it draws while the run streams).
    maxDefaultThreads: Math.max(1, availableParallelism() - 1),
    trace,
    decodeText: true,
    signal: run.setup.signal,
    progress: (task, done, total, message) => host.progress(task, done, total, message),
  });
  // A batch raised past the loaded KV slots reallocates them before the next step.
  prepared.on('slotsGrow', ({ from, to, done, total }) => host.progress('slots', done, total, `reallocating the KV caches: ${from} → ${to} slots`));
  let nextSnapshotAt = -Infinity;
  prepared.on('step', (event) => {
    run.steps = event.step + 1;
    const started = performance.now();
    if (started < nextSnapshotAt) {
      host.pushStep(event);
      return;
    }
    const extras = { histograms: prepared.metrics.histograms(), metrics: prepared.metrics.metrics() };
    const done = performance.now();
    nextSnapshotAt = done + Math.max(SNAPSHOT_INTERVAL_MS, SNAPSHOT_COST_FACTOR * (done - started));
    host.pushStep(event, extras);
  });
  return prepared;
}

/**
 * Steps the studio's run to its end: the runner's own loop, with a turn of the event loop between
 * steps so that pause, single steps, stop and knob changes are heard while it runs (knobs apply
 * from the next step). Returns the run's failure, if it failed, for every studio to hear.
 */
async function driveStudioRun(host: HostContext, prepared: Run, run: ActiveRun): Promise<{ message: string; detail?: string } | null> {
  run.live = prepared;
  run.knobs = initialKnobs(prepared);
  host.broadcast(run.knobs);
  host.setRunState('running');
  let summary;
  try {
    ({ summary } = (await prepared.toEnd({ yieldBetweenSteps: true, onPark: (paused) => host.setRunState(paused ? 'paused' : 'running') })).main);
  } catch (err) {
    const message = firstLine(err);
    const metrics = prepared.end('error', { message });
    host.pushStep(null, { histograms: prepared.metrics.histograms(), metrics });
    return { message: `the run failed: ${message}`, detail: faultStack(err) };
  }
  const metrics = prepared.end(summary.stopped ? 'stopped' : 'finished', { wallMs: summary.wallMs });
  host.pushStep(null, { histograms: prepared.metrics.histograms(), metrics });
  host.setRunState('finished');
  return null;
}

/** A run that could not start, as the asker's error: closes the setup's progress bars, says why. */
function setupFailure(host: HostContext, err: unknown): { type: 'error'; message: string; detail?: string } {
  // Close the progress bars the failed setup left open.
  for (const task of ['load', 'calibrate']) host.progress(task, 1, 1);
  host.setRunState('error');
  const stack = faultStack(err);
  const message = `cannot start the run: ${firstLine(err)}`;
  return stack === undefined ? { type: 'error', message } : { type: 'error', message, detail: stack };
}

/**
 * A knobs change on the live run, between steps: every studio hears the knobs the engine runs
 * with, or, refused, the values it kept and why; the recording notes the change at the next step.
 */
function turnKnobs(host: HostContext, live: Run, run: ActiveRun, knobs: Knobs): void {
  try {
    live.setKnobs(knobs); // refuses, with the reason, a K_max below the batch or the requests in flight
  } catch (err) {
    // Nothing changed: every studio shows the values the engine kept, and why.
    if (run.knobs) host.broadcast({ ...run.knobs, refused: firstLine(err) });
    throw err;
  }
  if (run.knobs) {
    run.knobs = appliedKnobs(run.knobs, knobs);
    host.broadcast(run.knobs);
  }
  run.prepared?.recorder?.knobs(run.steps, knobs);
}

/** A refusal is logged in its one line; a fault with its stack, as the host logs failed requests. */
function logFailure(host: HostContext, message: string, stack: string | undefined): void {
  host.log(stack === undefined ? message : `${message}\n${stack}`);
}

/** Fails the run: one error event for everyone watching, and run state 'error'. */
function failRun(host: HostContext, message: string, detail?: string): void {
  logFailure(host, message, detail);
  host.setRunState('error');
  host.broadcast(detail === undefined ? { type: 'error', message } : { type: 'error', message, detail });
}

export const runHandlers: HandlerModule = ({ host, recordings, study }) => {
  let active: ActiveRun | null = null;
  let lastRecording: string | null = null;

  const forgetRecording = () => {
    if (lastRecording) rmSync(lastRecording, { force: true });
    lastRecording = null;
    recordings.setRun(null);
  };
  /** Settles when the current run's loop has ended and its models are released. */
  let runEnded: Promise<void> = Promise.resolve();
  host.onShutdown(async () => {
    const run = active;
    if (run) {
      run.stopRequested = true;
      if (run.live) {
        run.live.stop();
        await runEnded; // ends after the step in flight
      }
    }
    forgetRecording();
  });

  // A page opened during a run learns the knobs the engine runs with.
  host.onHello((ctx) => {
    if (active?.knobs) ctx.reply(active.knobs);
  });

  const requireLive = (verb: string): Run => {
    if (!active) throw new Refusal(`no run is in progress to ${verb}`);
    if (!active.live) throw new Refusal(`the run is still loading; ${verb} once it runs`);
    return active.live;
  };

  /**
   * `reply` answers the client that asked: a run that cannot start is its error alone (the
   * others see the run state); once the run steps, its failure is news for every studio.
   */
  const start = async (config: RunConfig, reply: RequestContext['reply']): Promise<void> => {
    const run: ActiveRun = { live: null, prepared: null, stopRequested: false, setup: new AbortController(), steps: 0, knobs: null };
    active = run;
    host.setRunState('loading');
    forgetRecording();
    const trace = recordingPath();
    lastRecording = trace;
    recordings.setRun(trace, true); // from now on trace.open and trace.seek wait for the run
    let prepared: Run;
    try {
      prepared = await prepareStudioRun(host, config, trace, run);
    } catch (err) {
      active = null;
      forgetRecording();
      if (run.stopRequested) {
        // Stopped while loading: not a failure. The load bar closes with what happened.
        host.progress('calibrate', 1, 1);
        host.progress('load', 1, 1, 'stopped while loading; nothing was run');
        host.setRunState('idle');
        return;
      }
      const answer = setupFailure(host, err);
      logFailure(host, answer.message, answer.detail);
      reply(answer);
      return;
    }
    run.prepared = prepared;
    try {
      if (run.stopRequested) {
        prepared.end('stopped');
        host.setRunState('finished');
        return;
      }
      const failure = await driveStudioRun(host, prepared, run);
      if (failure) failRun(host, failure.message, failure.detail);
    } finally {
      if (active === run) active = null;
      recordings.setRun(trace, false);
      await prepared.release();
    }
  };

  return {
    async 'run.start'({ config }, ctx) {
      if (active) throw new Refusal('a run is already in progress: stop it before starting another');
      if (study.running) throw new Refusal('the quick study is running and takes the cores: cancel it or wait for its report');
      runEnded = start(config, ctx.reply);
      await runEnded;
    },

    'run.pause'() {
      requireLive('pause').pause();
    },

    'run.resume'() {
      requireLive('resume').resume(); // the loop reports 'running' when it steps again
    },

    /** One step while paused; while running, pause after the next step. */
    'run.step'() {
      requireLive('step').stepOnce();
    },

    'run.stop'() {
      if (!active) throw new Refusal('no run is in progress to stop');
      active.stopRequested = true;
      active.setup.abort();
      active.live?.stop();
    },

    'knobs.set'({ knobs }) {
      turnKnobs(host, requireLive('change knobs of'), active!, knobs);
    },
  };
};
