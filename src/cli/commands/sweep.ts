// `echo-studio sweep`: several policies side by side on one loaded pair, per batch size, policies
// interleaved round by round, with each one's ratio to a baseline and a check that greedy runs
// emitted the same tokens under every policy.
//   echo-studio sweep --policies ar,static,eagle2,echo --batches 1,8,32 [--kmax 16,64,256]
//     [--domain code | --prompts FILE] [--requests 16] [--max-new-tokens 64] [--rounds 3]
//     [--baseline static] [--control] [--json] [--csv FILE]
import { InvalidArgumentError, Option, type Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { checkOutputPaths, writeAtomically } from '../output-files.js';
import { type BudgetExplanation, checkSweep, clockFromSpec, draftWindows, fitKnee, modelFolders, formatPairedRatio, type Interleaving, INTERLEAVINGS, loadHardwareProfile, loadRunSetup, pairedRatio, type PairedRatio, parseSweepEntry, profileMismatches, roundRatios, runSweep, slotsForRounds, splitRepeat, suggestKmax, SweepExplainer, type SweepRow } from '../../engine/index.js';
import { atBaselineStepCost } from '../../shared/step-costs.js';
import type { StepEvent } from '../../shared/events.js';
import { defaultDraftPrecision, GATED_POLICIES, POLICY_NAMES } from '../../shared/config.js';
import { studyKmax } from '../../shared/knobs.js';
import { clockCosts, priceProfileFromFlags, runConfigFromFlags, type RunFlags } from '../run-config.js';
import { integer, knobListOption, knobOption, list, withRuntimeOptions, withWorkloadOptions } from '../flags.js';

/** The workload, model, gate and runtime flags are run's; the rest say what to sweep. */
export interface SweepFlags
  extends Pick<
    RunFlags,
    'domain' | 'prompts' | 'requests' | 'maxNewTokens' | 'temperature' | 'seed' | 'draft' | 'target' | 'draftKind' | 'profile' | 'confidence' | 'cuts' | 'draftCost' | 'threads' | 'provider' | 'draftPrecision' | 'targetPrecision' | 'draftWindow' | 'json'
  > {
  policies: string[];
  batches: number[];
  /** One K_max for every batch size, or one per batch size; default max(16, 8 × batch). */
  kmax?: number[];
  /** A `profile-hw --out` file: K_max from its knee when --kmax is not given; the curves of `--hw measured` or `curves`. */
  hwProfile?: string;
  /** Another profile of this machine that prices the runs while --hw-profile's curves time them (run-config priceProfileFromFlags). */
  priceProfile?: string;
  /** Also time every run on this modelled clock (`run --hw`). */
  hw?: string;
  baseline?: string;
  /** Also run the baseline a second time (`BASELINE#2`) in every round: an A/A control. */
  control?: boolean;
  rounds: number;
  /** How a round's runs share the machine: one after another, or taking turns step by step (default, unless the entries' draft windows differ). */
  interleave?: Interleaving;
  csv?: string;
  /** Also write every step of every run as CSV (stepsCsv). */
  steps?: string;
  /** Replace an existing --csv or --steps file. */
  force?: boolean;
}

/**
 * A sweep row with its ratios to the baseline policy at the same batch size, each the median over
 * rounds of the ratio within a round (paired: both runs close in time), with its range.
 */
export interface SweepReportRow extends SweepRow {
  /** Throughput ÷ the baseline's (wall clock). */
  vsBaseline: PairedRatio;
  /** Decode throughput ÷ the baseline's (prefill left out). */
  decodeVsBaseline: PairedRatio;
  /** The wall ratio if each of this row's steps had cost what the baseline's did (atBaselineStepCost): what its schedule alone buys. */
  scheduleVsBaseline: PairedRatio;
  /** Greedy, 3 rounds or more: step-median throughput ÷ the baseline's (see SweepRow.stepMedianThroughput). */
  stepMedianVsBaseline?: number;
  /** With --hw: modelled throughput ÷ the baseline's (no machine noise in a greedy run). */
  modelledVsBaseline?: number;
  /**
   * With --json, greedy runs: where the first round's verification budget went, with the oracle
   * and random gate bounds on the same steps (docs/explain.md), priced on the modelled clock with
   * --hw, else on the wall clock (see the report's verifySlopes).
   */
  explanation?: BudgetExplanation;
}

export interface SweepReport {
  baseline: string;
  interleave: Interleaving;
  /** With --hw: what the modelled clock models. */
  clock?: string;
  rows: SweepReportRow[];
  /** Explained on the wall clock: per batch size, the verification forward's fitted ms per verified token that prices the bounds. */
  verifySlopes?: Record<number, number>;
}

/**
 * K_max per batch size from the flag: one value for all, one per batch; else from a measured knee
 * (the knee while the batch is below it, then batch + knee: every root plus a knee's worth of draft
 * tokens, as the ECHO bench does); else max(16, 8 × batch).
 */
export function kmaxOf(flags: Pick<SweepFlags, 'batches' | 'kmax'>, knee?: number): (batch: number) => number {
  const { batches, kmax } = flags;
  if (kmax === undefined) return knee === undefined ? studyKmax : (batch) => suggestKmax({ kmax: knee }, batch);
  if (kmax.length === 1) return () => kmax[0];
  if (kmax.length !== batches.length) throw new Error(`--kmax lists ${kmax.length} values for ${batches.length} batch sizes: give one, or one per batch`);
  return (batch) => kmax[batches.indexOf(batch)];
}

/** A sweep's step: which run it belongs to, and the step. */
type SweepStep = (run: { batch: number; entry: string; round: number }, event: StepEvent) => void;

export async function executeSweep(sweepFlags: SweepFlags, log?: (line: string) => void, onStep?: SweepStep): Promise<SweepReport> {
  const baseline = sweepFlags.baseline ?? (sweepFlags.policies.includes('static') ? 'static' : sweepFlags.policies[0]);
  if (!sweepFlags.policies.includes(baseline)) throw new Error(`--baseline ${baseline} is not among --policies ${sweepFlags.policies.join(',')}`);
  const control = `${baseline}#2`;
  const flags = sweepFlags.control && !sweepFlags.policies.includes(control) ? { ...sweepFlags, policies: [...sweepFlags.policies, control] } : sweepFlags;
  const entries = flags.policies.map(parseSweepEntry);
  const hwProfile = flags.hwProfile === undefined ? undefined : loadHardwareProfile(flags.hwProfile);
  const clock = flags.hw === undefined ? undefined : clockFromSpec(flags.hw, hwProfile);
  // On a modelled clock the device's knee and prices; on the wall clock the hardware profile's.
  const costs = clockCosts(flags, { clock, log, profile: hwProfile, priceProfile: priceProfileFromFlags(flags) });
  const knee = costs.knee ?? (hwProfile === undefined ? undefined : fitKnee(hwProfile.target).kmax);
  if (knee !== undefined && costs.knee === undefined) log?.(`K_max from the hardware profile's knee, ${knee} tokens${flags.kmax ? ' (--kmax given: not used)' : ''}`);
  if (hwProfile !== undefined) {
    const run = { batch: Math.max(...flags.batches), draftPrecision: flags.draftPrecision ?? defaultDraftPrecision(flags.provider), targetPrecision: flags.targetPrecision, draftWindow: flags.draftWindow, draftKind: flags.draftKind, models: modelFolders({ draftDir: flags.draft, targetDir: flags.target, draftKind: flags.draftKind }) };
    for (const note of profileMismatches(hwProfile, run)) log?.(note);
  }
  const kmax = kmaxOf(flags, knee);
  const interleave = flags.interleave ?? (draftWindows(flags.policies).length > 1 ? 'runs' : 'steps');
  if (flags.interleave === undefined && interleave === 'runs') log?.('the entries give the draft different windows, so their runs take turns whole, one after another (--interleave runs)');
  const plan = { policies: flags.policies, batches: flags.batches, kmax, rounds: flags.rounds, interleave };
  checkSweep(plan);
  if (interleave === 'steps') log?.(`a round's runs take turns step by step, each on its own KV slots: ${slotsForRounds(plan)} per model`);
  // Load once for the largest batch and budget; a gated policy in the list resolves the τ_d (from
  // --profile, or a warm-up) that every gated policy then shares.
  const gated = entries.find((e) => (GATED_POLICIES as readonly string[]).includes(e.policy));
  const config = runConfigFromFlags({
    ...flags,
    draftCost: costs.draftCost,
    ...(costs.verifyCost ? { verifyCost: costs.verifyCost } : {}),
    policy: (gated ?? entries[0]).policy,
    batch: Math.max(...flags.batches),
    kmax: Math.max(...flags.batches.map(kmax)),
  });
  const setup = await loadRunSetup(config, {
    threads: flags.threads,
    slots: slotsForRounds(plan),
    provider: flags.provider,
    draftPrecision: flags.draftPrecision,
    measureDraftCost: costs.measureDraftCost,
    log,
  });
  try {
    // --json on greedy runs also explains each entry's first round (A/A controls left out).
    const explainer = flags.json && config.temperature === 0 ? new SweepExplainer({ maxNewTokens: config.maxNewTokens, kmax, clock, skip: (entry) => parseSweepEntry(entry).repeats !== undefined }) : null;
    const hooks = explainer?.hooks();
    const steps: SweepStep | undefined = hooks?.onStep && onStep ? (run, event) => (hooks.onStep!(run, event), onStep(run, event)) : (hooks?.onStep ?? onStep);
    const rows = await runSweep(setup, { ...plan, clock, log, ...hooks, ...(steps ? { onStep: steps } : {}) });
    const explained = explainer ? flags.batches.flatMap((batch) => explainer.explain(batch)) : [];
    const withExplanations = withRatios(rows, baseline).map((row) => {
      const x = explained.find((e) => e.batch === row.batch && e.policy === row.policy);
      return x ? { ...row, explanation: x.explanation } : row;
    });
    return {
      baseline,
      interleave,
      ...(clock ? { clock: clock.label } : {}),
      rows: withExplanations,
      ...(explainer && !clock ? { verifySlopes: explainer.verifySlopes } : {}),
    };
  } finally {
    await setup.release();
  }
}

function withRatios(rows: SweepRow[], baseline: string): SweepReportRow[] {
  return rows.map((row) => {
    const base = rows.find((r) => r.batch === row.batch && r.policy === baseline)!;
    return {
      ...row,
      vsBaseline: pairedRatio(row.roundThroughputs, base.roundThroughputs),
      decodeVsBaseline: pairedRatio(row.roundDecodeThroughputs, base.roundDecodeThroughputs),
      scheduleVsBaseline: roundRatios(row.roundStepCosts.map((costs, i) => atBaselineStepCost(costs, base.roundStepCosts[i]))),
      ...(row.stepMedianThroughput !== undefined && base.stepMedianThroughput ? { stepMedianVsBaseline: row.stepMedianThroughput / base.stepMedianThroughput } : {}),
      ...(row.modelledThroughput !== undefined && base.modelledThroughput ? { modelledVsBaseline: row.modelledThroughput / base.modelledThroughput } : {}),
    };
  });
}

interface Column {
  header: string;
  width: number;
  cell: (row: SweepReportRow) => string;
}

/** The table's columns: a ratio over several rounds reads "median (min–max)", hence wider. */
function sweepColumns(report: SweepReport, rounds: number): Column[] {
  const ratioWidth = rounds > 1 ? 23 : 10;
  const ms = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2));
  return [
    { header: 'tok/s', width: 9, cell: (r) => r.metrics.throughput.toFixed(1) },
    { header: `÷ ${report.baseline}`, width: ratioWidth + 2, cell: (r) => formatPairedRatio(r.vsBaseline) },
    { header: 'decode ÷', width: ratioWidth, cell: (r) => formatPairedRatio(r.decodeVsBaseline) },
    { header: 'sched ÷', width: 9, cell: (r) => (Number.isFinite(r.scheduleVsBaseline.median) ? r.scheduleVsBaseline.median.toFixed(3) : '-') },
    ...(report.rows.some((r) => r.stepMedianVsBaseline !== undefined) ? [{ header: 'step-median ÷', width: 15, cell: (r: SweepReportRow) => r.stepMedianVsBaseline?.toFixed(3) ?? '-' }] : []),
    ...(report.clock !== undefined ? [{ header: 'modelled ÷', width: 12, cell: (r: SweepReportRow) => r.modelledVsBaseline?.toFixed(3) ?? '-' }] : []),
    { header: 'MAT', width: 7, cell: (r) => r.metrics.meanAcceptedTokens.toFixed(2) },
    { header: 'util', width: 7, cell: (r) => r.metrics.draftUtilisation.toFixed(2) },
    { header: 'verified/step', width: 15, cell: (r) => r.metrics.verifiedTokensPerStep.toFixed(1) },
    { header: 'steps', width: 7, cell: (r) => String(r.metrics.steps) },
    { header: 'draft ms', width: 10, cell: (r) => ms(r.metrics.stepTime?.draftMs) },
    { header: 'verify ms', width: 11, cell: (r) => ms(r.metrics.stepTime?.verifyMs) },
    { header: 'prefill ms', width: 12, cell: (r) => ms(r.metrics.stepTime?.prefillMs) },
    { header: 'onnx|engine ms', width: 16, cell: (r) => (r.decodeStepMs ? `${r.decodeStepMs.model.toFixed(2)}|${r.decodeStepMs.engine.toFixed(2)}` : '-') },
  ];
}

export function formatSweep(report: SweepReport): string {
  const lines: string[] = [];
  for (const batch of [...new Set(report.rows.map((r) => r.batch))]) {
    const rows = report.rows.filter((r) => r.batch === batch);
    const rounds = rows[0].vsBaseline.rounds;
    const about = rounds > 1 ? `, ${rounds} rounds (tok/s: the median round; ratios: the median of the rounds' ratios, and their range)` : '';
    const sharing = report.interleave === 'steps' ? ', runs taking turns step by step' : ', one run after another';
    lines.push(`batch ${batch}, K_max ${rows[0].kmax}, ${rows[0].metrics.requests} requests${sharing}${about}`);
    const columns = sweepColumns(report, rounds);
    const nameWidth = Math.max(10, ...rows.map((r) => r.policy.length + 2));
    lines.push('policy'.padEnd(nameWidth) + columns.map((c) => c.header.padStart(c.width)).join(''));
    for (const r of rows) lines.push(r.policy.padEnd(nameWidth) + columns.map((c) => c.cell(r).padStart(c.width)).join(''));
    lines.push(
      `(draft, verify, prefill ms: wall time per step, the median round; onnx|engine ms: the median decode step of every round, onnxruntime's calls | the engine's work around them; sched: the wall ratio if every step had cost what ${report.baseline}'s did, prefill as measured${report.clock !== undefined ? `; modelled: ${report.clock}` : ''})`,
    );
    for (const r of rows.filter((row) => splitRepeat(row.policy).repeated === report.baseline && row.policy !== report.baseline)) {
      lines.push(
        `A/A control: ${r.policy} is ${report.baseline} run again; its ratio, ${formatPairedRatio(r.vsBaseline)}${r.stepMedianVsBaseline !== undefined ? ` (step-median ${r.stepMedianVsBaseline.toFixed(3)})` : ''}, is how far two identical runs drift apart in this sweep: wall ratios as close to 1 are noise`,
      );
    }
    const differing = rows.filter((r) => r.sameTokens === false);
    const ties = differing.filter((r) => r.divergence?.tie === true);
    const real = differing.filter((r) => r.divergence?.tie !== true);
    if (rows[0].sameTokens === null) lines.push('sampled (temperature > 0): outputs differ by design; each is lossless in distribution');
    else if (differing.length === 0) lines.push(`every policy emitted the same tokens as ${rows[0].policy} (lossless)`);
    else {
      if (real.length === 0) lines.push(`every policy emitted the same tokens as ${rows[0].policy} except at float ties of the target (lossless up to rounding):`);
      else lines.push(`NOT LOSSLESS: ${real.map((r) => r.policy).join(', ')} emitted other tokens than ${rows[0].policy}`);
      for (const r of [...real, ...ties]) lines.push(`  ${r.policy}: ${describeDivergence(r)}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

const CSV_COLUMNS = ['batch', 'kmax', 'policy', 'throughput', 'vs_baseline', 'vs_baseline_min', 'vs_baseline_max', 'decode_throughput', 'decode_vs_baseline', 'mat', 'utilisation', 'verified_per_step', 'steps', 'generated_tokens', 'wall_ms', 'same_tokens', 'draft_ms_per_step', 'verify_ms_per_step', 'prefill_ms_per_step', 'other_ms_per_step', 'modelled_throughput', 'modelled_vs_baseline', 'step_median_throughput', 'step_median_vs_baseline', 'sched_vs_baseline', 'decode_step_onnx_ms', 'decode_step_engine_ms'];

export function sweepCsv(report: SweepReport): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const r of report.rows) {
    const m = r.metrics;
    lines.push(
      [r.batch, r.kmax, r.policy, m.throughput, r.vsBaseline.median, r.vsBaseline.min, r.vsBaseline.max, m.decodeThroughput ?? '', r.decodeVsBaseline.median, m.meanAcceptedTokens, m.draftUtilisation, m.verifiedTokensPerStep, m.steps, m.generatedTokens, m.wallMs, r.sameTokens ?? '', m.stepTime?.draftMs ?? '', m.stepTime?.verifyMs ?? '', m.stepTime?.prefillMs ?? '', m.stepTime?.otherMs ?? '', r.modelledThroughput ?? '', r.modelledVsBaseline ?? '', r.stepMedianThroughput ?? '', r.stepMedianVsBaseline ?? '', Number.isFinite(r.scheduleVsBaseline.median) ? r.scheduleVsBaseline.median : '', r.decodeStepMs?.model ?? '', r.decodeStepMs?.engine ?? '']
        .map(String)
        .join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}

const STEP_COLUMNS = ['batch', 'entry', 'round', 'step', 'requests', 'verified_tokens', 'draft_forwards', 'draft_rows', 'draft_ms', 'pack_ms', 'verify_ms', 'commit_ms', 'total_ms', 'model_ms', 'prefill_ms'];

/**
 * Every step of every run of a sweep, one CSV line each (rounds from 1): what a row's medians and
 * ratios are made of, for pairing a run's steps with another's (bench/step-pairs.ts).
 */
export function stepsCsv(): { add: SweepStep; text: () => string } {
  const lines = [STEP_COLUMNS.join(',')];
  return {
    add: ({ batch, entry, round }, e) => {
      const t = e.timings;
      const cells = [batch, entry, round + 1, e.step, e.requests.length, e.verifiedTokens, e.draftRows?.length ?? 0, (e.draftRows ?? []).reduce((a, b) => a + b, 0), t.draftMs, t.packMs, t.verifyMs, t.commitMs, t.totalMs, t.modelMs ?? 0, t.prefillMs ?? 0];
      lines.push(cells.join(','));
    },
    text: () => `${lines.join('\n')}\n`,
  };
}

export function register(program: Command): void {
  const command = program
    .command('sweep')
    .description('run several policies side by side on one loaded pair, per batch size, and compare them to a baseline')
    .addOption(
      new Option('--policies <list>', `policies to compare (${POLICY_NAMES.join(', ')}); one may run its draft with another attention window than --draft-window's: echo@4:64 (SINK:RECENT rows) or echo@whole; ENTRY#2 runs an entry again (see --control)`).argParser(list('--policies', (p) => p)).default(['ar', 'static', 'eagle2', 'echo'], 'ar,static,eagle2,echo'),
    )
    .addOption(new Option('--batches <list>', 'batch sizes').argParser(list('--batches', integer('--batches', 1))).default([1, 8], '1,8'))
    .addOption(knobListOption('kmax', 'K_max: one value for every batch size, or one per batch size (default: from --hw-profile, else max(16, 8 × batch))'))
    .option('--hw-profile <file>', 'a `profile-hw --out` file: without --kmax, K_max from this machine’s knee (the knee, or batch + knee once the batch passes it); without --hw, echo, dense and fixed priced by its measured curves; the curves of --hw measured or curves')
    .option('--hw <spec>', 'also time every run on a modelled clock, as run --clock modelled --hw: HARDWARE[:MODEL], measured or curves (with --hw-profile); its ratios carry no machine noise and, like the decode ratio, leave prefill out. The device then also prices the runs: K_max defaults to its knee and the draft price to its own (explicit --kmax and --draft-cost win)')
    .option('--baseline <policy>', 'the policy ratios are taken against (default static if listed, else the first)')
    .option('--control', 'also run the baseline again in every round, as BASELINE#2 (an A/A control): its ratio to the baseline is how far two identical runs drift apart, the noise to read the other ratios against; any entry can be repeated so, e.g. echo#2')
    .option('--rounds <n>', 'interleaved repetitions, the order rotated each round (see --interleave); tok/s is the median round, a ratio the median of the rounds\' ratios', integer('--rounds', 1), 1)
    .addOption(
      new Option('--interleave <how>', 'how a round\'s runs share the machine: steps (all at once, taking turns one step each, each timing only its own steps: the machine\'s drift falls on all alike; needs batch × entries KV slots; the default) or runs (one whole run after another; the default when entries give the draft different windows)')
        .choices(INTERLEAVINGS),
    );
  withRuntimeOptions(withWorkloadOptions(command, 16));
  knobOption(command, 'profile', { help: 'echo/dense/fixed: calibration profile JSON (from `echo-studio calibrate`); default: a warm-up on the first 24 prompts' });
  knobOption(command, 'confidence', { help: 'echo/dense/fixed: path-prob or path-margin (default: the profile’s, or the warm-up’s pick)' });
  knobOption(command, 'cuts');
  knobOption(command, 'priceProfile');
  knobOption(command, 'draftCost', { help: 'echo/dense/fixed: a draft forward’s price as a share of a target forward, or auto (see run --help)' });
  command
    .option('--json', 'print the rows as one JSON object')
    .option('--csv <file>', 'also write the rows as CSV')
    .option('--steps <file>', 'also write every step of every run as CSV (batch, entry, round, step, its time split by phase, onnxruntime\'s share and its prefill), to pair one run\'s steps with another\'s')
    .option('--force', 'replace the --csv or --steps file if it exists')
    .action(async (flags: SweepFlags) => {
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const inputs = [flags.prompts ? { flag: '--prompts', path: flags.prompts } : undefined, flags.profile ? { flag: '--profile', path: flags.profile } : undefined, flags.hwProfile ? { flag: '--hw-profile', path: flags.hwProfile } : undefined, flags.priceProfile ? { flag: '--price-profile', path: flags.priceProfile } : undefined];
      const outputs = [flags.csv ? { flag: '--csv', path: flags.csv } : undefined, flags.steps ? { flag: '--steps', path: flags.steps } : undefined].filter((o) => o !== undefined);
      if (outputs.length > 0) checkOutputPaths(outputs, { force: flags.force, inputs });
      const steps = flags.steps ? { path: flags.steps, csv: stepsCsv() } : null;
      const report = await executeSweep(flags, log, steps?.csv.add);
      const csv = flags.csv;
      if (csv) await writeAtomically(csv, (temporary) => writeFileSync(temporary, sweepCsv(report)));
      if (steps) await writeAtomically(steps.path, (temporary) => writeFileSync(temporary, steps.csv.text()));
      process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : `${formatSweep(report)}\n`);
    });
}

/** One line on where a policy's output parted from the baseline's, and whether the target tied there. */
function describeDivergence(row: SweepRow): string {
  const d = row.divergence;
  if (!d) return 'outputs differ';
  const where = `${d.requests === 1 ? '1 request differs' : `${d.requests} requests differ`}; ${d.id} from token ${d.position}, where the target's two best logits are ${d.gap.toExponential(1)} apart`;
  return d.tie
    ? `${where}: a tie within float rounding, which differently packed forwards may round either way`
    : `${where}: the target preferred the baseline's token, so this is a real difference`;
}
