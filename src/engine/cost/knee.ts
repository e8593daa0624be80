// The knee of a measured forward-time curve T(tokens): where verification stops being nearly
// free and its cost turns linear in the packed token count — the roofline's ridge, where the
// per-token (compute) part of a forward overtakes its fixed part. We take the linear asymptote
// b·K of the largest forwards and the cost of the smallest, T_1, and put the knee where they meet,
// K* = T_1 / b. In the paper's terms, T_ver(K) ≈ T_ar (1 + γ [K − K_max]^+) with T_ar = T_1,
// K_max = K*, γ = b / T_1 (continuous at the knee, and = b·K past it). The knee is the natural
// verification budget on this hardware.
//
// Why not fit the hinge directly: on CPUs (and with per-request attention overhead) the curve
// rises from the first token, so a least-squares hinge puts its knee at 1 token; the asymptote's
// crossing still lands where the design notes see it (~8–16 tokens for the 7M demo target).

export interface TimedPoint {
  /** Packed tokens in one forward. */
  tokens: number;
  /** Forward time, milliseconds (a median of repeats, ideally). */
  ms: number;
}

export interface TverModel {
  /** Time of a forward at or below the knee (≈ one autoregressive step). */
  tArMs: number;
  /** Relative cost of each token past the knee: T grows by T_ar·γ per token. */
  gamma: number;
  /** The knee: tokens verified at (nearly) the price of one. */
  kmax: number;
}

export interface KneeFit extends TverModel {
  /** Root-mean-square relative error of the fit over the points. */
  rmsRelativeError: number;
}

/** The paper's cost model: verification time of K packed tokens. */
export function tverMs(model: TverModel, tokens: number): number {
  return model.tArMs * (1 + model.gamma * Math.max(0, tokens - model.kmax));
}

/**
 * One drafted row's cost in units of the target's one-token forward: the draft's per-token slope
 * past its own knee, over the target's T_ar (the DRAFT_ROW of `run --verify-cost`).
 */
export function draftRowCost(target: KneeFit, draft: KneeFit): number {
  return (draft.gamma * draft.tArMs) / target.tArMs;
}

/**
 * Fits the knee. The slope b comes from a least-squares line through the forwards at or past
 * twice the current knee estimate (at least the largest third of the sizes measured), refined
 * twice; the knee is the largest measured size when the curve never turns up.
 */
export function fitKnee(points: readonly TimedPoint[]): KneeFit {
  const pts = points.filter((p) => p.tokens > 0 && p.ms > 0).sort((x, y) => x.tokens - y.tokens);
  if (pts.length < 3) throw new Error(`a knee needs at least 3 measured token counts, got ${pts.length}`);
  // The fixed cost: the cheapest of the smallest forwards (a busy machine makes single points jumpy;
  // a forward never gets cheaper with more tokens).
  const first = { tokens: pts[0].tokens, ms: Math.min(...pts.filter((p) => p.tokens <= 4 * pts[0].tokens).map((p) => p.ms)) };
  const largest = pts[pts.length - 1].tokens;
  let tail = pts.slice(Math.floor((2 * pts.length) / 3));
  if (tail.length < 2) tail = pts.slice(-2);
  let slope = lineSlope(tail);
  for (let round = 0; round < 2 && slope > 0; round++) {
    const knee = first.ms / slope;
    const past = pts.filter((p) => p.tokens >= 2 * knee);
    if (past.length < 3) break;
    slope = lineSlope(past);
  }
  const model: TverModel =
    slope > 0
      ? { tArMs: first.ms, gamma: slope / first.ms, kmax: Math.min(largest, Math.max(1, Math.round(first.ms / slope))) }
      : { tArMs: first.ms, gamma: 0, kmax: largest };
  let sq = 0;
  for (const p of pts) sq += ((tverMs(model, p.tokens) - p.ms) / p.ms) ** 2;
  return { ...model, rmsRelativeError: Math.sqrt(sq / pts.length) };
}

/** Least-squares slope of ms against tokens. */
function lineSlope(pts: readonly TimedPoint[]): number {
  const n = pts.length;
  const mx = pts.reduce((s, p) => s + p.tokens, 0) / n;
  const my = pts.reduce((s, p) => s + p.ms, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of pts) {
    sxy += (p.tokens - mx) * (p.ms - my);
    sxx += (p.tokens - mx) ** 2;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

/**
 * K_max for a batch from the knee: verifying up to the knee's tokens costs about one forward, so
 * while the batch is below it the knee is the budget; once the roots alone pass it, every request
 * keeps its root and the batch gets a knee's worth of draft tokens on top (K_max = batch alone
 * would leave nothing to speculate with). What `profile-hw` suggests, `sweep --hw-profile` and
 * the ECHO bench use.
 */
export function suggestKmax(fit: Pick<TverModel, 'kmax'>, batch: number): number {
  const knee = Math.max(1, Math.round(fit.kmax));
  return batch < knee ? knee : batch + knee;
}
