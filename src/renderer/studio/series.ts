// Per-step series for the budget and metrics charts, computed from step events alone so that a
// live run and a replayed trace draw the same lines.
import type { BudgetTransfer, StepEvent } from '../../shared/events.js';
import { draftForwardSizes } from '../../engine/cost/clock.js';
import { formatProbability } from './tokens.js';

export interface StepPoint {
  step: number;
  /** Budget split in verified tokens (sums to kmax). */
  roots: number;
  base: number;
  depth: number;
  width: number;
  unused: number;
  kmax: number;
  verifiedTokens: number;
  /** Tokens transferred from truncated to confident requests this step. */
  transferred: number;
  requests: number;
  /** Tokens appended to outputs this step (accepted + bonus). */
  emitted: number;
  /** Accepted draft tokens this step, bonus excluded. */
  accepted: number;
  /** Verified draft nodes this step, roots excluded. */
  draftedVerified: number;
  totalMs: number;
  /** Rows of each draft forward, and their requests when recorded: what a modelled clock prices. */
  draftRows: number[];
  draftRequests?: number[];
  /** The step's longest committed past, in rows, when recorded: where a measured clock reads its forwards. */
  past?: number;
  /** The τ each gated depth was checked against this step (absent when no gate was checked). */
  taus?: Record<string, number>;
}

export function stepPoint(event: StepEvent): StepPoint {
  let emitted = 0;
  let accepted = 0;
  let draftedVerified = 0;
  let taus: Record<string, number> | undefined;
  for (const req of event.requests) {
    for (const gate of req.gates) (taus ??= {})[String(gate.depth)] ??= gate.tau;
    emitted += req.emitted.length;
    accepted += req.accepted.length;
    for (const node of req.nodes) if (node.verified && node.parent >= 0) draftedVerified += 1;
  }
  return {
    step: event.step,
    ...event.budget,
    kmax: event.kmax,
    verifiedTokens: event.verifiedTokens,
    transferred: event.transfers.reduce((sum, t) => sum + t.tokens, 0),
    requests: event.requests.length,
    emitted,
    accepted,
    draftedVerified,
    totalMs: event.timings.totalMs,
    draftRows: draftForwardSizes(event),
    ...(event.draftRequests ? { draftRequests: event.draftRequests } : {}),
    ...(event.past !== undefined ? { past: event.past } : {}),
    ...(taus ? { taus } : {}),
  };
}

/**
 * The settings a run changed part-way, read from its steps: K_max, and the τ of each gated depth
 * (as its gate checks carried it). "K_max 64 → 96", "τ at depth 2 0.3 → 0.35"; empty when none
 * changed. A comparison of such runs mixes settings, and says so.
 */
export function settingChanges(points: readonly StepPoint[]): string[] {
  const kmaxes: number[] = [];
  const taus = new Map<string, number[]>();
  for (const p of points) {
    if (kmaxes[kmaxes.length - 1] !== p.kmax) kmaxes.push(p.kmax);
    for (const [depth, tau] of Object.entries(p.taus ?? {})) {
      const seen = taus.get(depth) ?? [];
      if (seen[seen.length - 1] !== tau) seen.push(tau);
      taus.set(depth, seen);
    }
  }
  const out: string[] = [];
  if (kmaxes.length > 1) out.push(`K_max ${kmaxes.join(' → ')}`);
  for (const [depth, values] of [...taus.entries()].sort((a, b) => Number(a[0]) - Number(b[0]))) {
    if (values.length > 1) out.push(`τ at depth ${depth} ${values.map((v) => formatProbability(v)).join(' → ')}`);
  }
  return out;
}

/** Two runs with the same steps (a run and its own replay, or kept and shown again): comparing them says nothing. */
export function sameSteps(a: readonly StepPoint[], b: readonly StepPoint[]): boolean {
  return (
    a.length > 0 &&
    a.length === b.length &&
    a.every((p, i) => p.step === b[i].step && p.emitted === b[i].emitted && p.verifiedTokens === b[i].verifiedTokens && p.totalMs === b[i].totalMs)
  );
}

export interface MetricPoint {
  step: number;
  /** Generated tokens per second over the trailing window of steps (step time, not idle time). */
  throughput: number;
  /** Mean accepted tokens per request-step over the window, bonus excluded. */
  mat: number;
  /** Accepted / verified draft nodes over the window. */
  utilisation: number;
  verifiedTokens: number;
}

/** Rolling metrics; `window` steps smooth the noise of single steps; `stepMs` is the clock (wall by default). */
export function metricSeries(points: readonly StepPoint[], window = 8, stepMs: (p: StepPoint) => number = (p) => p.totalMs): MetricPoint[] {
  const out: MetricPoint[] = [];
  let emitted = 0;
  let ms = 0;
  let accepted = 0;
  let requestSteps = 0;
  let drafted = 0;
  points.forEach((p, i) => {
    emitted += p.emitted;
    ms += stepMs(p);
    accepted += p.accepted;
    requestSteps += p.requests;
    drafted += p.draftedVerified;
    if (i >= window) {
      const old = points[i - window];
      emitted -= old.emitted;
      ms -= stepMs(old);
      accepted -= old.accepted;
      requestSteps -= old.requests;
      drafted -= old.draftedVerified;
    }
    out.push({
      step: p.step,
      throughput: ms > 0 ? (emitted * 1000) / ms : 0,
      mat: requestSteps > 0 ? accepted / requestSteps : 0,
      utilisation: drafted > 0 ? accepted / drafted : 0,
      verifiedTokens: p.verifiedTokens,
    });
  });
  return out;
}

export const METRIC_KEYS = ['throughput', 'mat', 'utilisation', 'verifiedTokens'] as const;
export type MetricKey = (typeof METRIC_KEYS)[number];

export interface OverlayRow {
  step: number;
  [key: string]: number | undefined;
}

/** Merges a run and a comparison run into one row per step index, keys `${prefix}_${metric}`. */
export function overlaySeries(
  runs: ReadonlyArray<{ prefix: string; points: readonly MetricPoint[] }>,
  metric: MetricKey,
): OverlayRow[] {
  const rows = new Map<number, OverlayRow>();
  for (const run of runs) {
    for (const p of run.points) {
      let row = rows.get(p.step);
      if (row === undefined) {
        row = { step: p.step };
        rows.set(p.step, row);
      }
      row[run.prefix] = p[metric];
    }
  }
  return [...rows.values()].sort((a, b) => a.step - b.step);
}

/** Transfers of one step merged per (from, to) pair, largest first. */
export function mergeTransfers(transfers: readonly BudgetTransfer[]): BudgetTransfer[] {
  const merged = new Map<string, BudgetTransfer>();
  for (const t of transfers) {
    const key = `${t.from}\u0000${t.to}`;
    const prev = merged.get(key);
    if (prev) prev.tokens += t.tokens;
    else merged.set(key, { ...t });
  }
  return [...merged.values()].sort((a, b) => b.tokens - a.tokens || a.from.localeCompare(b.from));
}

/** Keeps at most `limit` points by dropping every other older point (recent ones stay exact). */
export function thinSeries<T>(points: readonly T[], limit: number): T[] {
  if (points.length <= limit) return points.slice();
  const recentCount = Math.floor(limit / 2);
  const older = points.slice(0, points.length - recentCount);
  const stride = Math.ceil(older.length / (limit - recentCount));
  const thinned = older.filter((_, i) => i % stride === 0);
  return thinned.concat(points.slice(points.length - recentCount));
}
