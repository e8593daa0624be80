// The clock the metrics read: this machine's wall clock, or a modelled device (the command line's
// `--hw` presets: the engine's roofline clocks, reused as they are). A modelled clock prices each
// step from what it did (tokens verified, draft forwards and their rows), so one run on this CPU
// reads as it would on the device; acceptance still comes from the real models.
import type { StepEvent } from '../../shared/events.js';
import { clockFromSpec, type ModelledClock } from '../../engine/cost/clock.js';
import { HARDWARE, MODEL_SIZES } from '../../engine/cost/roofline.js';
import type { StepPoint } from './series.js';

export const WALL_CLOCK = 'wall';

export interface ClockOption {
  /** 'wall', or a `--hw` spec such as "h100:70b". */
  id: string;
  label: string;
}

export const CLOCK_OPTIONS: readonly ClockOption[] = [
  { id: WALL_CLOCK, label: "this machine's wall clock" },
  ...Object.keys(HARDWARE).flatMap((hw) =>
    Object.keys(MODEL_SIZES).map((model) => ({ id: `${hw}:${model}`, label: `modelled: ${HARDWARE[hw].name} serving ${MODEL_SIZES[model].name}` })),
  ),
];

/** A short name for labels: "wall clock" or "modelled h100:70b". */
export function clockName(id: string): string {
  return id === WALL_CLOCK ? 'wall clock' : `modelled ${id}`;
}

const clocks = new Map<string, ModelledClock>();
function modelledClock(id: string): ModelledClock {
  let clock = clocks.get(id);
  if (!clock) clocks.set(id, (clock = clockFromSpec(id)));
  return clock;
}

/** What a modelled clock reads of a step, from its series point. */
function pointAsStep(p: StepPoint): StepEvent {
  return { verifiedTokens: p.verifiedTokens, requests: { length: p.requests }, draftRows: p.draftRows, draftRequests: p.draftRequests } as unknown as StepEvent;
}

/** A step's time under the clock, in ms (wall: as measured, prefill included; modelled: draft + verify). */
export function stepTimer(id: string): (p: StepPoint) => number {
  if (id === WALL_CLOCK) return (p) => p.totalMs;
  const clock = modelledClock(id);
  return (p) => clock.stepMs(pointAsStep(p)).totalMs;
}

/** Generated tokens per second over the points, under the clock. */
export function throughputOf(points: readonly StepPoint[], id: string): number {
  const time = stepTimer(id);
  let tokens = 0;
  let ms = 0;
  for (const p of points) {
    tokens += p.emitted;
    ms += time(p);
  }
  return ms > 0 ? (tokens * 1000) / ms : 0;
}
