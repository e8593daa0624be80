// Several policies side by side on one loaded pair: for each batch size, every policy runs the
// same workload, the policies interleaved round by round (their order rotated each round) so that
// a machine's drifting load falls on all of them alike, and each reports its median round and its
// throughput in every round, for ratios paired within rounds. Greedy runs must emit the same
// tokens whatever the policy (lossless), and the sweep checks that they did. An entry may give the
// draft another attention window (`echo@4:16`, `echo@whole`), set between runs (every run starts
// its requests afresh), so the same loaded pair serves every entry and windows compare in paired rounds.
// An entry may also repeat another (`static#2`): the same policy run again, as its own entry, in
// every round. Two runs of one computation differ only by the machine's noise, so the repeat's
// ratio to the first (an A/A control) shows how close to 1 a ratio must be to mean nothing.
// Interleaved by steps instead (`interleave: 'steps'`), a round's runs share the pair at once and
// take turns one step each (runLockstep), so the machine's drift falls on them within a step or two.
import { formatAttentionWindow, kmaxProblem, parseValidAttentionWindow, type AttentionWindow } from '../../shared/config.js';
import type { ModelledClock } from '../cost/clock.js';
import type { StepCosts } from '../../shared/step-costs.js';
import { medianRound, stepMedianMs } from '../metrics/paired-rounds.js';
import { percentile } from '../metrics/percentile.js';
import type { DecodeStepTimes } from './instrumented-run.js';
import { runRounds, slotsForRounds, type Interleaving, type StartedRun } from './rounds.js';
import { createPolicy, unknownPolicy, type SpeculationPolicy } from '../policy/index.js';
import { startOn } from './run.js';
import { policyOptions, type RunSetup } from './session-run.js';
import type { RunMetrics, StepEvent } from '../../shared/events.js';
import { explainDifferences, firstDifference, type Divergence } from '../verify/ties.js';

/** A sweep entry: a policy, and the draft window it runs with when not the setup's. */
export interface SweepEntry {
  /** As listed, e.g. `echo@4:16`: the row's name. */
  label: string;
  policy: string;
  /** A window for the draft (null: its whole past); absent: the window the pair was loaded with. */
  draftWindow?: AttentionWindow | null;
  /** For a repeat (`static#2`), the entry it runs again (`static`): an A/A control. */
  repeats?: string;
}

/**
 * `static#2` → the repeated entry and the copy's number; an entry without `#` → no copy. The
 * number only keeps copies apart (`static#2`, `static#3`); it must be 2 or more.
 */
export function splitRepeat(entry: string): { repeated: string; copy: number | null } {
  const hash = entry.lastIndexOf('#');
  if (hash < 0) return { repeated: entry, copy: null };
  const copy = Number(entry.slice(hash + 1));
  if (!Number.isInteger(copy) || copy < 2) {
    throw new Error(`${entry}: a repeat is ENTRY#N with N ≥ 2, e.g. static#2 (static run again: an A/A control)`);
  }
  return { repeated: entry.slice(0, hash), copy };
}

/**
 * `name`, `name@SINK:RECENT` or `name@whole`, each optionally `#N` (a repeat) → its entry; throws
 * naming the problem.
 */
export function parseSweepEntry(entry: string): SweepEntry {
  const { repeated, copy } = splitRepeat(entry);
  if (copy !== null) return { ...parseSweepEntry(repeated), label: entry, repeats: repeated };
  const [policy, suffix, ...rest] = entry.split('@');
  const unknown = unknownPolicy(policy);
  if (unknown !== null) throw new Error(unknown);
  if (suffix === undefined) return { label: entry, policy };
  const window = parseValidAttentionWindow(suffix);
  if (rest.length > 0 || (suffix !== 'whole' && window === null)) {
    throw new Error(`${entry}: a policy takes @SINK:RECENT (a draft attention window, e.g. echo@4:64) or @whole (the draft's whole past)`);
  }
  if (policy === 'ar') throw new Error(`${entry}: ar runs no draft, so it has no draft window`);
  return { label: entry, policy, draftWindow: window };
}

export interface SweepOptions {
  /** Entries as listed: a policy name, optionally with @SINK:RECENT or @whole, or a repeat #N (see parseSweepEntry). */
  policies: readonly string[];
  batches: readonly number[];
  /** K_max of each batch size. */
  kmax: (batch: number) => number;
  /** Interleaved repetitions; each row reports its policy's median round by throughput. */
  rounds: number;
  /** How a round's runs share the machine (default `runs`). */
  interleave?: Interleaving;
  /** Also time every step on this modelled clock (deterministic for greedy runs: no machine noise). */
  clock?: ModelledClock;
  /** One line per finished run, for progress. */
  log?: (line: string) => void;
  /** Every step of every run, with its batch size, entry and round (from 0): for studies that read more than the rows keep. */
  onStep?: (run: { batch: number; entry: string; round: number }, event: StepEvent) => void;
  /**
   * The policy a run steps with, given the one the entry names: a study may wrap it to watch its
   * trees (the wrapper must delegate every decision, so the run stays the one measured).
   */
  wrapPolicy?: (run: { batch: number; entry: string; round: number }, policy: SpeculationPolicy) => SpeculationPolicy;
}

export interface SweepRow {
  batch: number;
  kmax: number;
  policy: string;
  /** The median round by throughput. */
  metrics: RunMetrics;
  /** Throughput and decode throughput in each round, in round order (for ratios paired within rounds). */
  roundThroughputs: number[];
  roundDecodeThroughputs: number[];
  /** Steps and their mean time split in each round (for atBaselineStepCost, paired within rounds). */
  roundStepCosts: StepCosts[];
  /**
   * Greedy runs over 3 rounds or more: generated tokens per second of the steps' median times
   * (stepMedianMs): the wall clock with each step's bursts of machine noise outvoted.
   */
  stepMedianThroughput?: number;
  /** With a modelled clock: generated tokens per modelled second, in the median round. */
  modelledThroughput?: number;
  /**
   * Wall clock: the median decode step (no prefill in it) of every round, split into onnxruntime's
   * calls and the engine's own work around them (RunOutcome.decodeSteps). Absent with no such step.
   */
  decodeStepMs?: { model: number; engine: number };
  /**
   * Greedy runs: whether every request's tokens equal those of the first policy in the list at
   * this batch size. Null when sampling (a sampled run is lossless in distribution, not in tokens).
   */
  sameTokens: boolean | null;
  /**
   * When sameTokens is false: the first request whose output differs (the first one that is not
   * a float tie of the target, if any), and how many differ, in the first round that differed.
   */
  divergence?: Divergence & { id: string; requests: number };
}

/** Checks what a sweep would refuse before any model is loaded; the first problem as one line. */
export function checkSweep(options: Pick<SweepOptions, 'policies' | 'batches' | 'kmax' | 'rounds' | 'interleave'>): void {
  if (options.policies.length === 0) throw new Error('a sweep needs at least one policy');
  if (new Set(options.policies).size !== options.policies.length) throw new Error(`a policy is listed twice: ${options.policies.join(', ')}`);
  for (const entry of options.policies) {
    const { repeats } = parseSweepEntry(entry);
    if (repeats !== undefined && !options.policies.includes(repeats)) throw new Error(`${entry} repeats ${repeats}, which is not among the policies`);
  }
  if (options.batches.length === 0) throw new Error('a sweep needs at least one batch size');
  for (const batch of options.batches) {
    if (!Number.isInteger(batch) || batch < 1) throw new Error(`batch sizes are whole numbers ≥ 1, got ${batch}`);
    const kmax = options.kmax(batch);
    if (!Number.isInteger(kmax)) throw new Error(`K_max is a whole number, got ${kmax} for batch ${batch}`);
    const kmaxRule = kmaxProblem(kmax, batch);
    if (kmaxRule !== null) throw new Error(kmaxRule);
  }
  if (!Number.isInteger(options.rounds) || options.rounds < 1) throw new Error(`rounds must be a whole number ≥ 1, got ${options.rounds}`);
  const windows = draftWindows(options.policies);
  if (options.interleave === 'steps' && windows.length > 1) {
    throw new Error(`entries that give the draft other windows (${windows.join(', ')}) cannot take turns step by step on one draft: interleave by runs`);
  }
}

/**
 * The draft windows the entries run with, as written (`loaded`: the one the pair was loaded
 * with). Runs in lockstep share one draft session, so they can only take turns under one window.
 */
export function draftWindows(policies: readonly string[]): string[] {
  const label = ({ draftWindow }: SweepEntry) => (draftWindow === undefined ? 'loaded' : draftWindow === null ? 'whole' : formatAttentionWindow(draftWindow));
  return [...new Set(policies.map((entry) => label(parseSweepEntry(entry))))];
}

/**
 * Runs the sweep on a setup loaded for the largest batch and K_max (slots and KV rows), whose
 * resolved gates, if any, every gated policy shares.
 */
export async function runSweep(setup: RunSetup, options: SweepOptions): Promise<SweepRow[]> {
  checkSweep(options);
  const slots = slotsForRounds(options);
  if (setup.pair.target.capacity < slots) {
    const why = options.interleave === 'steps' ? ` (batch ${Math.max(...options.batches)} × ${options.policies.length} entries taking turns by steps)` : '';
    throw new Error(`this sweep needs ${slots} KV slots${why}; the pair was loaded with ${setup.pair.target.capacity}`);
  }
  const draft = setup.pair.draft;
  const loadedWindow = draft.window ?? null;
  const entries = new Map(options.policies.map((label) => [label, parseSweepEntry(label)]));
  if ([...entries.values()].some((e) => e.draftWindow !== undefined) && !draft.setWindow) {
    throw new Error('this draft session cannot change its attention window between runs');
  }
  // Each entry's draft window, set before its runs (the loaded one unless the entry names one).
  const useWindow = (entry: SweepEntry) => {
    if (draft.setWindow) draft.setWindow(entry.draftWindow === undefined ? loadedWindow : entry.draftWindow);
  };
  const rows: SweepRow[] = [];
  for (const batch of options.batches) rows.push(...(await sweepBatch(setup, options, batch, entries, useWindow)));
  // Leave the pair as it was loaded. (After a failed run its requests may still hold slots; the
  // caller releases the pair then, and the run's own error is the one to report.)
  draft.setWindow?.(loadedWindow);
  return rows;
}

interface SweepRun {
  metrics: RunMetrics;
  tokens: number[][];
  modelledMs: number;
  /** Each step's time, prefill included. */
  stepMs: number[];
  decodeSteps: DecodeStepTimes;
}

/** Every entry at one batch size, interleaved round by round; one row per entry. */
async function sweepBatch(
  setup: RunSetup,
  options: SweepOptions,
  batch: number,
  entries: ReadonlyMap<string, SweepEntry>,
  useWindow: (entry: SweepEntry) => void,
): Promise<SweepRow[]> {
  const { config, gates } = setup;
  const kmax = options.kmax(batch);
  const started = new Map<string, number>();
  // One entry's run: its runner, and what its summary makes of the steps it heard. (In lockstep
  // every entry runs under one window, checkSweep made sure; setting it before any run starts is allowed.)
  const start = (name: string): StartedRun<SweepRun> => {
    const entry = entries.get(name)!;
    useWindow(entry);
    const round = started.get(name) ?? 0;
    started.set(name, round + 1);
    const created = createPolicy(entry.policy, { ...policyOptions(config, gates), batch, kmax });
    const policy = options.wrapPolicy ? options.wrapPolicy({ batch, entry: name, round }, created) : created;
    const run = startOn(setup, { policy, batch, kmax, clock: options.clock });
    run.on('step', (e) => options.onStep?.({ batch, entry: name, round }, e));
    return {
      runner: run.runner,
      finish: (summary) => {
        const outcome = run.measure(summary);
        return { metrics: outcome.metrics, tokens: summary.results.map((r) => r.tokens), modelledMs: outcome.modelled?.ms ?? 0, stepMs: outcome.stepMs, decodeSteps: outcome.decodeSteps };
      },
    };
  };
  const runs = await runRounds(options.policies, {
    rounds: options.rounds,
    interleave: options.interleave ?? 'runs',
    onRun: (round, name, run) => options.log?.(`batch ${batch}, K_max ${kmax}, round ${round + 1}/${options.rounds}: ${name} ${run.metrics.throughput.toFixed(1)} tok/s`),
  }, start);
  const reference = runs.get(options.policies[0])![0].tokens;
  const rows: SweepRow[] = options.policies.map((name) => {
    const rounds = runs.get(name)!;
    const median = medianRound(rounds, (r) => r.metrics.throughput);
    const sameTokens = config.temperature > 0 ? null : rounds.every((r) => sameOutputs(r.tokens, reference));
    const stepMedian = config.temperature === 0 && rounds.length >= 3 ? stepMedianMs(rounds.map((r) => r.stepMs)) : null;
    const decodeStepMs = medianDecodeStep(rounds.map((r) => r.decodeSteps));
    return {
      batch,
      kmax,
      policy: name,
      metrics: median.metrics,
      roundThroughputs: rounds.map((r) => r.metrics.throughput),
      roundDecodeThroughputs: rounds.map((r) => r.metrics.decodeThroughput ?? NaN),
      roundStepCosts: rounds.map((r) => ({ steps: r.metrics.steps, stepTime: r.metrics.stepTime })),
      ...(options.clock ? { modelledThroughput: median.modelledMs > 0 ? median.metrics.generatedTokens / (median.modelledMs / 1000) : 0 } : {}),
      ...(stepMedian ? { stepMedianThroughput: median.metrics.generatedTokens / (stepMedian / 1000) } : {}),
      ...(decodeStepMs ? { decodeStepMs } : {}),
      sameTokens,
    };
  });
  // Outputs that differ are explained: float ties of the target, or a real difference.
  for (const row of rows) {
    if (row.sameTokens !== false) continue;
    const differing = runs.get(row.policy)!.find((r) => !sameOutputs(r.tokens, reference))!;
    const explained = await explainDifferences(setup.pair.target, setup.workload.map((w) => w.promptTokens), reference, differing.tokens);
    if (explained) row.divergence = { ...explained.first, id: setup.workload[explained.first.request].id, requests: explained.requests };
  }
  return rows;
}

/** The median of every round's decode steps, each half on its own; null with none. */
function medianDecodeStep(rounds: readonly DecodeStepTimes[]): { model: number; engine: number } | null {
  const model = rounds.flatMap((r) => r.modelMs);
  if (model.length === 0) return null;
  return { model: percentile(model, 50), engine: percentile(rounds.flatMap((r) => r.engineMs), 50) };
}

function sameOutputs(a: readonly number[][], b: readonly number[][]): boolean {
  return a.length === b.length && a.every((tokens, i) => firstDifference(tokens, b[i]) === -1);
}
