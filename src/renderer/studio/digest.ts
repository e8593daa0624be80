// A step without its trees: what the studio keeps of every step besides the newest one of a frame
// (series point, gate checks, text). Whoever delivers frames off the main thread can send the
// newest step whole and the others as digests, so the page deserialises one tree set per frame.
import type { GateCheck, StepEvent } from '../../shared/events.js';
import type { FrameEvent } from '../../shared/messages.js';
import { textSegment, type TextSegment } from './requestText.js';
import { stepPoint, type StepPoint } from './series.js';

export interface GateStep {
  step: number;
  requests: Array<{ requestId: string; gates: GateCheck[] }>;
}

export interface StepDigest {
  step: number;
  point: StepPoint;
  gates: GateStep;
  texts: Array<{ requestId: string; segment: TextSegment }>;
}

export function gateStep(step: StepEvent): GateStep {
  return { step: step.step, requests: step.requests.map((r) => ({ requestId: r.requestId, gates: r.gates })) };
}

export function digestStep(step: StepEvent): StepDigest {
  return {
    step: step.step,
    point: stepPoint(step),
    gates: gateStep(step),
    texts: step.requests.map((r) => ({ requestId: r.requestId, segment: textSegment(step.step, r) })),
  };
}

/** Splits a frame's steps into the newest, kept whole, and digests of the ones before it. */
export function thinFrame(steps: readonly StepEvent[]): { steps: StepEvent[]; digests: StepDigest[] } {
  if (steps.length <= 1) return { steps: steps.slice(), digests: [] };
  return { steps: [steps[steps.length - 1]], digests: steps.slice(0, -1).map(digestStep) };
}

/**
 * A frame as the transports hand it to the page: `steps` holds the newest step whole and
 * `digests` the frame's older steps (absent when the frame had one step). Still an EngineEvent,
 * so the Transport interface is the same for thinned and whole frames.
 */
export type DeliveredFrame = FrameEvent & { digests?: StepDigest[] };

/** Thins a validated frame for delivery; a frame of one step (or none) goes as it is. */
export function thinFrameEvent(frame: FrameEvent): DeliveredFrame {
  if (frame.steps.length <= 1) return frame;
  const { steps, digests } = thinFrame(frame.steps);
  return { ...frame, steps, digests };
}
