// The paper's claims, each judged from a study's data: holds, does not hold, or not measurable
// here, with the measured value, its uncertainty and the paper's own number where it prints one.
// Ratios of throughputs are read against the A/A band: how far the baseline run again drifted
// from the baseline in the same rounds (on a modelled clock a greedy run has no noise: band 0).
// AUCs carry their standard error; utilisation medians a bootstrap interval over requests.
import { percentile } from '../metrics/percentile.js';
import { Rng } from '../rng.js';
import { paperHighLoadRatio, paperTable1Ratio, PAPER_TABLE1 } from './paper.js';

const TABLE1_MODELS = [...new Set(PAPER_TABLE1.map((r) => r.model))];
import { LOAD_CONTROL, TABLE1_CONTROL, type RequestUtilisation, type StudyData } from './study.js';
import type { SweepRow } from '../run/sweep.js';

export const VERDICTS = ['holds', 'does not hold', 'not measurable here'] as const;
export type Verdict = (typeof VERDICTS)[number];

export interface Claim {
  id: string;
  /** The paper's claim, in this project's words. */
  claim: string;
  /** Where the paper makes it. */
  source: string;
  /** wall, modelled, or none (calibration and utilisation do not depend on a clock). */
  clock: 'wall' | 'modelled' | 'none';
  /** What was measured, in words with numbers. */
  measured: string;
  /** The uncertainty the verdict was read against, in words. */
  uncertainty: string;
  /** The paper's own number for the same comparison, where it prints one. */
  paper: string;
  verdict: Verdict;
  /** Why, in a few words: clear, within the noise, reversed, too few samples… */
  because: string;
}

/** How far a ratio paired within rounds may sit from 1 by noise alone: the control's largest drift. */
export function aaHalfWidth(controlRatios: readonly number[]): number {
  return controlRatios.length === 0 ? NaN : Math.max(...controlRatios.map((r) => Math.abs(r - 1)));
}

/** Per-round ratios x_r ÷ y_r of two rows measured in the same rounds. */
export function roundRatiosOf(x: SweepRow, y: SweepRow): number[] {
  return x.roundThroughputs.map((t, i) => t / y.roundThroughputs[i]);
}

/**
 * A "greater than" verdict on a ratio against a band: above 1 + band it holds; below 1 − band it
 * does not (reversed). Inside the band it does not hold when the band is narrow enough to have
 * shown the paper's effect (`effect`, e.g. 0.05 for +5 %), and is not measurable here when this
 * machine's noise is wider than the effect the paper reports.
 */
export function ratioVerdict(ratio: number, band: number, effect = 0): { verdict: Verdict; because: string } {
  if (!Number.isFinite(ratio) || !Number.isFinite(band)) return { verdict: 'not measurable here', because: 'no ratio or no A/A band' };
  if (ratio > 1 + band) return { verdict: 'holds', because: `${fmt(ratio)} is above the A/A band 1 ± ${fmt(band)}` };
  if (ratio < 1 - band) return { verdict: 'does not hold', because: `${fmt(ratio)} is below the A/A band 1 ± ${fmt(band)}: reversed` };
  if (band >= effect && effect > 0) {
    return { verdict: 'not measurable here', because: `${fmt(ratio)} is within the A/A band 1 ± ${fmt(band)}, which is wider than the paper's effect (${(effect * 100).toFixed(1)} %): more rounds or requests, or a quieter machine, could tell` };
  }
  return { verdict: 'does not hold', because: `${fmt(ratio)} is within the A/A band 1 ± ${fmt(band)}: no difference beyond noise` };
}

/** The smallest effect the paper reports for a comparison (a ratio − 1), over its models. */
function smallestEffect(ratios: ReadonlyArray<number | null>): number {
  const effects = ratios.flatMap((r) => (r === null ? [] : [r - 1])).filter((e) => e > 0);
  return effects.length > 0 ? Math.min(...effects) : 0;
}

/** The standard error of an AUC (Hanley and McNeil, 1982) from its value and the two group sizes. */
export function aucStandardError(auc: number, positives: number, negatives: number): number {
  const q1 = auc / (2 - auc);
  const q2 = (2 * auc * auc) / (1 + auc);
  const v = (auc * (1 - auc) + (positives - 1) * (q1 - auc * auc) + (negatives - 1) * (q2 - auc * auc)) / (positives * negatives);
  return Math.sqrt(Math.max(0, v));
}

function fmt(x: number, digits = 3): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

function pct(ratio: number | null): string {
  return ratio === null ? 'not printed' : `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`;
}

const median = (xs: readonly number[]) => percentile(xs, 50);
const iqr = (xs: readonly number[]) => percentile(xs, 75) - percentile(xs, 25);

/** The study's claims; every verdict computed from `data` (`seed`: the bootstrap's). */
export function judgeClaims(data: StudyData, options: { seed: number; delta: number }): Claim[] {
  const claims: Claim[] = [sweetSpots(data, options.delta)];
  const clocks: Array<'wall' | 'modelled'> = ['wall', ...(data.load.rows.some((r) => r.modelledThroughput !== undefined) ? (['modelled'] as const) : [])];
  for (const clock of clocks) {
    claims.push(
      batchOneGain(data, 'echo', 'static', clock, { id: 'table1-echo-static', source: 'Table 1', paper: `average speedup ECHO ÷ EAGLE-3: ${pct(paperTable1Ratio('LLaMA3.1-8B', 'ECHO', 'EAGLE3'))} (LLaMA3.1-8B) to ${pct(paperTable1Ratio('Qwen3-235B', 'ECHO', 'EAGLE3'))} (Qwen3-235B)`, effect: smallestEffect(TABLE1_MODELS.map((m) => paperTable1Ratio(m, 'ECHO', 'EAGLE3'))) }),
      batchOneGain(data, 'echo', 'ddd', clock, { id: 'table1-echo-ddd', source: 'Table 1, §5.2', paper: `average speedup ECHO ÷ DDD: ${pct(paperTable1Ratio('LLaMA3.1-8B', 'ECHO', 'DDD'))} (LLaMA3.1-8B) to ${pct(paperTable1Ratio('Qwen3-235B', 'ECHO', 'DDD'))} (Qwen3-235B)`, effect: smallestEffect(TABLE1_MODELS.map((m) => paperTable1Ratio(m, 'ECHO', 'DDD'))) }),
      loadShrinksGain(data, clock),
      highLoadGain(data, 'echo', 'static', clock, { id: 'fig5-echo-static', source: '§5.2, Figs. 1 and 5', claim: "ECHO's throughput is above static EAGLE-3's at high load", paper: `${pct(paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'static'))} (LLaMA3.1-8B) and ${pct(paperHighLoadRatio('Qwen3-235B', 'echo', 'static'))} (Qwen3-235B) at batch 256`, effect: smallestEffect([paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'static'), paperHighLoadRatio('Qwen3-235B', 'echo', 'static')]) }),
      highLoadGain(data, 'echo', 'dense', clock, { id: 'fig5-dense', source: '§5.3, Fig. 5', claim: 'dense gating (a gate at every depth) is below ECHO at high load', paper: `ECHO ÷ dense ${pct(paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'dense'))} (LLaMA3.1-8B, batch 256)`, effect: smallestEffect([paperHighLoadRatio('LLaMA3.1-8B', 'echo', 'dense')]) }),
      highLoadGain(data, 'echo', 'fixed', clock, { id: 'fig5-fixed', source: '§5.3, Fig. 5', claim: 'one fixed threshold for every depth is below ECHO at high load', paper: `ECHO ÷ fixed ${pct(paperHighLoadRatio('Qwen3-235B', 'echo', 'fixed'))} (Qwen3-235B, batch 256)`, effect: smallestEffect([paperHighLoadRatio('Qwen3-235B', 'echo', 'fixed')]) }),
    );
  }
  claims.push(...utilisationClaims(data.utilisation, options.seed));
  return claims;
}

function sweetSpots(data: StudyData, delta: number): Claim {
  const parts: string[] = [];
  const errors: string[] = [];
  let measurable = true;
  let all = true;
  let clear = true;
  for (const { domain, profile } of data.calibrations) {
    for (const depth of [0, profile.targetDepth]) {
      const d = profile.depths.find((e) => e.depth === depth);
      if (!d || d.auc === null) {
        measurable = false;
        parts.push(`${domain} d${depth}: too few samples`);
        continue;
      }
      const se = aucStandardError(d.auc, d.accepted, d.rejected);
      parts.push(`${domain} d${depth}: AUC ${fmt(d.auc)} ± ${fmt(1.96 * se)}`);
      errors.push(`${domain} d${depth} ±${fmt(1.96 * se)}`);
      if (!(d.auc > delta)) all = false;
      if (!(d.auc - 1.96 * se > delta)) clear = false;
    }
  }
  const verdict: Verdict = !measurable ? 'not measurable here' : all ? 'holds' : 'does not hold';
  return {
    id: 'fig2-sweet-spots',
    claim: `the root (depth 0) and the target depth separate accepted from rejected confidences (AUC above δ = ${delta}): they are sweet spots`,
    source: 'Figs. 2 and 6–9, §1',
    clock: 'none',
    measured: parts.join('; '),
    uncertainty: `95 % interval of each AUC (Hanley–McNeil standard error): ${errors.join(', ') || 'none'}`,
    paper: 'root and target depth are sweet spots on every model shown (no AUC values printed)',
    verdict,
    because: !measurable ? 'a depth had too few accepted or rejected samples' : all ? (clear ? 'every AUC is above δ, intervals included' : 'every AUC is above δ, but not every interval clears it') : 'an AUC is at or below δ',
  };
}

function throughputOf(row: SweepRow, clock: 'wall' | 'modelled'): number {
  return clock === 'wall' ? row.metrics.throughput : (row.modelledThroughput ?? NaN);
}

/** A ratio of two rows and its band, on one clock: wall, the median of per-round ratios against the control's; modelled, exact. */
function pairedOnClock(x: SweepRow, y: SweepRow, control: SweepRow | undefined, controlBase: SweepRow | undefined, clock: 'wall' | 'modelled'): { ratios: number[]; band: number } {
  if (clock === 'modelled') return { ratios: [throughputOf(x, clock) / throughputOf(y, clock)], band: 0 };
  const band = control && controlBase ? aaHalfWidth(roundRatiosOf(control, controlBase)) : NaN;
  return { ratios: roundRatiosOf(x, y), band };
}

function batchOneGain(data: StudyData, policy: string, over: string, clock: 'wall' | 'modelled', meta: { id: string; source: string; paper: string; effect: number }): Claim {
  const ratios: number[] = [];
  const bands: number[] = [];
  const per: string[] = [];
  for (const { domain, rows } of data.table1) {
    const x = rows.find((r) => r.policy === policy);
    const y = rows.find((r) => r.policy === over);
    if (!x || !y) continue;
    const { ratios: r, band } = pairedOnClock(x, y, rows.find((c) => c.policy === TABLE1_CONTROL), rows.find((c) => c.policy === 'ar'), clock);
    ratios.push(...r);
    bands.push(band);
    per.push(`${domain} ${fmt(median(r))}`);
  }
  const ratio = ratios.length > 0 ? median(ratios) : NaN;
  const band = bands.length > 0 ? Math.max(...bands) : NaN;
  return {
    id: `${meta.id}-${clock}`,
    claim: `at batch 1, ${policy} is faster than ${over}`,
    source: meta.source,
    clock,
    measured: `${policy} ÷ ${over} ${fmt(ratio)} (median over domains and rounds; ${per.join(', ')})`,
    uncertainty: clock === 'wall' ? `A/A band ±${fmt(band)} (${TABLE1_CONTROL} ÷ ar, widest over domains and rounds)` : 'none: a greedy run on a modelled clock repeats exactly',
    paper: meta.paper,
    ...ratioVerdict(ratio, band, meta.effect),
  };
}

function loadRowsAt(data: StudyData, batch: number): SweepRow[] {
  return data.load.rows.filter((r) => r.batch === batch);
}

function highLoadGain(data: StudyData, policy: string, over: string, clock: 'wall' | 'modelled', meta: { id: string; source: string; claim: string; paper: string; effect: number }): Claim {
  const batches = [...new Set(data.load.rows.map((r) => r.batch))];
  const top = Math.max(...batches);
  const rows = loadRowsAt(data, top);
  const x = rows.find((r) => r.policy === policy);
  const y = rows.find((r) => r.policy === over);
  const base = {
    id: `${meta.id}-${clock}`,
    claim: meta.claim,
    source: meta.source,
    clock,
    paper: meta.paper,
  };
  if (!x || !y || batches.length < 2) {
    return { ...base, measured: 'no high-load runs', uncertainty: 'none', verdict: 'not measurable here', because: 'the study ran one batch size only' };
  }
  const { ratios, band } = pairedOnClock(x, y, rows.find((r) => r.policy === LOAD_CONTROL), rows.find((r) => r.policy === 'static'), clock);
  const ratio = median(ratios);
  return {
    ...base,
    measured: `${policy} ÷ ${over} at batch ${top} (K_max ${x.kmax}): ${fmt(ratio)}${ratios.length > 1 ? ` (rounds ${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))})` : ''}`,
    uncertainty: clock === 'wall' ? `A/A band ±${fmt(band)} (${LOAD_CONTROL} ÷ static at batch ${top})` : 'none: a greedy run on a modelled clock repeats exactly',
    ...ratioVerdict(ratio, band, meta.effect),
  };
}

function loadShrinksGain(data: StudyData, clock: 'wall' | 'modelled'): Claim {
  const batches = [...new Set(data.load.rows.map((r) => r.batch))].sort((a, b) => a - b);
  const base = {
    id: `fig1-gain-shrinks-${clock}`,
    claim: "static tree speculation's gain over autoregressive decoding shrinks as the batch grows",
    source: 'Fig. 1, §1',
    clock,
    paper: 'shown as curves (no numbers printed)',
  };
  if (batches.length < 2) return { ...base, measured: 'one batch size only', uncertainty: 'none', verdict: 'not measurable here', because: 'the study ran one batch size only' };
  const at = (batch: number) => {
    const rows = loadRowsAt(data, batch);
    const st = rows.find((r) => r.policy === 'static')!;
    const ar = rows.find((r) => r.policy === 'ar')!;
    const { ratios, band } = pairedOnClock(st, ar, rows.find((r) => r.policy === LOAD_CONTROL), st, clock);
    return { gain: median(ratios), band };
  };
  const low = at(batches[0]);
  const high = at(batches[batches.length - 1]);
  // The gain at low load over the gain at high load: above 1 beyond both batches' noise, it shrank.
  const shrink = low.gain / high.gain;
  const band = (Number.isFinite(low.band) ? low.band : 0) + (Number.isFinite(high.band) ? high.band : 0);
  // The paper prints no number for this; a 5 % shrink is the least this study should resolve.
  const verdict = ratioVerdict(shrink, clock === 'wall' ? band : 0, 0.05);
  return {
    ...base,
    measured: `static ÷ ar ${fmt(low.gain)} at batch ${batches[0]}, ${fmt(high.gain)} at batch ${batches[batches.length - 1]} (low ÷ high ${fmt(shrink)})`,
    uncertainty: clock === 'wall' ? `A/A bands of both batch sizes added: ±${fmt(band)}` : 'none: a greedy run on a modelled clock repeats exactly',
    ...verdict,
  };
}

function utilisationClaims(rows: readonly RequestUtilisation[], seed: number): Claim[] {
  const of = (policy: string) => rows.filter((r) => r.policy === policy).map((r) => r.utilisation);
  const echo = of('echo');
  // The tree baselines: a chain's one path is a different kind of draft (its utilisation is high by
  // construction), so it is shown in the figure but not judged against.
  const baselines = ['static', 'eagle2', 'ddd'].filter((p) => of(p).length > 0);
  const meta = { source: 'Fig. 4, §5.2', clock: 'none' as const, paper: 'shown as distributions (no numbers printed)' };
  if (echo.length < 3 || baselines.length === 0) {
    const none = { measured: 'too few requests with verified draft tokens', uncertainty: 'none', verdict: 'not measurable here' as const, because: 'fewer than 3 requests' };
    return [
      { id: 'fig4-utilisation-median', claim: 'ECHO drafts with a higher median utilisation than the baselines', ...meta, ...none },
      { id: 'fig4-utilisation-iqr', claim: "ECHO's utilisation has a narrower interquartile range than the baselines'", ...meta, ...none },
    ];
  }
  // Each baseline against ECHO: the difference of medians (and of IQRs) with a bootstrap interval
  // over requests, resampling each policy's requests independently.
  const compare = (stat: (xs: number[]) => number, k: number) =>
    baselines.map((p) => {
      const other = of(p);
      const diff = stat(echo) - stat(other);
      const [lo, hi] = bootstrapIntervalOfDiff(echo, other, stat, seed + k);
      return { policy: p, diff, lo, hi };
    });
  const medians = compare((xs) => median(xs), 0);
  const iqrs = compare((xs) => iqr(xs), 100);
  const judge = (cs: typeof medians, better: (c: (typeof medians)[number]) => boolean, worse: (c: (typeof medians)[number]) => boolean): { verdict: Verdict; because: string } =>
    cs.every(better)
      ? { verdict: 'holds', because: 'every interval is on ECHO\'s side of 0' }
      : { verdict: 'does not hold', because: cs.some(worse) ? `reversed against ${cs.filter(worse).map((c) => c.policy).join(', ')}` : `not beyond the bootstrap interval against ${cs.filter((c) => !better(c)).map((c) => c.policy).join(', ')}` };
  const describe = (cs: typeof medians) => cs.map((c) => `${c.policy} ${c.diff >= 0 ? '+' : ''}${fmt(c.diff)} [${fmt(c.lo)}, ${fmt(c.hi)}]`).join('; ');
  return [
    {
      id: 'fig4-utilisation-median',
      claim: 'ECHO drafts with a higher median utilisation (accepted ÷ verified draft tokens, per request) than the tree baselines (static, eagle2, ddd)',
      ...meta,
      measured: `ECHO median ${fmt(median(echo))} over ${echo.length} requests; ECHO minus each: ${describe(medians)}`,
      uncertainty: '95 % bootstrap interval of each difference over requests (1000 resamples)',
      ...judge(medians, (c) => c.lo > 0, (c) => c.hi < 0),
    },
    {
      id: 'fig4-utilisation-iqr',
      claim: "ECHO's utilisation has a narrower interquartile range than the tree baselines' (static, eagle2, ddd)",
      ...meta,
      measured: `ECHO IQR ${fmt(iqr(echo))}; ECHO minus each: ${describe(iqrs)}`,
      uncertainty: '95 % bootstrap interval of each difference over requests (1000 resamples)',
      ...judge(iqrs, (c) => c.hi < 0, (c) => c.lo > 0),
    },
  ];
}

function bootstrapIntervalOfDiff(a: readonly number[], b: readonly number[], stat: (xs: number[]) => number, seed: number, resamples = 1000): [number, number] {
  const rng = new Rng(seed);
  const draw = (xs: readonly number[]) => Array.from({ length: xs.length }, () => xs[rng.nextUint32() % xs.length]);
  const diffs: number[] = [];
  for (let k = 0; k < resamples; k++) diffs.push(stat(draw(a)) - stat(draw(b)));
  return [percentile(diffs, 2.5), percentile(diffs, 97.5)];
}
