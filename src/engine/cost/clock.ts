// Modelled clocks: the time a step *would* take on other hardware, computed from what the step
// did (tokens verified, draft forwards and their sizes). Acceptance always comes from the real
// models; only the clock is simulated. `run --clock modelled --hw SPEC` reports it next to wall
// time.
import type { StepEvent } from '../../shared/events';
import { fitKnee, tverMs, type TimedPoint, type TverModel } from './knee';
import { hardwareByName, modelByName, rooflineForward, type Hardware, type ModelSize } from './roofline';

export interface ModelledStep {
  draftMs: number;
  verifyMs: number;
  totalMs: number;
}

export interface ModelledClock {
  /** What the clock models, for tables and trace headers. */
  readonly label: string;
  stepMs(event: StepEvent): ModelledStep;
}

/**
 * An EAGLE-style draft head is about one decoder layer plus the LM head: a few percent of the
 * target. Used for draft forwards when no separate draft size is given.
 */
export const DEFAULT_DRAFT_FRACTION = 0.05;

/** Tokens in each draft forward of a step: per depth d, the distinct parents of depth-d nodes. */
export function draftForwardSizes(event: StepEvent): number[] {
  const perDepth: Set<string>[] = [];
  for (const r of event.requests) {
    for (const node of r.nodes) {
      if (node.depth < 0) continue;
      (perDepth[node.depth] ??= new Set()).add(`${r.requestId}\u0000${node.parent}`);
    }
  }
  return Array.from(perDepth, (s) => s?.size ?? 0).filter((n) => n > 0);
}

/** The paper's T_ver formula; each draft forward costs draftFraction · T_ar. */
export function tverClock(model: TverModel, draftFraction = DEFAULT_DRAFT_FRACTION, label = 'T_ver model'): ModelledClock {
  return {
    label: `${label} (T_ar ${model.tArMs.toFixed(2)} ms, γ ${model.gamma.toPrecision(3)}, knee ${model.kmax})`,
    stepMs(event) {
      const verifyMs = tverMs(model, event.verifiedTokens);
      const draftMs = draftForwardSizes(event).length * draftFraction * model.tArMs;
      return { draftMs, verifyMs, totalMs: draftMs + verifyMs };
    },
  };
}

/** Roofline of named hardware and model size; the draft is `draftFraction` of the target. */
export function rooflineClock(
  hw: Hardware,
  target: ModelSize,
  options: { draftFraction?: number; contextTokensPerRequest?: number } = {},
): ModelledClock {
  const fraction = options.draftFraction ?? DEFAULT_DRAFT_FRACTION;
  const draft: ModelSize = {
    name: `draft (${fraction} × ${target.name})`,
    totalParams: target.activeParams * fraction,
    activeParams: target.activeParams * fraction,
    bytesPerParam: target.bytesPerParam,
    kvBytesPerToken: target.kvBytesPerToken * fraction,
  };
  const context = options.contextTokensPerRequest ?? 0;
  return {
    label: `roofline ${hw.name} × ${target.name}`,
    stepMs(event) {
      const kv = context * event.requests.length;
      const verifyMs = rooflineForward(hw, target, Math.max(1, event.verifiedTokens), kv).ms;
      let draftMs = 0;
      for (const n of draftForwardSizes(event)) draftMs += rooflineForward(hw, draft, n, kv).ms;
      return { draftMs, verifyMs, totalMs: draftMs + verifyMs };
    },
  };
}

/**
 * `--hw` values: `HARDWARE:MODEL` (e.g. `h100:70b`), `HARDWARE` alone (an 8B model), or
 * `measured` with the measured curve of `profile-hw` (fitted to the paper's T_ver formula).
 */
export function clockFromSpec(spec: string, measured?: readonly TimedPoint[]): ModelledClock {
  if (spec === 'measured') {
    if (!measured) throw new Error('--hw measured needs a hardware profile from `echo-studio profile-hw` (--hw-profile FILE)');
    return tverClock(fitKnee(measured), DEFAULT_DRAFT_FRACTION, 'measured T_ver fit');
  }
  const [hwName, modelName = '8b', extra] = spec.split(':');
  if (extra !== undefined) throw new Error(`--hw "${spec}": expected HARDWARE or HARDWARE:MODEL, e.g. h100:70b`);
  return rooflineClock(hardwareByName(hwName), modelByName(modelName));
}

/** Sums a modelled clock over a run's steps. */
export function modelledRunMs(clock: ModelledClock, events: Iterable<StepEvent>): ModelledStep {
  const total = { draftMs: 0, verifyMs: 0, totalMs: 0 };
  for (const e of events) {
    const s = clock.stepMs(e);
    total.draftMs += s.draftMs;
    total.verifyMs += s.verifyMs;
    total.totalMs += s.totalMs;
  }
  return total;
}
