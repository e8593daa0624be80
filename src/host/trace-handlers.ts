// Trace replay and export in the engine host: trace.open reads a trace file and sends its steps as
// frames, so the studio draws them exactly as it drew them live; trace.seek re-sends the steps up
// to a chosen one (the studio starts clean on a frame that begins at step 0, so replaying 0…N
// rebuilds every view — trees, text, charts, histograms — as it stood at step N); trace.export
// writes the current recording (the live run's, or the opened trace) in any export format.
import { existsSync, readFileSync } from 'node:fs';
import { computeRunMetrics } from '../engine/metrics/run-metrics.js';
import { checkWritableName, pathTaken, traceExportPaths, writeTraceExport } from '../engine/trace/export-files.js';
import { parseTrace, type TraceContents } from '../engine/trace/parse.js';
import { readTrace } from '../engine/trace/read.js';
import type { FrameEvent } from '../shared/messages.js';
import type { HandlerModule, HostContext } from './handler-context.js';
import type { Recordings } from './recordings.js';
import { Refusal } from '../engine/refusal.js';

/** Frames of a replay stay well under the transports' 16 MiB message cap. */
const REPLAY_FRAME_BYTES = 4 * 1024 * 1024;

/** The trace the studio shows now: the opened one, else the live run's recording read back. */
async function currentTrace(recordings: Recordings): Promise<{ path: string; trace: TraceContents }> {
  if (recordings.opened) return recordings.opened;
  if (recordings.run) return { path: recordings.run.path, trace: await readTrace(recordings.run.path) };
  throw new Refusal('there is no run or trace to use: start a run or open a trace first');
}

/**
 * Sends steps up to `upTo` as frames under the size cap, in order, the last one with the metrics
 * and histograms as they stood at that step. Returns the last step sent (-1 when none).
 */
function replayFrames(host: HostContext, trace: TraceContents, upTo: number, send: (frame: FrameEvent) => void = host.broadcast): number {
  const last = lastIndexAtOrBefore(trace, upTo);
  const steps = trace.steps.slice(0, last + 1);
  const atEnd = last === trace.steps.length - 1;
  const { metrics, histograms } = computeRunMetrics(steps, {
    policy: trace.header.config.policy,
    // The live run's own wall clock, when the replay shows the whole of it.
    ...(atEnd && trace.summary ? { wallMs: trace.summary.metrics.wallMs } : {}),
  });
  if (atEnd && trace.summary?.metrics.speedupVsAr !== undefined) metrics.speedupVsAr = trace.summary.metrics.speedupVsAr;
  host.flushFrames();
  let chunk: typeof steps = [];
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
  return steps.length === 0 ? -1 : steps[steps.length - 1].step;
}

/** Index of the last step numbered ≤ upTo (steps are in increasing order); -1 when none. */
function lastIndexAtOrBefore(trace: TraceContents, upTo: number): number {
  let lo = 0;
  let hi = trace.steps.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (trace.steps[mid].step <= upTo) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

export const traceHandlers: HandlerModule = ({ host, recordings }) => {
  // A client that connects later (a reloaded page, `trace replay` opened in a browser) gets the
  // steps so far, so it shows the same run or replay position as everyone else.
  host.onHello(async (ctx) => {
    if (recordings.opened) {
      replayFrames(host, recordings.opened.trace, recordings.replayedTo ?? Number.MAX_SAFE_INTEGER, ctx.reply);
    } else if (recordings.run && existsSync(recordings.run.path)) {
      // Flushed, every step in the file has been sent; read synchronously so that no step slips in
      // between (it would reach this client twice).
      host.flushFrames();
      const trace = parseTrace(readFileSync(recordings.run.path, 'utf8'));
      if (trace.steps.length > 0) replayFrames(host, trace, recordings.replayedTo ?? Number.MAX_SAFE_INTEGER, ctx.reply);
    }
  });
  return handlers(host, recordings);
};

const handlers = (host: HostContext, recordings: Recordings): ReturnType<HandlerModule> => ({
  async 'trace.open'({ path }, ctx) {
    if (recordings.run?.live) throw new Refusal('a run is in progress: stop it before opening a trace');
    let trace: TraceContents;
    let file: string;
    try {
      // Outside the chosen folders, or not there: one answer, before anything is read.
      file = host.files.readable(path);
      trace = await readTrace(file);
    } catch (err) {
      // A bad header: nothing in the file is usable.
      ctx.reply({ type: 'error', message: `cannot open trace ${path}: ${(err as Error).message}` });
      return;
    }
    recordings.opened = { path: file, trace };
    recordings.replayedTo = replayFrames(host, trace, Number.MAX_SAFE_INTEGER);
    if (trace.error) {
      ctx.reply({
        type: 'error',
        message: `${path}: ${trace.error.message}; replaying the ${trace.steps.length} steps before it`,
      });
    }
    host.setRunState('finished');
  },

  async 'trace.seek'({ step }) {
    if (recordings.run?.live) throw new Refusal('a run is in progress: seeking works on an opened trace or a finished run');
    const source = await currentTrace(recordings);
    recordings.replayedTo = replayFrames(host, source.trace, step);
  },

  async 'trace.export'({ path, format, overwrite }, ctx) {
    // A name no file system takes is the asker's mistake: one line, before any folder is looked at.
    checkWritableName(path);
    const source = await currentTrace(recordings);
    const out = host.files.writable(path);
    const taken = traceExportPaths(format, out).filter(pathTaken);
    if (taken.length > 0 && overwrite !== true) {
      throw new Refusal(`${taken[0]} exists; export with overwrite to replace it`);
    }
    // Written beside the path and renamed into place: an export that fails leaves what was there.
    const written = await writeTraceExport(source.trace, format, out, source.path);
    const cut = source.trace.error ? ` (the steps before bad line ${source.trace.error.line})` : '';
    ctx.reply({
      type: 'progress',
      task: 'export',
      done: 1,
      total: 1,
      message: `exported ${source.trace.steps.length} steps${cut} as ${format} to ${written.join(', ')}`,
    });
  },
});
