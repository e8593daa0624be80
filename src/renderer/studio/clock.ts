// The clock the metrics read: this machine's wall clock, a modelled device (the command line's
// `--hw` presets: the engine's roofline clocks, reused as they are), or a measured profile (the
// forward curves `profile-hw` timed on some machine, read as `--hw curves --hw-profile FILE`
// reads them). A modelled clock prices each step from what it did (tokens verified, draft
// forwards, their rows and requests), so one run on this CPU reads as it would on the device;
// acceptance still comes from the real models.
import type { EventOf } from '../../shared/messages.js';
import { clockFromSpec, clockPrices, type ModelledClock, type StepWork } from '../../engine/cost/clock.js';
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

/** A measured profile's clock id: the prefix, then the profile's name. */
const PROFILE_CLOCK = 'profile:';

export const isProfileClock = (id: string): boolean => id.startsWith(PROFILE_CLOCK);

/** A short name for labels: "wall clock", "modelled h100:70b" or "measured profile: gpu-box". */
export function clockName(id: string): string {
  if (id === WALL_CLOCK) return 'wall clock';
  return isProfileClock(id) ? `measured profile: ${id.slice(PROFILE_CLOCK.length)}` : `modelled ${id}`;
}

const clocks = new Map<string, ModelledClock>();
function modelledClock(id: string): ModelledClock {
  let clock = clocks.get(id);
  if (!clock) {
    if (isProfileClock(id)) throw new Error(`the ${clockName(id)} is not loaded: choose its file again`);
    clocks.set(id, (clock = clockFromSpec(id)));
  }
  return clock;
}

/**
 * Makes a measured profile (the engine host's clock.profile answer) a clock: both forwards read
 * off its curves by their rows and requests, as the command line's `--hw curves` does. A profile
 * of the same name replaces the earlier one.
 */
export function defineProfileClock(profile: Omit<EventOf<'clock.profile'>, 'type'>): ClockOption {
  const id = `${PROFILE_CLOCK}${profile.name}`;
  const { target, draft, slots, context, longer, oneRequest, draftAfterTargetMs } = profile;
  clocks.set(id, clockFromSpec('curves', { target, draft, slots, context, longer, oneRequest, draftAfterTargetMs }));
  return { id, label: `measured profile: ${profile.name} (${profile.measuredOn})` };
}

/** What a modelled clock reads of a step, from its series point. */
function pointAsStep(p: StepPoint): StepWork {
  return { verifiedTokens: p.verifiedTokens, requests: { length: p.requests }, draftRows: p.draftRows, draftRequests: p.draftRequests, past: p.past };
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

/**
 * Tokens verified for about the price of one forward on a modelled clock (its device's knee, what
 * K_max defaults to there); null for the wall clock, whose knee is measured (hw.knee), not modelled.
 */
export function clockKnee(id: string): number | null {
  if (id === WALL_CLOCK) return null;
  try {
    return Math.max(1, Math.round(modelledClock(id).costs.knee));
  } catch {
    // A profile clock whose file was not loaded in this page: no knee to offer.
    return null;
  }
}

/**
 * What echo, dense and fixed are priced by when a run starts under this clock, as the command line
 * prices a run on a modelled clock (`--hw`): the device's knee, γ and draft forward, or a measured
 * profile's curves. Null on the wall clock (nothing measured says what a token costs here) and for
 * a profile whose file this page has not loaded.
 */
export function clockPricing(id: string): ReturnType<typeof clockPrices> | null {
  if (id === WALL_CLOCK) return null;
  try {
    return clockPrices(modelledClock(id).costs);
  } catch {
    return null;
  }
}

/** A step's modelled draft and verify time under a modelled clock, in ms (prefill is not modelled). */
export function stepSplit(p: StepPoint, id: string): { draftMs: number; verifyMs: number } {
  const step = modelledClock(id).stepMs(pointAsStep(p));
  return { draftMs: step.draftMs, verifyMs: step.verifyMs };
}
