// `echo-studio profile-hw`: measure target and draft forward time against packed token count on
// this machine, fit the paper's T_ver(K) ≈ T_ar (1 + γ [K − K_max]^+) to find the knee where cost
// turns linear, and suggest K_max. The JSON it writes feeds `run --clock modelled --hw measured`.
//   echo-studio profile-hw [--draft DIR --target DIR] [--max-tokens 512] [--repeats 15]
//     [--slots 16] [--context 64[,160]] [--threads N] [--provider cpu|cuda] [--draft-precision int8|float32]
//     [--target-precision float32|int8|int4] [--out hw.json] [--json]
import { DEFAULT_TOKEN_COUNTS, draftRowCost, fitKnee, type HardwareProfile, HardwareProfileSchema, heldWeightBytes, isHeadFolder, type KneeFit, loadHead, loadModel, measureDraftAfterTarget, measureForwardCurves, openModelFolder, pairThreads, parseModelConfig, readConfigJson, rowsNeeded, spreadCurve, suggestKmax, type TimedPoint } from '../../engine/index.js';
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { defaultDraftPrecision, formatAttentionWindow, type AttentionWindow, type WeightPrecision } from '../../shared/config.js';
import { pairDirs } from './calibrate.js';
import { shownPath } from './reproduce.js';
import { checkOutputPaths, writeAtomically } from '../output-files.js';
import { integer, knobOption, list, TARGET_PRECISION_HELP, withPairFolders } from '../flags.js';

export interface ProfileHwFlags {
  draft?: string;
  target?: string;
  maxTokens: number;
  repeats: number;
  slots: number;
  /** Committed rows per request: one context, or several, rising (the first is the profile's base). */
  context: number | number[];
  threads?: number;
  provider: 'cpu' | 'cuda';
  /** The draft's weights; as runs load it unless told (int8 on CPU). */
  draftPrecision?: WeightPrecision;
  /** The target's weights (default float32, as runs load it unless told). */
  targetPrecision?: WeightPrecision;
  draftWindow?: AttentionWindow;
  out?: string;
  /** Replace an existing --out file. */
  force?: boolean;
  json?: boolean;
}

export interface ProfileHwReport {
  profile: HardwareProfile;
  target: KneeFit;
  draft: KneeFit;
  /** Suggested K_max per batch size (suggestKmax): the target's knee, then batch + knee once the batch passes it. */
  suggestions: { batch: number; kmax: number }[];
}

/**
 * The sizes of one request's forwards timed beside the spread curves: every size to 32 (a
 * batch-1 tree under the knee's K_max; one request's forward is not smooth in its rows: on the
 * bundled target 7-8 rows cost what 12 do), then a few past it.
 */
const ONE_REQUEST_COUNTS = [...Array.from({ length: 32 }, (_, i) => i + 1), 48, 64];

/** Rows of the verification a step's first draft forwards are timed after (about a batch-1 tree), and how many are timed. */
const FIRST_DRAFT_VERIFY = 8;
const AFTER_TARGET_FORWARDS = 8;

export async function executeProfileHw(flags: ProfileHwFlags, log?: (line: string) => void): Promise<ProfileHwReport> {
  if (flags.out) checkOutputPaths([{ flag: '--out', path: flags.out }], { force: flags.force });
  const { draftDir, targetDir } = pairDirs(flags);
  const tokenCounts = DEFAULT_TOKEN_COUNTS.filter((n) => n <= flags.maxTokens);
  if (tokenCounts.length < 3) throw new Error(`--max-tokens ${flags.maxTokens} leaves fewer than 3 token counts to measure`);
  const largest = DEFAULT_TOKEN_COUNTS[DEFAULT_TOKEN_COUNTS.length - 1];
  if (flags.maxTokens > largest) log?.(`note: --max-tokens ${flags.maxTokens} is past the largest size timed: measuring up to ${largest} tokens`);
  const contexts = typeof flags.context === 'number' ? [flags.context] : flags.context;
  if (contexts.length === 0 || contexts.some((c, i) => i > 0 && c <= contexts[i - 1])) throw new Error(`--context takes rising context lengths, e.g. 64,160; got ${contexts.join(',')}`);
  const longest = contexts[contexts.length - 1];
  const oneRequestCounts = ONE_REQUEST_COUNTS.filter((n) => n <= flags.maxTokens);
  // Per context, the rows spread over the slots, then every row in one request.
  const series = contexts.flatMap((context) => [
    { context, slots: flags.slots, tokenCounts },
    { context, slots: 1, tokenCounts: oneRequestCounts },
  ]);
  // Rows a request needs at the longest context: the spread forwards' share, one request's
  // largest forward, and the draft's forwards after a verification of FIRST_DRAFT_VERIFY rows.
  const spreadNeed = rowsNeeded({ context: longest, slots: flags.slots, tokenCounts });
  const oneNeed = rowsNeeded({ context: longest, slots: 1, tokenCounts: oneRequestCounts });
  const needed = Math.max(spreadNeed, oneNeed, contexts[0] + FIRST_DRAFT_VERIFY + 1);
  // A forward past the model's positions would time rows its rotary table never covers (and fit nonsense).
  for (const [which, dir] of [['target', targetDir], ['draft', draftDir]] as const) {
    const { path: file, json } = readConfigJson(dir);
    const positions = parseModelConfig(json, file).maxPositions;
    if (needed > positions) {
      // Whichever needs more: the spread forwards' share per request, or one request's largest forward.
      const spread = spreadNeed >= oneNeed;
      const what = spread ? `up to ${Math.max(...tokenCounts)} tokens over --slots ${flags.slots}` : `one request's forwards of up to ${Math.max(...oneRequestCounts)} rows`;
      const fix = spread ? 'lower --context or --max-tokens, or raise --slots' : 'lower --context or --max-tokens';
      throw new Error(`--context ${longest} and ${what} need ${needed} positions per request; the ${which} holds ${positions} (${fix})`);
    }
  }
  // Per series (contexts shortest first, each spread then one request).
  const curves: Record<'target' | 'draft', TimedPoint[][]> = { target: [], draft: [] };
  // The draft is timed with the weights runs give it: its curve prices their draft forwards.
  const draftPrecision = flags.draftPrecision ?? defaultDraftPrecision(flags.provider);
  const targetPrecision = flags.targetPrecision ?? 'float32';
  // Each model is timed on the threads a run gives it (pairThreads).
  const threads = pairThreads(flags.threads, heldWeightBytes(openModelFolder(targetDir), targetPrecision));
  // Both models are loaded at once and timed in the same rounds (measureForwardCurves), so that a
  // slow minute of the machine reaches both alike; a step's draft forwards follow its
  // verification, and are timed so too (measureDraftAfterTarget).
  const sessions: Partial<Record<'target' | 'draft', Parameters<typeof measureDraftAfterTarget>[0]>> = {};
  let afterTarget: number[];
  try {
    for (const [which, dir] of [['target', targetDir], ['draft', draftDir]] as const) {
      const precision = which === 'draft' ? draftPrecision : targetPrecision;
      const window = which === 'draft' ? flags.draftWindow : undefined;
      // Each series has its own slots.
      const options = { slots: (flags.slots + 1) * contexts.length, maxLength: needed, ...threads[which], provider: flags.provider, precision, ...(window ? { window } : {}), onMessage: log };
      // An EAGLE-3 head is timed as a run drafts with it: its own graph, beside the target it reads.
      sessions[which] = which === 'draft' && isHeadFolder(dir) ? await loadHead(dir, targetDir, options) : await loadModel(dir, options);
      log?.(`${which}: ${dir} (${precision} weights${window ? `, attention window ${formatAttentionWindow(window)}` : ''})`);
    }
    const names = ['target', 'draft'] as const;
    const timed = await measureForwardCurves([sessions.target!, sessions.draft!], {
      repeats: flags.repeats,
      series,
      onRound: (done, total) =>
        log?.(`  round ${done} of ${total}${done === 1 ? ' (untimed)' : ''}: ${tokenCounts.length} sizes over ${flags.slots} requests and ${oneRequestCounts.length} of one request, of each model${contexts.length > 1 ? ` at ${contexts.length} contexts` : ''}`),
      onPoint: (m, s, p) => {
        const { context, slots } = series[s];
        const where = `${contexts.length > 1 ? `${String(context).padStart(4)} rows of context, ` : ''}${slots === 1 ? 'one request, ' : ''}`;
        log?.(`  ${names[m].padEnd(6)} ${where}${String(p.tokens).padStart(4)} tokens  ${p.ms.toFixed(2).padStart(8)} ms`);
      },
    });
    [curves.target, curves.draft] = timed;
    afterTarget = await measureDraftAfterTarget(sessions.target!, sessions.draft!, { context: contexts[0], repeats: flags.repeats, verifyTokens: FIRST_DRAFT_VERIFY, forwards: AFTER_TARGET_FORWARDS });
    log?.(`a step's draft forwards after the target's, beyond their warm time: ${afterTarget.map((ms) => `+${ms.toFixed(2)}`).join(', ')} ms`);
  } finally {
    for (const session of Object.values(sessions)) await session.release();
  }
  // The k-th context's curves: its spread series, then its one-request series. The first context
  // is the profile's base, the rest its `longer` curves.
  const level = (k: number) => ({
    target: curves.target[2 * k],
    draft: curves.draft[2 * k],
    oneRequest: { target: curves.target[2 * k + 1], draft: curves.draft[2 * k + 1] },
  });
  const profile = HardwareProfileSchema.parse({
    kind: 'echo-hw-profile',
    version: 1,
    createdAt: new Date().toISOString(),
    host: { cpu: cpus()[0]?.model ?? 'unknown', threads: threads.target.threads, provider: flags.provider },
    // A profile committed beside a report must not carry this machine's paths (shownPath).
    models: { draft: shownPath(draftDir), target: shownPath(targetDir) },
    draftPrecision,
    targetPrecision,
    ...(flags.draftWindow ? { draftWindow: flags.draftWindow } : {}),
    slots: flags.slots,
    context: contexts[0],
    ...level(0),
    draftAfterTargetMs: afterTarget,
    ...(contexts.length > 1 ? { longer: contexts.slice(1).map((context, i) => ({ context, ...level(i + 1) })) } : {}),
  });
  const target = fitKnee(profile.target);
  const draft = fitKnee(profile.draft);
  const suggestions = [1, 8, 32, 64].map((batch) => ({ batch, kmax: suggestKmax(target, batch) }));
  if (flags.out) await writeAtomically(flags.out, (temporary) => writeFileSync(temporary, `${JSON.stringify(profile, null, 2)}\n`));
  return { profile, target, draft, suggestions };
}

export function formatProfileHw(report: ProfileHwReport): string {
  const { profile } = report;
  const window = profile.draftWindow ? `, attention window ${formatAttentionWindow(profile.draftWindow)}` : '';
  const lines = [
    `timed with the target in ${profile.targetPrecision} weights, the draft in ${profile.draftPrecision}${window}`,
    'tokens   target ms   draft ms   target ms/token',
  ];
  profile.target.forEach((t, i) => {
    const d = profile.draft[i];
    lines.push(`${String(t.tokens).padStart(6)}  ${t.ms.toFixed(2).padStart(10)}  ${(d?.ms ?? NaN).toFixed(2).padStart(9)}  ${(t.ms / t.tokens).toFixed(3).padStart(16)}`);
  });
  const fit = (name: string, f: KneeFit) =>
    `${name}: knee at ${f.kmax} tokens · T_ar ${f.tArMs.toFixed(2)} ms · γ ${f.gamma.toPrecision(3)} per token past the knee · fit error ${(100 * f.rmsRelativeError).toFixed(1)}% rms`;
  lines.push(fit('target', report.target), fit('draft', report.draft));
  if (profile.draftAfterTargetMs?.length) {
    const total = profile.draftAfterTargetMs.reduce((a, b) => a + b, 0);
    lines.push(`a step's draft forwards after the target's cost ${profile.draftAfterTargetMs.map((ms) => ms.toFixed(2)).join(', ')} ms more than the draft curve's warm time (${total.toFixed(2)} ms in all): the curves clock and ECHO's price charge it`);
  }
  if (profile.oneRequest) {
    // What one request's forwards cost against what the spread curve would have read for them.
    const spread = spreadCurve(profile.target, profile.slots);
    const shown = profile.oneRequest.target.filter((p) => [4, 8, 16, 32].includes(p.tokens));
    lines.push(`one request's forwards, target: ${shown.map((p) => `${p.tokens} rows ${p.ms.toFixed(2)} ms (spread curve ${spread(p.tokens, 1).toFixed(2)})`).join(', ')}: a step of one request is read off them`);
  }
  for (const level of profile.longer ?? []) {
    const ratios = (longer: readonly TimedPoint[], base: readonly TimedPoint[]) => {
      const r = longer.map((p, i) => p.ms / base[i].ms);
      return `×${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)}`;
    };
    lines.push(`at ${level.context} rows of context (base ${profile.context}): target ${ratios(level.target, profile.target)}, draft ${ratios(level.draft, profile.draft)} the base's times; a run priced by this profile reads each step at its own past`);
  }
  lines.push(`suggested K_max: ${report.suggestions.map((s) => `batch ${s.batch} → ${s.kmax}`).join(', ')}`);
  lines.push(`to price verified tokens with this fit: run --verify-cost ${verifyCostFlag(report.target, report.draft)}`);
  lines.push(`to price draft forwards on this machine: run --draft-cost ${draftCostFlag(report.target, report.draft)}`);
  return lines.join('\n');
}

/**
 * KNEE:GAMMA:DRAFT_ROW for `run --verify-cost`: the target's knee and γ, and one drafted row's
 * cost (the draft's per-token slope past its own knee) in units of the target's one-token forward.
 */
export function verifyCostFlag(target: KneeFit, draft: KneeFit): string {
  return `${target.kmax}:${target.gamma.toPrecision(3)}:${draftRowCost(target, draft).toPrecision(3)}`;
}

/** One draft forward (at the smallest size measured) in units of the target's: `run --draft-cost`. */
export function draftCostFlag(target: KneeFit, draft: KneeFit): string {
  return (draft.tArMs / target.tArMs).toPrecision(3);
}

export function register(program: Command): void {
  const command = program
    .command('profile-hw')
    .description('measure forward time against packed token count, find the knee where cost turns linear, suggest K_max');
  withPairFolders(command)
    .option('--max-tokens <n>', 'largest packed forward to time', integer('--max-tokens', 4), 512)
    .option('--repeats <n>', 'timed forwards per size (median kept; on the demo pair 5 left one-token draft forwards up to twice their time)', integer('--repeats', 1), 15)
    .option('--slots <n>', 'requests the packed tokens are spread over', integer('--slots', 1), 16)
    .option(
      '--context <rows>',
      "committed context rows per request, or several rising (64,160): the pasts the runs it prices reach (prompt plus new tokens). A forward gathers every request's past up to the batch's longest, so its time follows the context: on the demo pair an 8-row draft forward takes 0.5 ms at 64 rows and 0.8 ms at 128. Timed at several, each step is priced and timed at its own longest past, between them; the first is the base the knee and K_max come from",
      list('--context', integer('--context', 0)),
      [64],
    );
  knobOption(command, 'threads');
  knobOption(command, 'provider', { help: 'cpu or cuda', default: 'cpu' });
  knobOption(command, 'draftPrecision');
  knobOption(command, 'targetPrecision', {
    help: `${TARGET_PRECISION_HELP}. Time the target in the precision the runs this profile prices load it in: the profile records it, and a run on other weights is told`,
  });
  knobOption(command, 'draftWindow')
    .option('--out <file>', 'write the measured curves (for run --clock modelled --hw measured --hw-profile FILE)')
    .option('--force', 'replace the --out file if it exists')
    .option('--json', 'print the report as JSON')
    .action(async (flags: ProfileHwFlags) => {
      const log = flags.json ? undefined : (line: string) => process.stderr.write(`${line}\n`);
      const report = await executeProfileHw(flags, log);
      if (flags.json) process.stdout.write(`${JSON.stringify({ target: report.target, draft: report.draft, suggestions: report.suggestions, profile: report.profile })}\n`);
      else process.stdout.write(`${formatProfileHw(report)}\n`);
    });
}
