// The canonical trace writer: JSON Lines, one synchronous write per line straight to the file
// descriptor, so when the process dies the file holds every step that completed (at most the
// step in flight is lost) and a reader can replay it up to there.

import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import type { Knobs } from '../../shared/config.js';
import type { DepthHistogram, RunMetrics, StepEvent } from '../../shared/events.js';
import { TraceHeaderSchema, type TraceHeader, type TraceStep, type TraceSummary } from '../../shared/trace-schema.js';
import { RunMetricsAccumulator, type RunMetricsOptions } from '../metrics/run-metrics.js';

export interface TraceWriterOptions {
  /** fsync after every line: survives an OS crash or power loss too, at a cost per step. */
  fsync?: boolean;
}

export interface TraceCloseInput {
  reason: TraceSummary['reason'];
  message?: string;
  metrics: RunMetrics;
  histograms: DepthHistogram[];
  endedAt?: Date;
}

// JSON has no NaN, ±Infinity or array holes (stringify writes null), which would break the file
// on read: refuse them at write time, where the engine bug that made them can still be found.
function finiteOnly(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new Error(`trace writer: field '${key}' is ${value}; trace numbers must be finite`);
  }
  if (value === undefined && Array.isArray(this)) {
    throw new Error(`trace writer: array element ${key} is missing; trace arrays must be dense`);
  }
  return value;
}

export class TraceWriter {
  private fd: number | null;
  private lastStep = -1;

  private constructor(
    readonly path: string,
    fd: number,
    private readonly options: TraceWriterOptions,
  ) {
    this.fd = fd;
  }

  /** Create (or overwrite) path and write the header line. The header is validated first. */
  static open(path: string, header: TraceHeader, options: TraceWriterOptions = {}): TraceWriter {
    const checked = TraceHeaderSchema.safeParse(header);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new Error(`trace header is invalid at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
    }
    const writer = new TraceWriter(path, openSync(path, 'w'), options);
    writer.writeLine(checked.data);
    return writer;
  }

  get closed(): boolean {
    return this.fd === null;
  }

  writeStep(step: StepEvent | TraceStep): void {
    if (step.step <= this.lastStep) throw new Error(`trace writer: step ${step.step} written after step ${this.lastStep}`);
    this.writeLine(step);
    this.lastStep = step.step;
  }

  /** Record knobs the studio changed; they apply from step `fromStep` on. */
  writeKnobs(fromStep: number, knobs: Knobs): void {
    this.writeLine({ type: 'knobs', step: fromStep, knobs });
  }

  /** Write the summary line and close the file. */
  close(input: TraceCloseInput): void {
    const summary: TraceSummary = {
      type: 'summary',
      endedAt: (input.endedAt ?? new Date()).toISOString(),
      reason: input.reason,
      ...(input.message !== undefined ? { message: input.message } : {}),
      metrics: input.metrics,
      histograms: input.histograms,
    };
    this.writeLine(summary);
    this.release();
  }

  /** Close without a summary (the file then reads as a run that did not end cleanly). */
  abandon(): void {
    this.release();
  }

  private writeLine(record: unknown): void {
    if (this.fd === null) throw new Error(`trace writer: ${this.path} is already closed`);
    const bytes = Buffer.from(JSON.stringify(record, finiteOnly) + '\n', 'utf8');
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset, bytes.length - offset);
    if (this.options.fsync) fsyncSync(this.fd);
  }

  private release(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * What the runner holds for `run --trace FILE`: each step goes to the file and into the metrics,
 * and finish() writes the summary from the same accumulator the live view reads.
 */
export class TraceRecorder {
  readonly metrics: RunMetricsAccumulator;
  private readonly writer: TraceWriter;

  constructor(path: string, header: TraceHeader, options: TraceWriterOptions & Partial<RunMetricsOptions> = {}) {
    this.writer = TraceWriter.open(path, header, options);
    this.metrics = new RunMetricsAccumulator({ ...options, policy: options.policy ?? header.config.policy });
  }

  step(event: StepEvent | TraceStep): void {
    this.writer.writeStep(event);
    this.metrics.addStep(event);
  }

  knobs(fromStep: number, knobs: Knobs): void {
    this.writer.writeKnobs(fromStep, knobs);
  }

  /** Summary line with the run's metrics; wallMs defaults to the end of the last step. */
  finish(reason: TraceSummary['reason'], options: { wallMs?: number; message?: string; speedupVsAr?: number } = {}): RunMetrics {
    const metrics = this.metrics.metrics(options.wallMs);
    if (options.speedupVsAr !== undefined) metrics.speedupVsAr = options.speedupVsAr;
    this.writer.close({ reason, message: options.message, metrics, histograms: this.metrics.histograms() });
    return metrics;
  }
}
