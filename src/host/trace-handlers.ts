// Trace replay and export in the engine host: trace.open reads a trace file and sends its steps as
// frames, so the studio draws them exactly as it drew them live; trace.seek re-sends the steps up
// to a chosen one (the studio starts clean on a frame that begins at step 0, so replaying 0…N
// rebuilds every view — trees, text, charts, histograms — as it stood at step N); trace.export
// writes the current recording (the live run's, or the opened trace) in any export format.
//
// A trace may be far larger than memory allows to hold (hundreds of MB, 100k steps), so nothing
// here holds one: opening builds an index of where each step line lies (TraceFileIndex, a chunk at
// a time, with progress), and replays read steps from the file a frame at a time, folding them
// into the metrics as they go. Between frames the event loop runs (other clients' requests are
// answered) and the replay waits until the channel to the clients has passed the last frame on.
// trace.cancel stops opening, replaying or seeking; the index goes when the last client does.
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { metricsAsRecorded, parseTrace, readTraceStreaming, Refusal, RunMetricsAccumulator, type TraceContents, TraceFileIndex, TraceOpenCancelled, traceMetrics } from '../engine/index.js';
import { checkWritableName, pathTaken, traceExportPaths, writeTraceExport } from '../output/index.js';
import type { TraceStep } from '../shared/trace-schema.js';
import type { FrameEvent, RequestOf } from '../shared/messages.js';
import type { HandlerModule, HostContext, RequestContext } from './handler-context.js';
import type { Recordings } from './recordings.js';

/**
 * A replay frame's steps take at most this many bytes on disk (one longer step goes alone): small
 * enough that reading, checking and sending one frame keeps the event loop for tens of ms, and
 * well under the transports' 16 MiB message cap.
 */
const REPLAY_FRAME_BYTES = 128 * 1024;
/** Opening reads and checks this much of the file between turns of the event loop. */
const INDEX_CHUNK_BYTES = 128 * 1024;
/** Progress of opening a trace goes out at most this often. */
const PROGRESS_INTERVAL_MS = 250;
/** During a long replay, frames carry the metrics so far at most this often (the last frame always). */
const REPLAY_METRICS_INTERVAL_MS = 1000;
/** The progress task of opening and replaying a trace. */
const TRACE_TASK = 'trace';
/**
 * Opening's progress is one bar in these units: reading the file fills the first half, replaying
 * it the second; only the final notice reaches the whole (which ends the task for the studio).
 */
const PROGRESS_UNITS = 1000;
const progressUnits = (phase: 0 | 1, done: number, total: number) =>
  Math.min(PROGRESS_UNITS - 1, Math.floor((phase + (total > 0 ? done / total : 0)) * (PROGRESS_UNITS / 2)));

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Sends the whole of a small trace held in memory as frames (the live run's recording, for a late client). */
function sendWholeTrace(host: HostContext, trace: TraceContents, upTo: number, send: (frame: FrameEvent) => void): void {
  let last = -1;
  while (last + 1 < trace.steps.length && trace.steps[last + 1].step <= upTo) last++;
  const steps = trace.steps.slice(0, last + 1);
  const atEnd = last === trace.steps.length - 1;
  const { metrics, histograms } = traceMetrics(steps, { policy: trace.header.config.policy, end: atEnd ? trace.summary : undefined });
  host.flushFrames();
  let chunk: TraceStep[] = [];
  let bytes = 0;
  for (const step of steps) {
    const size = JSON.stringify(step).length;
    if (chunk.length > 0 && bytes + size > REPLAY_FRAME_BYTES) {
      send({ type: 'frame', steps: chunk });
      chunk = [];
      bytes = 0;
    }
    chunk.push(step);
    bytes += size;
  }
  send({ type: 'frame', steps: chunk, histograms, metrics });
}

interface ReplayOptions {
  /** Stops the replay before its next frame. */
  signal?: AbortSignal;
  /** After each frame: step lines sent so far and to send in all. */
  onFrame?: (sent: number, total: number) => void;
  /** Waits before each frame (a late client catching up holds the shared replay). */
  beforeFrame?: () => Promise<void>;
}

/**
 * Sends step lines 0…last (positions in the index) as frames, read from the file a frame at a time,
 * the last frame with the metrics and histograms as they stood at that step (a stopped replay
 * sends them in a frame of no steps). Returns how many step lines were sent.
 */
async function replayFrames(
  host: HostContext,
  recordings: Recordings,
  index: TraceFileIndex,
  last: number,
  send: (frame: FrameEvent) => void,
  options: ReplayOptions = {},
): Promise<number> {
  const atEnd = last === index.stepCount - 1;
  const accumulator = new RunMetricsAccumulator({ policy: index.header.config.policy });
  const snapshot = (whole: boolean) => metricsAsRecorded(accumulator, whole ? index.summary : undefined);
  const stillOpen = () => recordings.opened?.index === index;
  host.flushFrames();
  let next = 0;
  let metricsAt = performance.now();
  while (next <= last) {
    await options.beforeFrame?.();
    if (options.signal?.aborted || !stillOpen()) break;
    let end = next + 1;
    while (end <= last && index.stepBytes(next, end + 1) <= REPLAY_FRAME_BYTES) end++;
    const steps = index.readSteps(next, end);
    for (const step of steps) accumulator.addStep(step);
    next = end;
    if (next > last) {
      send({ type: 'frame', steps, histograms: accumulator.histograms(), metrics: snapshot(atEnd) });
      options.onFrame?.(next, last + 1);
      return next;
    }
    const now = performance.now();
    const withMetrics = now - metricsAt >= REPLAY_METRICS_INTERVAL_MS;
    if (withMetrics) metricsAt = now;
    send(withMetrics ? { type: 'frame', steps, metrics: snapshot(false) } : { type: 'frame', steps });
    options.onFrame?.(next, last + 1);
    // Let other requests in, and never queue frames faster than the clients' channel takes them.
    await host.whenDelivered();
    await nextTurn();
  }
  send({ type: 'frame', steps: [], histograms: accumulator.histograms(), metrics: snapshot(false) });
  return next;
}

/**
 * The opened trace's shared replay: one open, replay or seek at a time (a new one stops the old),
 * late clients caught up while the shared replay waits for them, one progress bar for everyone.
 */
class TraceReplays {
  /** The shared open, replay or seek under way. */
  private task: AbortController | null = null;
  /** Step lines the shared replay has sent so far, while one runs. */
  private broadcastSent: number | null = null;
  /** Late clients catching up now: the shared replay waits for them, so they miss nothing. */
  private catchingUp = 0;
  private caughtUp: Promise<void> = Promise.resolve();
  private progressAt = -Infinity;
  private adopting: Promise<void> | null = null;

  constructor(
    private readonly host: HostContext,
    private readonly recordings: Recordings,
  ) {}

  get busy(): boolean {
    return this.task !== null;
  }

  /** Stops what is under way (trace.cancel, or nobody looks any more). */
  stop(): void {
    this.task?.abort();
    this.task = null;
  }

  private startTask(): AbortController {
    this.task?.abort();
    const controller = new AbortController();
    this.task = controller;
    return controller;
  }

  private endTask(controller: AbortController): void {
    if (this.task === controller) this.task = null;
  }

  private async waitForCatchUps(): Promise<void> {
    while (this.catchingUp > 0) await this.caughtUp;
  }

  private throttledProgress(units: number, message: string): void {
    const now = performance.now();
    if (now - this.progressAt < PROGRESS_INTERVAL_MS) return;
    this.progressAt = now;
    this.host.progress(TRACE_TASK, units, PROGRESS_UNITS, message);
  }

  private finishProgress(message: string): void {
    this.progressAt = -Infinity;
    this.host.progress(TRACE_TASK, PROGRESS_UNITS, PROGRESS_UNITS, message);
  }

  /** The shared replay of the opened trace up to step line `last`, to every client. */
  private async broadcastReplay(index: TraceFileIndex, last: number, controller: AbortController): Promise<number> {
    this.broadcastSent = 0;
    try {
      return await replayFrames(this.host, this.recordings, index, last, this.host.broadcast, {
        signal: controller.signal,
        beforeFrame: () => this.waitForCatchUps(),
        onFrame: (done, total) => {
          this.broadcastSent = done;
          if (total > 0 && done < total) this.throttledProgress(progressUnits(1, done, total), `replaying ${basename(index.path)}: step ${index.stepNumber(done - 1)} of ${index.stepCount}`);
        },
      });
    } finally {
      this.broadcastSent = null;
    }
  }

  /**
   * A client that connects later (a reloaded page, `trace replay` opened in a browser) gets the
   * steps so far, so it shows the same run or replay position as everyone else.
   */
  async hello(ctx: RequestContext): Promise<void> {
    const { host, recordings } = this;
    if (!recordings.opened && recordings.run && !recordings.run.live && existsSync(recordings.run.path)) await this.adoptRunRecording();
    if (recordings.opened) {
      await this.catchUp(ctx, recordings.opened.index);
    } else if (recordings.dormant && this.task === null && !recordings.run?.live) {
      const { path, replayedTo } = recordings.dormant;
      recordings.dormant = null;
      await this.openAndReplay(path, path, replayedTo ?? Number.MAX_SAFE_INTEGER, ctx);
    } else if (recordings.run && existsSync(recordings.run.path)) {
      // A live run: flushed, every step in the file has been sent; read synchronously so that no
      // step slips in between (it would reach this client twice).
      host.flushFrames();
      const trace = parseTrace(readFileSync(recordings.run.path, 'utf8'));
      if (trace.steps.length > 0) sendWholeTrace(host, trace, recordings.replayedTo ?? Number.MAX_SAFE_INTEGER, ctx.reply);
    }
  }

  /**
   * A finished run's recording is as long as the run was: index it as an opened trace (at the
   * position the studio shows), so seeking and late clients read it a frame at a time too.
   */
  adoptRunRecording(): Promise<void> {
    const recordings = this.recordings;
    this.adopting ??= (async () => {
      const run = recordings.run;
      if (!run || run.live) return;
      const index = await TraceFileIndex.build(run.path, { chunkBytes: INDEX_CHUNK_BYTES });
      if (recordings.run !== run || run.live || recordings.opened) {
        index.close(); // a new run started, or a trace was opened meanwhile
        return;
      }
      const replayedTo = recordings.replayedTo;
      recordings.opened = { path: run.path, index };
      recordings.replayedTo = replayedTo;
    })().finally(() => {
      this.adopting = null;
    });
    return this.adopting;
  }

  /** Sends one late client the opened trace up to where everyone else is, holding the shared replay meanwhile. */
  private async catchUp(ctx: RequestContext, index: TraceFileIndex): Promise<void> {
    const broadcastSent = this.broadcastSent;
    const last = broadcastSent !== null ? broadcastSent - 1 : index.lastIndexAtOrBefore(this.recordings.replayedTo ?? Number.MAX_SAFE_INTEGER);
    if (last < 0 && broadcastSent !== null) return; // the shared replay has sent nothing yet: its frames will do
    this.catchingUp += 1;
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    this.caughtUp = this.caughtUp.then(() => done);
    const gone = new AbortController();
    try {
      await replayFrames(this.host, this.recordings, index, last, ctx.reply, {
        signal: gone.signal,
        beforeFrame: async () => {
          if (!ctx.connected()) gone.abort();
        },
      });
    } finally {
      this.catchingUp -= 1;
      release();
    }
  }

  /** Indexes `file` (progress to all, cancellable): the index, or null when it was not opened (answered already). */
  private async index(file: string, asked: string, controller: AbortController, ctx: RequestContext): Promise<TraceFileIndex | null> {
    const name = basename(file);
    try {
      return await TraceFileIndex.build(file, {
        chunkBytes: INDEX_CHUNK_BYTES,
        signal: controller.signal,
        onProgress: (read, total) => this.throttledProgress(progressUnits(0, read, total), `reading ${name}: ${(read / 1048576).toFixed(0)} of ${(total / 1048576).toFixed(0)} MB`),
      });
    } catch (err) {
      this.endTask(controller);
      if (err instanceof TraceOpenCancelled) {
        this.finishProgress(`opening ${name} was cancelled; nothing was opened`);
        return null;
      }
      // A bad header, or a file that cannot be read: nothing in the file is usable.
      this.finishProgress(`${name} was not opened`);
      const code = (err as NodeJS.ErrnoException).code;
      const why = code !== undefined && !(err instanceof Refusal) ? code : (err as Error).message;
      ctx.reply({ type: 'error', message: `cannot open trace ${asked}: ${why}` });
      return null;
    }
  }

  /** Indexes `file`, then replays it to everyone up to step `upTo`. */
  async openAndReplay(file: string, asked: string, upTo: number, ctx: RequestContext): Promise<void> {
    const { host, recordings } = this;
    const controller = this.startTask();
    const name = basename(file);
    const index = await this.index(file, asked, controller, ctx);
    if (index === null) return;
    if (this.task !== controller || controller.signal.aborted) {
      // A newer open, trace.cancel, or everyone left, as the file was read to its end: as when
      // that comes while it is read, the bar ends and nothing is opened.
      index.close();
      this.finishProgress(`opening ${name} was cancelled; nothing was opened`);
      return;
    }
    recordings.closeOpened();
    recordings.dormant = null;
    recordings.opened = { path: file, index };
    const sent = await this.broadcastReplay(index, index.lastIndexAtOrBefore(upTo), controller);
    this.endTask(controller);
    if (recordings.opened?.index !== index) return;
    recordings.replayedTo = lastStepOf(index, sent);
    if (index.error) {
      ctx.reply({
        type: 'error',
        message: `${asked}: ${index.error.message}; replaying the ${index.stepCount} steps before it`,
      });
    }
    this.finishProgress(
      sent < index.stepCount && upTo === Number.MAX_SAFE_INTEGER
        ? `replay of ${name} stopped at step ${recordings.replayedTo} of ${index.stepCount}`
        : `opened ${name}: ${index.stepCount} steps${skippedNote(index.skipped)}`,
    );
    host.setRunState('finished');
  }

  /** Replays the opened trace to everyone up to `step` (trace.seek). */
  async seek(index: TraceFileIndex, step: number): Promise<void> {
    const controller = this.startTask();
    const sent = await this.broadcastReplay(index, index.lastIndexAtOrBefore(step), controller);
    this.endTask(controller);
    if (this.recordings.opened?.index === index) this.recordings.replayedTo = lastStepOf(index, sent);
  }
}

/** The step number of step line `sent - 1`, or -1 when none was sent. */
const lastStepOf = (index: TraceFileIndex, sent: number) => (sent > 0 ? index.stepNumber(sent - 1) : -1);

export const traceHandlers: HandlerModule = ({ host, recordings }) => {
  const replays = new TraceReplays(host, recordings);
  host.onHello((ctx) => replays.hello(ctx));
  // Nobody looks any more: stop what is under way and let the trace go (a client that comes back
  // opens it again).
  host.onViewersGone(() => {
    replays.stop();
    recordings.closeOpened({ keepPlace: true });
  });

  return {
    async 'trace.open'({ path }, ctx) {
      if (recordings.run?.live) throw new Refusal('a run is in progress: stop it before opening a trace');
      let file: string;
      try {
        // Outside the chosen folders, or not there: one answer, before anything is read.
        file = host.files.readable(path);
      } catch (err) {
        ctx.reply({ type: 'error', message: `cannot open trace ${path}: ${(err as Error).message}` });
        return;
      }
      await replays.openAndReplay(file, path, Number.MAX_SAFE_INTEGER, ctx);
    },

    async 'trace.seek'({ step }) {
      if (recordings.run?.live) throw new Refusal('a run is in progress: seeking works on an opened trace or a finished run');
      if (!recordings.opened && recordings.run && existsSync(recordings.run.path)) await replays.adoptRunRecording();
      if (recordings.opened) return replays.seek(recordings.opened.index, step);
      throw new Refusal('there is no run or trace to use: start a run or open a trace first');
    },

    'trace.cancel'() {
      if (!replays.busy) throw new Refusal('nothing to cancel: no trace is being opened or replayed');
      replays.stop();
    },

    'trace.export': (request, ctx) => exportRecording(host, recordings, request, ctx),
  };
};

/** trace.export: the studio's recording (the opened trace, else the run's) in one format, the asker told what was written. */
async function exportRecording(
  host: HostContext,
  recordings: Recordings,
  { path, format, overwrite }: RequestOf<'trace.export'>,
  ctx: RequestContext,
): Promise<void> {
  // A name no file system takes is the asker's mistake: one line, before any folder is looked at.
  checkWritableName(path);
  const source = currentSource(recordings);
  const out = host.files.writable(path);
  const taken = traceExportPaths(format, out).filter(pathTaken);
  if (taken.length > 0 && overwrite !== true) {
    throw new Refusal(`${taken[0]} exists; export with overwrite to replace it`);
  }
  // JSON Lines copies the file (its index counts the steps); the other formats read its steps,
  // whole, for as long as the export takes.
  let counted: { steps: number; error?: { line: number } };
  let written: string[];
  if (format === 'jsonl') {
    const shared = recordings.opened?.path === source.path ? recordings.opened.index : null;
    const index = shared ?? (await TraceFileIndex.build(source.path));
    counted = { steps: index.stepCount, ...(index.error ? { error: index.error } : {}) };
    if (!shared) index.close();
    // Written beside the path and renamed into place: an export that fails leaves what was there.
    written = await writeTraceExport(null, format, out, source.path);
  } else {
    const trace = await readTraceStreaming(source.path);
    counted = { steps: trace.steps.length, ...(trace.error ? { error: trace.error } : {}) };
    written = await writeTraceExport(trace, format, out, source.path);
  }
  const cut = counted.error ? ` (the steps before bad line ${counted.error.line})` : '';
  ctx.reply({
    type: 'progress',
    task: 'export',
    done: 1,
    total: 1,
    message: `exported ${counted.steps} steps${cut} as ${format} to ${written.join(', ')}`,
  });
}

/** The file the studio shows now: the opened trace, else the live run's recording. */
function currentSource(recordings: Recordings): { path: string } {
  if (recordings.opened) return { path: recordings.opened.path };
  if (recordings.run) return { path: recordings.run.path };
  throw new Refusal('there is no run or trace to use: start a run or open a trace first');
}

/** '; skipped bad lines 6, 9 (…)' for the lines a trace index skipped, or nothing. */
function skippedNote(skipped: readonly { line: number; message: string }[]): string {
  if (skipped.length === 0) return '';
  const lines = skipped.slice(0, 5).map((s) => s.line).join(', ') + (skipped.length > 5 ? ` and ${skipped.length - 5} more` : '');
  return `; skipped bad line${skipped.length === 1 ? '' : 's'} ${lines} (${skipped[0].message})`;
}
