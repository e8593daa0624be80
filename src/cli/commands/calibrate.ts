// `echo-studio calibrate`: warm-up runs on a draft/target pair collect per-depth layer
// confidences labelled accepted or rejected; the profile it writes holds per-depth AUC,
// histograms, the sweet spots (AUC_d > δ) and τ_d, with sample counts.
//   echo-studio calibrate (--domain D | --prompts FILE) [--draft DIR --target DIR] [--delta δ]
//     [--tau-rule budget|separation] [--significance 0.05] [--depth 8] [--requests 24] [--batch 8] [--max-new-tokens 32]
//     [--target-precision float32|int8|int4] --out profile.json
import { InvalidArgumentError, type Command } from 'commander';
import { calibrateFolders, CLEARLY_BETTER_AUC, DEFAULT_DELTA, DEFAULT_MIN_SAMPLES, DEFAULT_SIGNIFICANCE, type EchoProfile, formatServingHandOff, type PromptRecord, promptSource, readServingPair, Refusal, resolveModelDirs, saveProfile, servingHandOff, signalAucs, TAU_RULES, type TauRule } from '../../engine/index.js';
import { checkOutputPaths, writeAtomically } from '../output-files.js';
import type { AttentionWindow, ConfidenceSignal, WeightPrecision } from '../../shared/config.js';
import { confidenceFlag, integer, knobOption, knobOptions, TARGET_PRECISION_HELP, withPairFolders } from '../flags.js';

export interface CalibrateFlags {
  domain?: string;
  prompts?: string;
  draft?: string;
  target?: string;
  delta: number;
  tauRule?: TauRule;
  significance?: number;
  depth: number;
  requests: number;
  batch: number;
  maxNewTokens: number;
  threads?: number;
  draftPrecision?: WeightPrecision;
  /** The target's weights in the warm-up (default float32); the profile records it. */
  targetPrecision?: WeightPrecision;
  draftWindow?: AttentionWindow;
  /** The signal the profile keeps (every signal is measured): default auto, the clearly better separating one (autoSignal). */
  confidence?: ConfidenceSignal | 'auto';
  out: string;
  /** Replace an existing --out file. */
  force?: boolean;
  json?: boolean;
}

export interface CalibrateReport {
  profile: EchoProfile;
  seconds: number;
  out: string;
}

/** The pair named by flags, or the bundled demo pair. */
export function pairDirs(flags: { draft?: string; target?: string }, root?: string): { draftDir: string; targetDir: string } {
  if ((flags.draft === undefined) !== (flags.target === undefined)) {
    throw new Error('give both --draft and --target, or neither for the bundled pair');
  }
  return resolveModelDirs({ draftDir: flags.draft, targetDir: flags.target }, root);
}

/** The first `count` prompts of --prompts FILE or a bundled --domain (never repeated: a copy teaches nothing). */
export async function calibrationPrompts(flags: { domain?: string; prompts?: string }, count: number, root?: string): Promise<PromptRecord[]> {
  if ((flags.domain === undefined) === (flags.prompts === undefined)) throw new Error('give exactly one of --domain NAME or --prompts FILE');
  return promptSource({ domain: flags.domain, promptsFile: flags.prompts }, { limit: count, root });
}

export async function executeCalibrate(flags: CalibrateFlags, log?: (line: string) => void): Promise<CalibrateReport> {
  const start = performance.now();
  checkOutputPaths([{ flag: '--out', path: flags.out }], { force: flags.force, inputs: [flags.prompts ? { flag: '--prompts', path: flags.prompts } : undefined] });
  const { draftDir, targetDir } = pairDirs(flags);
  const source = flags.prompts ?? `the ${flags.domain} prompts`;
  const records = await calibrationPrompts(flags, flags.requests);
  if (records.length < flags.requests) log?.(`note: ${source} holds ${records.length} prompt${records.length === 1 ? '' : 's'}; calibrating on ${records.length === 1 ? 'it' : 'those'} once each, not ${flags.requests}`);
  const profile = await calibrateFolders(
    {
      draftDir,
      targetDir,
      records,
      source,
      domain: flags.prompts ?? flags.domain ?? 'unknown',
      depth: flags.depth,
      batch: flags.batch,
      maxNewTokens: flags.maxNewTokens,
      delta: flags.delta,
      tauRule: flags.tauRule,
      significance: flags.significance ?? DEFAULT_SIGNIFICANCE,
      keep: flags.confidence ?? 'auto',
      load: { threads: flags.threads, draftPrecision: flags.draftPrecision, targetPrecision: flags.targetPrecision, draftWindow: flags.draftWindow },
    },
    log,
  );
  await writeAtomically(flags.out, (temporary) => saveProfile(temporary, profile));
  return { profile, seconds: (performance.now() - start) / 1000, out: flags.out };
}

/**
 * The calibration as serving engines take it, for the pair calibrated (its real folders): both
 * loads' command lines, or one line saying why no engine can take the pair.
 */
export function servingText(profile: EchoProfile, dirs: { draftDir: string; targetDir: string }): string {
  let pair;
  try {
    pair = readServingPair(dirs.draftDir, dirs.targetDir);
  } catch (err) {
    if (err instanceof Refusal) return `no hand-off: ${err.message}`;
    throw err;
  }
  return (['low', 'high'] as const).map((load) => formatServingHandOff(servingHandOff(profile, { load, pair }))).join('\n');
}

/** A τ below every sample (TPR = FPR = 1, J = 0): the gate never truncates. */
function passesAll(d: EchoProfile['depths'][number] | undefined): boolean {
  return d !== undefined && d.tau !== null && d.youdenJ === 0;
}

export function formatProfile(profile: EchoProfile): string {
  const lines = [`calibrated with the target in ${profile.targetPrecision} weights`, 'depth  accepted  rejected    AUC       τ_d  weighed vs  sweet spot'];
  for (const d of profile.depths) {
    const auc = d.auc === null ? '  n/a' : d.auc.toFixed(3);
    const tau = d.tau === null ? '  n/a' : passesAll(d) ? 'none' : d.tau.toPrecision(3);
    const versus = d.alternative === null || d.alternative === undefined ? 'n/a' : d.alternative.toFixed(3);
    lines.push(
      `${String(d.depth).padStart(5)}  ${String(d.accepted).padStart(8)}  ${String(d.rejected).padStart(8)}  ${auc.padStart(6)}  ${tau.padStart(8)}  ${versus.padStart(10)}  ${d.sweetSpot ? 'yes' : ''}`,
    );
  }
  lines.push(
    profile.tauRule === 'budget'
      ? 'τ rule budget: each τ_d truncates only the confidences accepted less often than the next layer (the acceptance rate in "weighed vs"), what a released token buys'
      : "τ rule separation: each τ_d maximises Youden's J (weighed against the depth's own acceptance rate)",
  );
  if (profile.significance < 1) {
    lines.push(
      `a τ_d must truncate confidences accepted less often than that beyond chance (one-sided binomial test at ${profile.significance}); where none does, τ_d passes everything`,
    );
  }
  const thin = profile.depths.filter((d) => d.auc === null && d.accepted + d.rejected > 0);
  if (thin.length > 0) {
    lines.push(
      `too few ${thin.every((d) => d.rejected < d.accepted) ? 'rejected' : 'accepted or rejected'} samples for an AUC at depth ${thin.map((d) => d.depth).join(', ')} (at least ${DEFAULT_MIN_SAMPLES} of each): no τ there; more warm-up prompts (--requests) give them one`,
    );
  }
  const taus = Object.entries(profile.taus)
    .map(([d, t]) => `d${d}:${t}${passesAll(profile.depths.find((e) => e.depth === Number(d))) ? ' (no cut beat chance: passes all)' : ''}`)
    .join(' ');
  lines.push(`D_sig (AUC > ${profile.delta}, plus root and target depth above chance): ${taus}`);
  const signals = profile.signals ?? [];
  const measured = signalAucs(profile);
  lines.push(`confidence signal: ${profile.confidence}${measured ? ` (mean AUC over depths: ${measured})` : ''}`);
  const kept = signals.find((s) => s.confidence === profile.confidence)?.meanAuc ?? null;
  const better = signals.find((s) => s.meanAuc !== null && kept !== null && s.meanAuc > kept + CLEARLY_BETTER_AUC);
  if (better) {
    lines.push(
      `${better.confidence} separates accepted from rejected better on this pair; --confidence ${better.confidence} (or auto) keeps it`,
    );
  }
  return lines.join('\n');
}

function keepFlag(value: string): ConfidenceSignal | 'auto' {
  if (value === 'auto') return value;
  try {
    return confidenceFlag(value);
  } catch {
    throw new InvalidArgumentError(`--confidence takes path-prob, path-margin or auto, got "${value}"`);
  }
}

function significanceFlag(value: string): number {
  const p = Number(value);
  if (value.trim() === '' || !(p > 0 && p <= 1)) throw new InvalidArgumentError(`--significance takes a level in (0, 1], got "${value}"`);
  return p;
}

function tauRuleFlag(value: string): TauRule {
  if (!(TAU_RULES as readonly string[]).includes(value)) throw new InvalidArgumentError(`--tau-rule takes ${TAU_RULES.join(' or ')}, got "${value}"`);
  return value as TauRule;
}

function delta(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !(n >= 0.5 && n < 1)) throw new InvalidArgumentError(`--delta must be an AUC bar in [0.5, 1), got "${value}"`);
  return n;
}

export function register(program: Command): void {
  const command = program
    .command('calibrate')
    .description('find the sweet-spot depths and thresholds τ_d of a draft/target pair on warm-up prompts; write a profile');
  knobOption(command, 'domain', { help: 'bundled prompt set (code, prose, math)' });
  knobOption(command, 'promptsFile');
  withPairFolders(command)
    .option('--delta <x>', 'sweet-spot bar: keep depths with AUC_d > δ', delta, DEFAULT_DELTA)
    .option(
      '--tau-rule <rule>',
      "how τ_d is chosen: budget (default; truncate only confidences accepted less often than the next layer, what the released budget buys) or separation (the paper's: maximise Youden's J)",
      tauRuleFlag,
    )
    .option(
      '--significance <p>',
      `a τ_d counts only if its truncated warm-up samples are accepted less often than what their budget buys beyond chance, at this level (one-sided binomial test; default ${DEFAULT_SIGNIFICANCE}); 1 turns the test off`,
      significanceFlag,
    )
    .option('--depth <n>', 'layers to calibrate (depths 0 … n−1; the last is the target depth)', integer('--depth', 1), 8);
  knobOption(command, 'requests', { help: 'warm-up prompts', default: 24 });
  knobOption(command, 'batch', { help: 'warm-up requests in flight at once', default: 8 });
  knobOption(command, 'maxNewTokens', { help: 'tokens generated per warm-up prompt', default: 32 });
  knobOptions(command, ['threads', 'draftPrecision']);
  knobOption(command, 'targetPrecision', {
    help: `${TARGET_PRECISION_HELP}. Calibrate on the target the runs gating with this profile load: its acceptances, so the τ_d, are of that target; the profile records it, and a run on other weights is told`,
  });
  knobOption(command, 'draftWindow');
  command
    .option('--confidence <signal>', "the signal the profile keeps; both are measured and their mean AUC printed: auto (default: the higher mean AUC; the paper's path-prob unless another is more than 0.01 higher), path-prob or path-margin", keepFlag)
    .requiredOption('--out <file>', 'where to write the profile JSON')
    .option('--force', 'replace the --out file if it exists')
    .option('--json', 'print the profile JSON instead of a table')
    .action(async (flags: CalibrateFlags) => {
      const log = flags.json ? undefined : (line: string) => process.stderr.write(`${line}\n`);
      const report = await executeCalibrate(flags, log);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(report.profile)}\n`);
        return;
      }
      process.stdout.write(`${formatProfile(report.profile)}\nwrote ${report.out} in ${report.seconds.toFixed(1)} s\n\nfor serving engines:\n${servingText(report.profile, pairDirs(flags))}\n`);
    });
}
