// Modelled clocks: the time a step *would* take on other hardware, computed from what the step
// did (tokens verified, draft forwards and their sizes). Acceptance always comes from the real
// models; only the clock is simulated. `run --clock modelled --hw SPEC` reports it next to wall
// time.
import type { PolicySettings, PriceCurves } from '../../shared/config.js';
import type { StepEvent } from '../../shared/events.js';
import { fitKnee, tverMs, type TimedPoint, type TverModel } from './knee.js';
import { hardwareByName, modelByName, rooflineForward, rooflineKnee, type Hardware, type ModelSize } from './roofline.js';

export interface ModelledStep {
  draftMs: number;
  verifyMs: number;
  totalMs: number;
}

/**
 * What a modelled clock reads of a step: the tokens verified, the requests in it (their count; the
 * requests themselves only for old traces without draftRows) and its draft forwards. A StepEvent
 * is one; so is a point of the studio's series, which keeps only these.
 */
export interface StepWork {
  verifiedTokens: number;
  requests: StepEvent['requests'] | { length: number };
  draftRows?: number[];
  draftRequests?: number[];
  /** The step's longest committed past, in rows (StepEvent.past); absent in older traces. */
  past?: number;
}

export interface ModelledClock {
  /** What the clock models, for tables and trace headers. */
  readonly label: string;
  /** What the modelled device charges, in the terms the policies' cost rules read. */
  readonly costs: DeviceCosts;
  stepMs(step: StepWork): ModelledStep;
}

/**
 * A device's prices as a policy reads them, each relative to the device's own one-token target
 * forward (T_ar): a run timed on a modelled device must budget and price by that device, not by
 * the machine it runs on, or its steps are chosen for one machine and timed for another.
 */
export interface DeviceCosts {
  /** Tokens verified for about the price of one forward: K_max's default (suggestKmax). */
  knee: number;
  /** Each verified token past the knee, as a share of T_ar (the T_ver formula's γ). */
  gamma: number;
  /** One draft forward of one row, as a share of T_ar: the draft price (`--draft-cost`). */
  draftForward: number;
  /** Each further row in a draft forward, as a share of T_ar (VerifyCost.draftRow). */
  draftRow: number;
  /**
   * The forward times themselves, where the clock reads measured curves: a policy priced by them
   * pays what this clock charges, token by token, instead of the knee fit's flat start.
   */
  curves?: PriceCurves;
}

/**
 * What a gated policy is priced by on a clock (the run config's `verifyCost` and `draftCost`):
 * its knee, γ and per-row draft cost (`--verify-cost`'s KNEE:GAMMA:DRAFT_ROW), the measured curves
 * where the clock reads them, and its one-row draft forward. A token is then granted only when its
 * expected acceptance pays for its share of the target forward and of the draft forwards there.
 */
export function clockPrices(costs: DeviceCosts): { verifyCost: NonNullable<PolicySettings['verifyCost']>; draftCost: number } {
  const fit = { knee: Math.max(0, Math.round(costs.knee)), gamma: Number(costs.gamma.toPrecision(3)), draftRow: costs.draftRow };
  return { verifyCost: costs.curves ? { ...fit, curves: costs.curves } : fit, draftCost: costs.draftForward };
}

/** Shares rounded to what a flag would carry (three significant digits). */
function share(x: number): number {
  return Number.isFinite(x) && x > 0 ? Number(x.toPrecision(3)) : 0;
}

/**
 * An EAGLE-style draft head is about one decoder layer plus the LM head: a few percent of the
 * target. Used for draft forwards when no separate draft size is given.
 */
export const DEFAULT_DRAFT_FRACTION = 0.05;

/**
 * Rows in each draft forward of a step: as the engine recorded them (catch-up tokens included),
 * or, in traces from before it did, per depth d the distinct parents of depth-d nodes.
 */
export function draftForwardSizes(event: StepWork): number[] {
  if (event.draftRows) return event.draftRows;
  if (!Array.isArray(event.requests)) return [];
  const perDepth: Set<string>[] = [];
  for (const r of event.requests as StepEvent['requests']) {
    for (const node of r.nodes) {
      if (node.depth < 0) continue;
      (perDepth[node.depth] ??= new Set()).add(`${r.requestId}\u0000${node.parent}`);
    }
  }
  return Array.from(perDepth, (s) => s?.size ?? 0).filter((n) => n > 0);
}

/**
 * Each draft forward of a step: its rows, and the requests they belong to when the engine
 * recorded them (else null).
 */
export function draftForwards(event: StepWork): { rows: number; requests: number | null }[] {
  const sizes = draftForwardSizes(event);
  const requests = event.draftRequests && event.draftRequests.length === sizes.length ? event.draftRequests : null;
  return sizes.map((rows, i) => ({ rows, requests: requests ? requests[i] : null }));
}

/**
 * What a draft forward costs on a T_ver clock: a share of T_ar whatever its rows (an EAGLE-style
 * head, the paper's setting), or the draft's measured curve (a separate draft model, whose forward
 * grows with the requests in it: on a CPU a batch-64 root layer costs several one-request ones).
 */
export type DraftForwardPrice = number | readonly TimedPoint[] | SpreadCurve;

/** A curve measured with n rows spread over min(n, spread) requests (what `profile-hw --slots` measures). */
export interface SpreadCurve {
  points: readonly TimedPoint[];
  spread: number;
}

/**
 * A forward's time read off a measured curve: linear between measured sizes, the smallest's
 * below them, the last segment's slope past them. Made non-decreasing first: a forward never gets
 * cheaper with more rows, but medians on a busy machine can dip.
 */
export function measuredCurve(points: readonly TimedPoint[]): (tokens: number) => number {
  const pts = points.filter((p) => p.tokens > 0 && p.ms > 0).sort((a, b) => a.tokens - b.tokens);
  if (pts.length === 0) throw new Error('a measured curve needs at least one point');
  const tokens = pts.map((p) => p.tokens);
  const ms: number[] = [];
  for (const p of pts) ms.push(Math.max(p.ms, ms[ms.length - 1] ?? 0));
  const last = pts.length - 1;
  const tailSlope = last > 0 ? (ms[last] - ms[last - 1]) / (tokens[last] - tokens[last - 1]) : 0;
  return (n) => {
    if (n <= tokens[0]) return ms[0];
    if (n >= tokens[last]) return ms[last] + tailSlope * (n - tokens[last]);
    let i = 1;
    while (tokens[i] < n) i++;
    const f = (n - tokens[i - 1]) / (tokens[i] - tokens[i - 1]);
    return ms[i - 1] + f * (ms[i] - ms[i - 1]);
  };
}

/**
 * A forward of `rows` rows over `requests` requests, read off a curve measured with n rows spread
 * over min(n, spread) requests (one row per request up to `spread`, then more rows per request).
 * The curve's first part is what `requests` requests of one row each cost; each row beyond them
 * adds the curve's cost per row with the requests held at `spread`. So a forward of 64 rows over
 * 14 requests costs what 14 requests cost plus 50 rows, not what 64 requests cost: a separate
 * draft's forward grows with the requests in it, because attention reads each one's past.
 * Without a request count (older traces), or a spread, it is read as the curve was measured, at
 * `rows`. A forward of one request is read off `oneRequest`, the curve timed with every row in one
 * request, where the profile has it: one request's tree is not the spread curve's shape.
 */
export function spreadCurve(points: readonly TimedPoint[], spread?: number, oneRequest?: readonly TimedPoint[]): (rows: number, requests: number | null) => number {
  const curve = measuredCurve(points);
  const single = oneRequest ? measuredCurve(oneRequest) : null;
  // Cost per row with the requests held at `spread`: from the spread to the largest size measured.
  const largest = Math.max(...points.map((p) => p.tokens));
  const perRow = spread !== undefined && largest > spread ? (curve(largest) - curve(spread)) / (largest - spread) : null;
  return (rows, requests) => {
    if (requests === 1 && single) return single(rows);
    if (requests === null || perRow === null || spread === undefined) return curve(rows);
    const held = Math.max(1, Math.min(requests, rows, spread));
    return curve(held) + perRow * (rows - held);
  };
}

/**
 * A step's draft forwards, each priced by `forwardMs`, plus what the i-th costs beyond that when
 * it runs after the target's forward and finds the draft's weights cold (`afterTargetMs[i]`).
 */
function stepDraftMs(event: StepWork, forwardMs: (rows: number, requests: number | null) => number, afterTargetMs: readonly number[]): number {
  let ms = 0;
  for (const [i, f] of draftForwards(event).entries()) ms += forwardMs(f.rows, f.requests) + (afterTargetMs[i] ?? 0);
  return ms;
}

/** How a clock's label says it charges a step's first draft forwards beyond their warm time. */
function afterTargetLabel(extraMs: readonly number[] = []): string {
  const total = extraMs.reduce((a, b) => a + b, 0);
  return total > 0 ? `; a step's draft forwards after the target's +${extraMs.map((ms) => ms.toFixed(2)).join(', +')} ms` : '';
}

/** The paper's T_ver formula for verification; draft forwards priced by `draft`. */
export function tverClock(model: TverModel, draft: DraftForwardPrice = DEFAULT_DRAFT_FRACTION, label = 'T_ver model', draftAfterTargetMs: readonly number[] = []): ModelledClock {
  let draftForwardMs: (rows: number, requests: number | null) => number;
  let draftLabel: string;
  if (typeof draft === 'number') {
    draftForwardMs = () => draft * model.tArMs;
    draftLabel = `draft forward ${draft} × T_ar`;
  } else {
    const { points, spread } = 'spread' in draft ? draft : { points: draft, spread: undefined };
    draftForwardMs = spreadCurve(points, spread);
    const rows = `${Math.min(...points.map((p) => p.tokens))}–${Math.max(...points.map((p) => p.tokens))} rows`;
    draftLabel = `draft forward from its measured curve (${rows}${spread === undefined ? '' : ` over up to ${spread} requests`})`;
  }
  const perRow = (draftForwardMs(2 * model.kmax, 1) - draftForwardMs(model.kmax, 1)) / model.kmax;
  return {
    label: `${label} (T_ar ${model.tArMs.toFixed(2)} ms, γ ${model.gamma.toPrecision(3)}, knee ${model.kmax}; ${draftLabel}${afterTargetLabel(draftAfterTargetMs)})`,
    costs: { knee: model.kmax, gamma: model.gamma, draftForward: share(draftForwardMs(1, 1) / model.tArMs), draftRow: share(perRow / model.tArMs) },
    stepMs(event) {
      const verifyMs = tverMs(model, event.verifiedTokens);
      const draftMs = stepDraftMs(event, draftForwardMs, draftAfterTargetMs);
      return { draftMs, verifyMs, totalMs: draftMs + verifyMs };
    },
  };
}

/** The curves `profile-hw` measures (its JSON file holds both). */
export interface MeasuredCurves {
  target: readonly TimedPoint[];
  draft: readonly TimedPoint[];
  /** The requests rows were spread over (`profile-hw --slots`): n rows over min(n, slots) requests. */
  slots?: number;
  /** Committed rows per request when timed (`profile-hw --context`). */
  context?: number;
  /** The same forwards with every row in one request, at `context` (`profile-hw` times them; absent: read off the spread curves). */
  oneRequest?: OneRequestCurves;
  /** The same forwards timed at longer pasts, shortest first (`profile-hw --context 64,160`). */
  longer?: readonly { context: number; target: readonly TimedPoint[]; draft: readonly TimedPoint[]; oneRequest?: OneRequestCurves }[];
  /** What a step's first draft forwards cost beyond the draft curve's warm time, in order (profile-hw; absent: not timed, none). */
  draftAfterTargetMs?: readonly number[];
}

/** Both forwards timed with every row in one request. */
export interface OneRequestCurves {
  target: readonly TimedPoint[];
  draft: readonly TimedPoint[];
}

/** A forward's milliseconds by its rows and its requests (spreadCurve). */
export type ForwardMs = (rows: number, requests: number | null) => number;

/**
 * Both forwards at a step's past: the curves timed at the contexts around it, read as spreadCurve
 * reads one, and interpolated linearly in the past (attention reads every row of it); past the
 * longest context timed, the last two contexts' slope goes on; below the shortest, or without a
 * past (older traces), the shortest's times. A forward gathers every request's past up to the
 * batch's longest, so on the demo pair an 8-row draft forward takes 0.53 ms at 64 rows of past
 * and 0.86 at 160, and a 16-token target forward 21 and 35 ms: one context prices every step of
 * a run as if its requests never grew.
 */
export function contextCurves(curves: Omit<MeasuredCurves, 'slots'>, spread?: number): (past: number | undefined) => { target: ForwardMs; draft: ForwardMs } {
  const levels = [{ context: curves.context ?? 0, target: curves.target, draft: curves.draft, oneRequest: curves.oneRequest }, ...(curves.longer ?? [])]
    .sort((a, b) => a.context - b.context)
    .map((l) => ({ context: l.context, target: spreadCurve(l.target, spread, l.oneRequest?.target), draft: spreadCurve(l.draft, spread, l.oneRequest?.draft) }));
  const base = levels[0];
  return (past) => {
    if (levels.length === 1 || past === undefined || past <= base.context) return base;
    let upper = levels.findIndex((l) => l.context >= past);
    if (upper < 0) upper = levels.length - 1;
    const [a, b] = [levels[upper - 1], levels[upper]];
    const f = (past - a.context) / (b.context - a.context);
    // Never below the shorter context's time: medians on a busy machine can cross.
    const between = (x: ForwardMs, y: ForwardMs): ForwardMs => (rows, requests) => {
      const lo = x(rows, requests);
      return Math.max(lo, lo + f * (y(rows, requests) - lo));
    };
    return { target: between(a.target, b.target), draft: between(a.draft, b.draft) };
  };
}

/**
 * Both forwards read off measured curves, with no formula in between: what this machine would
 * take, when the curves were measured with the requests spread as the run packs them.
 */
export function curvesClock(curves: MeasuredCurves, label = 'measured curves', spread?: number): ModelledClock {
  // Measured with rows spread over up to `spread` requests: every forward priced by its rows and
  // its requests (the verification holds every request of the step); without it, by its rows.
  // Timed at several contexts, a step's forwards are read at its own past.
  const atPast = contextCurves(curves, spread);
  const { target: targetMs, draft: draftMs } = atPast(undefined);
  // Too few sizes for a knee: the largest measured is all the curve says is nearly free.
  const sizes = curves.target.filter((p) => p.tokens > 0 && p.ms > 0);
  const fit = sizes.length >= 3 ? fitKnee(sizes) : { kmax: Math.max(1, ...sizes.map((p) => p.tokens)), gamma: 0 };
  const tAr = targetMs(1, 1);
  const afterTarget = curves.draftAfterTargetMs ?? [];
  return {
    label,
    costs: {
      knee: fit.kmax,
      gamma: fit.gamma,
      draftForward: share(draftMs(1, 1) / tAr),
      draftRow: share((draftMs(2 * fit.kmax, 1) - draftMs(fit.kmax, 1)) / fit.kmax / tAr),
      curves: {
        target: [...curves.target],
        draft: [...curves.draft],
        ...(spread !== undefined ? { spread } : {}),
        ...(curves.context !== undefined ? { context: curves.context } : {}),
        ...(curves.oneRequest ? { oneRequest: copyOneRequest(curves.oneRequest) } : {}),
        ...(curves.longer?.length
          ? { longer: curves.longer.map((l) => ({ context: l.context, target: [...l.target], draft: [...l.draft], ...(l.oneRequest ? { oneRequest: copyOneRequest(l.oneRequest) } : {}) })) }
          : {}),
        ...(afterTarget.length ? { draftAfterTargetMs: [...afterTarget] } : {}),
      },
    },
    stepMs(event) {
      const at = atPast(event.past);
      const verifyMs = at.target(Math.max(1, event.verifiedTokens), event.requests.length);
      const draft = stepDraftMs(event, at.draft, afterTarget);
      return { draftMs: draft, verifyMs, totalMs: draft + verifyMs };
    },
  };
}

function copyOneRequest(curves: OneRequestCurves): { target: TimedPoint[]; draft: TimedPoint[] } {
  return { target: [...curves.target], draft: [...curves.draft] };
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
  const tAr = rooflineForward(hw, target, 1).ms;
  const knee = rooflineKnee(hw, target);
  const forward = (model: ModelSize, tokens: number) => rooflineForward(hw, model, tokens).ms;
  return {
    label: `roofline ${hw.name} × ${target.name}`,
    costs: {
      knee,
      gamma: (forward(target, 2 * knee) - forward(target, knee)) / knee / tAr,
      draftForward: share(forward(draft, 1) / tAr),
      draftRow: share((forward(draft, 2 * knee) - forward(draft, knee)) / knee / tAr),
    },
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
 * `--hw` values: `HARDWARE:MODEL` (e.g. `h100:70b`), `HARDWARE` alone (an 8B model), `measured`
 * with the curves of `profile-hw`: the target's fitted to the paper's T_ver formula, each draft
 * forward read off the draft's own curve; or `curves`: both forwards read off the profile's
 * curves, by their rows and their requests, no formula (this machine without its wall clock's noise).
 */
export function clockFromSpec(spec: string, measured?: MeasuredCurves): ModelledClock {
  if (spec === 'curves') {
    if (!measured) throw new Error('--hw curves needs a hardware profile from `echo-studio profile-hw` (--hw-profile FILE)');
    const spread = measured.slots === undefined ? '' : ` over up to ${measured.slots} requests`;
    const contexts = [measured.context ?? 0, ...(measured.longer ?? []).map((l) => l.context)];
    const past = contexts.length > 1 ? `, read at each step's past between ${contexts.join(', ')} rows` : '';
    const single = measured.oneRequest ? "; one request's forwards off its own curves" : '';
    return curvesClock(measured, `measured curves (target and draft${spread}${past}${single}${afterTargetLabel(measured.draftAfterTargetMs)})`, measured.slots);
  }
  if (spec === 'measured') {
    if (!measured) throw new Error('--hw measured needs a hardware profile from `echo-studio profile-hw` (--hw-profile FILE)');
    const draft = measured.slots === undefined ? measured.draft : { points: measured.draft, spread: measured.slots };
    return tverClock(fitKnee(measured.target), draft, 'measured T_ver fit', measured.draftAfterTargetMs);
  }
  const [hwName, modelName = '8b', extra] = spec.split(':');
  if (extra !== undefined) throw new Error(`--hw "${spec}": expected HARDWARE or HARDWARE:MODEL, e.g. h100:70b`);
  return rooflineClock(hardwareByName(hwName), modelByName(modelName));
}

