// Batches step events into frames so the UI gets at most MAX_FRAMES_PER_SECOND messages, however
// fast the engine steps. Every step is delivered exactly once, in order; histograms and metrics
// are snapshots, so only the latest one pending goes out.
import type { DepthHistogram, RunMetrics, StepEvent } from '../shared/events.js';
import { MAX_FRAMES_PER_SECOND, type FrameEvent } from '../shared/messages.js';

/** The clock and timer the coalescer runs on; tests pass a manual one. */
export interface FrameClock {
  now(): number;
  schedule(callback: () => void, delayMs: number): { cancel(): void };
}

export const systemClock: FrameClock = {
  now: () => performance.now(),
  schedule(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
};

export interface FrameExtras {
  histograms?: DepthHistogram[];
  metrics?: RunMetrics;
}

export class FrameCoalescer {
  private readonly intervalMs: number;
  private steps: StepEvent[] = [];
  private histograms: DepthHistogram[] | undefined;
  private metrics: RunMetrics | undefined;
  private lastSentAt = -Infinity;
  private pending: { cancel(): void } | null = null;

  constructor(
    private readonly send: (frame: FrameEvent) => void,
    private readonly clock: FrameClock = systemClock,
    framesPerSecond: number = MAX_FRAMES_PER_SECOND,
  ) {
    if (!(framesPerSecond > 0)) throw new Error(`frames per second must be positive, got ${framesPerSecond}`);
    this.intervalMs = 1000 / framesPerSecond;
  }

  /** Queues one step (and optionally fresh snapshots); sends now if a frame is due. */
  push(step: StepEvent | null, extras: FrameExtras = {}): void {
    if (step) this.steps.push(step);
    if (extras.histograms) this.histograms = extras.histograms;
    if (extras.metrics) this.metrics = extras.metrics;
    if (this.pending) return;
    const wait = this.lastSentAt + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.flush();
    } else {
      this.pending = this.clock.schedule(() => {
        this.pending = null;
        this.flush();
      }, wait);
    }
  }

  /** Sends whatever is queued at once, e.g. before a run-state change so order is kept. */
  flush(): void {
    if (this.pending) {
      this.pending.cancel();
      this.pending = null;
    }
    if (this.steps.length === 0 && !this.histograms && !this.metrics) return;
    const frame: FrameEvent = { type: 'frame', steps: this.steps };
    if (this.histograms) frame.histograms = this.histograms;
    if (this.metrics) frame.metrics = this.metrics;
    this.steps = [];
    this.histograms = undefined;
    this.metrics = undefined;
    this.lastSentAt = this.clock.now();
    this.send(frame);
  }

  /** Drops anything queued without sending (the host is shutting down). */
  dispose(): void {
    this.pending?.cancel();
    this.pending = null;
    this.steps = [];
    this.histograms = undefined;
    this.metrics = undefined;
  }
}
