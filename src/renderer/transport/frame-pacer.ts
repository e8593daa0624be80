// Paces frames from the socket worker to the page: one frame in flight until the page has taken
// it (acknowledged at its next animation frame); frames arriving meanwhile merge into one — all
// their steps as digests except the newest, kept whole. A page that falls behind thus gets fewer,
// larger frames and deserialises one tree set per frame it can draw, instead of a queue of them.
import type { EngineEvent } from '../../shared/messages.js';
import { digestStep, type DeliveredFrame } from '../studio/digest.js';

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

  constructor(private readonly post: (event: EngineEvent) => void) {}

  /** One event from the host, decoded; anything but a frame goes at once, after any held frame. */
  push(event: EngineEvent): void {
    if (event.type !== 'frame') {
      this.sendPending();
      this.post(event);
      return;
    }
    if (!this.inFlight) {
      this.inFlight = true;
      this.post(event);
      return;
    }
    // A frame from step 0 starts a new run or replay: what was held belongs to the old one.
    this.pending = this.pending === null || firstStep(event) === 0 ? event : mergeFrames(this.pending, event);
  }

  /** The page has taken the frame in flight. */
  ack(): void {
    this.inFlight = false;
    this.sendPending();
  }

  private sendPending(): void {
    if (this.pending === null) return;
    const frame = this.pending;
    this.pending = null;
    this.inFlight = true;
    this.post(frame);
  }
}
