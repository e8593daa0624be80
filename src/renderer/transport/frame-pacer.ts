// Paces frames from the socket worker to the page: one frame in flight until the page has taken
// it (acknowledged at its next animation frame), and at most one frame every `minIntervalMs`;
// frames arriving meanwhile merge into one — all their steps as digests except the newest, kept
// whole. A page that falls behind thus gets fewer, larger frames and deserialises one tree set per
// frame it can draw, instead of a queue of them; a page that keeps up still gets no more frames
// than anyone can follow, and every step reaches it (as a digest at least).
import type { EngineEvent } from '../../shared/messages.js';
import { digestStep, type DeliveredFrame } from '../studio/digest.js';

/**
 * Frames go to the page at most this often: 15 a second. Each frame costs the page a tree set to
 * deserialise, a Super-Tree to lay out and draw and a repaint; at batch 64 that is most of the
 * main thread's work while a run streams, and 30 redraws a second of 64 trees that change
 * completely every step show nothing 15 do not.
 */
export const FRAME_MIN_INTERVAL_MS = 66;

/** Without animation frames (a hidden page) frames are still taken, at this pace. */
export const HIDDEN_PAGE_ACK_MS = 250;

/**
 * Runs `ack` once: at the page's next animation frame, or after HIDDEN_PAGE_ACK_MS if none comes
 * (a hidden page, or no `requestAnimationFrame` at all). How the page tells a pacer it took a frame.
 */
export function ackAtNextFrame(ack: () => void): void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    ack();
  };
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(once);
  setTimeout(once, HIDDEN_PAGE_ACK_MS);
}

export interface FramePacerOptions {
  /** Least time between two frames posted (ms); 0 posts as soon as the page has taken the last one. */
  minIntervalMs?: number;
  /** Clock (ms); `performance.now` by default. */
  now?: () => number;
  /** Runs `fn` after `ms`; `setTimeout` by default. */
  schedule?: (fn: () => void, ms: number) => void;
}

function firstStep(frame: DeliveredFrame): number | null {
  const first = frame.digests?.[0]?.step ?? frame.steps[0]?.step;
  return first === undefined ? null : first;
}

/** `later` appended to `earlier`: every step once, in order, only the newest whole. */
export function mergeFrames(earlier: DeliveredFrame, later: DeliveredFrame): DeliveredFrame {
  const replacesWhole = later.steps.length > 0;
  const digests = [...(earlier.digests ?? []), ...(replacesWhole ? earlier.steps.map(digestStep) : []), ...(later.digests ?? [])];
  const merged: DeliveredFrame = { type: 'frame', steps: replacesWhole ? later.steps : earlier.steps };
  if (digests.length > 0) merged.digests = digests;
  const histograms = later.histograms ?? earlier.histograms;
  const metrics = later.metrics ?? earlier.metrics;
  if (histograms) merged.histograms = histograms;
  if (metrics) merged.metrics = metrics;
  return merged;
}

export class FramePacer {
  private inFlight = false;
  private pending: DeliveredFrame | null = null;
  private lastPostAt = Number.NEGATIVE_INFINITY;
  private timerSet = false;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  private readonly schedule: (fn: () => void, ms: number) => void;

  constructor(
    private readonly post: (event: EngineEvent) => void,
    options: FramePacerOptions = {},
  ) {
    this.minIntervalMs = options.minIntervalMs ?? FRAME_MIN_INTERVAL_MS;
    this.now = options.now ?? (() => performance.now());
    this.schedule = options.schedule ?? ((fn, ms) => void setTimeout(fn, ms));
  }

  /** One event from the host, decoded; anything but a frame goes at once, after any held frame. */
  push(event: EngineEvent): void {
    if (event.type !== 'frame') {
      this.sendPending();
      this.post(event);
      return;
    }
    // A frame from step 0 starts a new run or replay: what was held belongs to the old one.
    this.pending = this.pending === null || firstStep(event) === 0 ? event : mergeFrames(this.pending, event);
    this.trySend();
  }

  /** The page has taken the frame in flight. */
  ack(): void {
    this.inFlight = false;
    this.trySend();
  }

  /** Posts the held frame if the page has taken the last one and the interval has passed. */
  private trySend(): void {
    if (this.pending === null || this.inFlight) return;
    const wait = this.lastPostAt + this.minIntervalMs - this.now();
    if (wait <= 0) {
      this.sendPending();
      return;
    }
    if (this.timerSet) return;
    this.timerSet = true;
    this.schedule(() => {
      this.timerSet = false;
      this.trySend();
    }, wait);
  }

  private sendPending(): void {
    if (this.pending === null) return;
    const frame = this.pending;
    this.pending = null;
    this.inFlight = true;
    this.lastPostAt = this.now();
    this.post(frame);
  }
}
