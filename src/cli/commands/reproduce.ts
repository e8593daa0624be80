// `echo-studio reproduce`: the paper's figures and tables regenerated on one loaded pair, as a
// report: calibration densities (Figs. 2, 6–9), Table 1 at batch 1, throughput against batch size
// (Figs. 1 and 5), draft utilisation (Fig. 4), and each claim's verdict computed from the data.
//   echo-studio reproduce [--draft DIR --target DIR] [--domains code,prose,math] [--batches 1,8,32,64]
//     [--clock wall|modelled --hw SPEC] [--quick] --out DIR
import { InvalidArgumentError, Option, type Command } from 'commander';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPolicy, DEFAULT_DELTA, DEFAULT_DRAFT_COST, type DomainWorkload, encodePrompt, judgeClaims, LOAD_POLICIES, loadProfile, loadRunSetup, measureDraftCost, plannedWork, type PromptRecord, promptSource, readServingPair, Refusal, type RunSetup, runStudy, startOn, type StudyPlan, suggestKmax, TABLE1_POLICIES } from '../../engine/index.js';
import { renderReport, type ReportMeta, type ServingTarget } from '../../output/index.js';
import { findPackageRoot, packageVersion } from '../../host/paths.js';
import { clockCosts, clockFromFlags, priceProfileFromFlags, runConfigFromFlags } from '../run-config.js';
import type { WeightPrecision } from '../../shared/config.js';
import { studyKmax } from '../../shared/knobs.js';
import { integer, knobListOption, knobOption, knobOptions, list, withPairFolders } from '../flags.js';

export interface ReproduceFlags {
  draft?: string;
  target?: string;
  domains: string[];
  batches?: number[];
  clock?: string;
  hw?: string;
  hwProfile?: string;
  priceProfile?: string;
  quick?: boolean;
  out: string;
  requests?: number;
  rounds?: number;
  maxNewTokens?: number;
  kmax?: number[];
  profile?: string;
  draftCost?: number | 'auto';
  /** echo / dense / fixed: when a failed gate truncates (default priced). */
  cuts?: 'priced' | 'bare';
  seed: number;
  threads?: number;
  draftPrecision?: WeightPrecision;
  targetPrecision?: WeightPrecision;
}

/** The study's size: the full one, or `--quick` (fewer requests, rounds and batch sizes). */
export function studySize(quick: boolean) {
  return quick
    ? { batches: [1, 4, 16], table1Requests: 4, maxNewTokens: 24, rounds: 2, loadRequests: (b: number) => Math.max(4, b), calibration: { prompts: 24, maxNewTokens: 32 } }
    : { batches: [1, 8, 32, 64], table1Requests: 16, maxNewTokens: 64, rounds: 3, loadRequests: (b: number) => Math.max(8, 2 * b), calibration: { prompts: 24, maxNewTokens: 32 } };
}

export interface ReproduceResult {
  out: string;
  files: string[];
  seconds: number;
  verdicts: Array<{ id: string; verdict: string }>;
}

/** The command line as typed, for the report (quoted where a shell would need it). */
export function commandLine(argv: readonly string[]): string {
  return ['echo-studio', ...argv].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export async function executeReproduce(flags: ReproduceFlags, argv: readonly string[], log: (line: string) => void = () => {}): Promise<ReproduceResult> {
  const started = performance.now();
  const size = studySize(flags.quick ?? false);
  const batches = [...new Set(flags.batches ?? size.batches)].sort((a, b) => a - b);
  const rounds = flags.rounds ?? size.rounds;
  const maxNewTokens = flags.maxNewTokens ?? size.maxNewTokens;
  const table1Requests = flags.requests ?? size.table1Requests;
  if (flags.domains.length === 0) throw new Error('--domains needs at least one domain');
  if (flags.kmax !== undefined && flags.kmax.length !== 1 && flags.kmax.length !== batches.length) throw new Error(`--kmax lists ${flags.kmax.length} values for ${batches.length} batch sizes: give one, or one per batch`);
  if (existsSync(flags.out) && !statSync(flags.out).isDirectory()) throw new Error(`--out ${flags.out} is a file; give a folder for the report`);
  const clock = clockFromFlags(flags);
  const costs = clockCosts(flags, { clock, log, priceProfile: priceProfileFromFlags(flags) });
  const kmax = (batch: number): number => {
    // Table 1's batch 1, when --batches leaves it out, takes the first listed K_max.
    if (flags.kmax !== undefined) return flags.kmax.length === 1 ? flags.kmax[0] : flags.kmax[Math.max(0, batches.indexOf(batch))];
    return costs.knee !== undefined ? suggestKmax({ kmax: costs.knee }, batch) : studyKmax(batch);
  };
  for (const b of [1, ...batches]) if (kmax(b) < b) throw new Error(`K_max ${kmax(b)} is below batch ${b}: every request verifies at least its root`);
  const profile = flags.profile ? await loadProfile(flags.profile) : undefined;

  // Every domain's prompts, read before anything loads (an unknown domain fails here).
  const base = { draft: flags.draft, target: flags.target, targetPrecision: flags.targetPrecision, ...(flags.cuts ? { cuts: flags.cuts } : {}), requests: table1Requests, maxNewTokens, temperature: 0, seed: flags.seed, batch: 1, kmax: 16 };
  const sources = await Promise.all(flags.domains.map(async (domain) => ({ domain, records: await promptSource(runConfigFromFlags({ ...base, policy: 'static', domain })) })));
  const allPrompts: PromptRecord[] = sources.flatMap((s) => s.records);
  const maxBatch = Math.max(...batches);
  const slots = Math.max(maxBatch * (LOAD_POLICIES.length + 1), TABLE1_POLICIES.length + 1);
  const largestKmax = Math.max(...[1, ...batches].map(kmax));
  const config = runConfigFromFlags({ ...base, policy: 'static', domain: flags.domains[0], batch: maxBatch, kmax: largestKmax });
  log(`loading the pair for ${slots} KV slots (batch ${maxBatch} × ${LOAD_POLICIES.length + 1} entries taking turns)`);
  const setup = await loadRunSetup(config, { threads: flags.threads, draftPrecision: flags.draftPrecision, slots, alsoFits: allPrompts, log });
  try {
    const tokenizer = setup.pair.tokenizer;
    const calibrationPrompts = size.calibration.prompts;
    const domains: DomainWorkload[] = sources.map(({ domain, records }) => {
      const items = records.map((r) => ({ id: r.id, promptTokens: encodePrompt(r, tokenizer) }));
      return { domain, runs: items, calibration: items.slice(-Math.min(calibrationPrompts, items.length)) };
    });
    const draftCost = costs.measureDraftCost ? await measureDraftCost(setup.config, setup.pair, { log }) : (costs.draftCost ?? DEFAULT_DRAFT_COST);
    const plan: StudyPlan = {
      domains,
      table1: { requests: table1Requests, rounds },
      load: { batches, requests: size.loadRequests, rounds },
      calibration: { depth: 8, batch: 8, maxNewTokens: Math.min(size.calibration.maxNewTokens, maxNewTokens), delta: DEFAULT_DELTA },
      kmax,
      draftCost,
      ...(costs.verifyCost ? { verifyCost: costs.verifyCost } : {}),
      ...(profile ? { profile } : {}),
      ...(clock ? { clock } : {}),
    };
    const expected = await expectedSeconds(setup, plan, maxNewTokens);
    log(`expected duration: at most about ${formatDuration(expected)} (from short probe runs on this machine, which pay more per token than the study's); progress follows`);
    const data = await runStudy(setup, plan, log);
    const seed = flags.seed;
    const claims = judgeClaims(data, { seed, delta: DEFAULT_DELTA });
    const root = findPackageRoot(import.meta.url);
    const meta: ReportMeta = {
      command: commandLine(argv),
      date: new Date().toISOString(),
      versions: versions(root),
      machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), platform: `${os.platform()} ${os.arch()}`, ...(flags.threads ? { threads: flags.threads } : {}) },
      seeds: { run: seed, bootstrap: seed },
      pair: { draft: path.basename(setup.draftDir), target: path.basename(setup.targetDir) },
      clock: clock ? clock.label : 'wall',
      quick: flags.quick ?? false,
      seconds: (performance.now() - started) / 1000,
      settings: {
        domains: flags.domains.join(','),
        batches: batches.join(','),
        'K_max': [1, ...batches.filter((b) => b !== 1)].map((b) => `${b}:${kmax(b)}`).join(','),
        rounds,
        'Table 1 requests': table1Requests,
        'max new tokens': maxNewTokens,
        'calibration prompts': profile ? 'from --profile' : `${calibrationPrompts} per domain`,
        'draft price': plan.draftCost,
        'priced by': flags.priceProfile ? `a profile apart from the clock's (${path.basename(flags.priceProfile)})` : 'the clock in use',
      },
    };
    // A committed report must not carry this machine's paths: folders under the working directory are written relative to it.
    for (const c of data.calibrations) c.profile.models = { draft: shownPath(c.profile.models.draft), target: shownPath(c.profile.models.target) };
    const files = renderReport(data, claims, meta, servingTarget(shownPath(setup.draftDir), shownPath(setup.targetDir)));
    mkdirSync(flags.out, { recursive: true });
    for (const [name, contents] of Object.entries(files)) writeFileSync(path.join(flags.out, name), contents);
    return { out: flags.out, files: Object.keys(files), seconds: meta.seconds, verdicts: claims.map((c) => ({ id: c.id, verdict: c.verdict })) };
  } finally {
    await setup.release();
  }
}

function versions(root: string): Record<string, string> {
  const read = (file: string, key: string) => {
    try {
      return String(JSON.parse(readFileSync(file, 'utf8'))[key]);
    } catch {
      return 'unknown';
    }
  };
  return { 'echo-studio': packageVersion(root), node: process.version, 'onnxruntime-node': read(path.join(root, 'node_modules', 'onnxruntime-node', 'package.json'), 'version') };
}

export function formatDuration(seconds: number): string {
  return seconds < 90 ? `${Math.round(seconds)} s` : `${(seconds / 60).toFixed(1)} min`;
}

/**
 * The study's duration estimated from this machine: `static` timed at batch 1 and at the largest
 * batch on a few tokens, every phase's planned tokens priced at the throughput interpolated
 * (log-linear in the batch) for its batch size.
 */
async function expectedSeconds(setup: RunSetup, plan: StudyPlan, maxNewTokens: number): Promise<number> {
  const probe = async (batch: number) => {
    const policy = createPolicy('static', { ...setup.config, batch, kmax: plan.kmax(batch) });
    const workload = Array.from({ length: batch }, (_, k) => ({ ...plan.domains[0].runs[k % plan.domains[0].runs.length], id: `probe-${k}` }));
    const probeSetup = { ...setup, workload, config: { ...setup.config, maxNewTokens: Math.min(8, maxNewTokens) } };
    await startOn(probeSetup, { policy, batch, kmax: plan.kmax(batch) }).toEnd(); // the first run pays for warming up; the second is timed
    const timed = startOn(probeSetup, { policy: createPolicy('static', { ...setup.config, batch, kmax: plan.kmax(batch) }), batch, kmax: plan.kmax(batch) });
    const { summary } = (await timed.toEnd()).main;
    const tokens = summary.results.reduce((s, r) => s + r.tokens.length, 0);
    return tokens / Math.max(1e-3, summary.wallMs / 1000);
  };
  const top = Math.max(...plan.load.batches);
  const low = await probe(1);
  const high = top > 1 ? await probe(top) : low;
  const rate = (batch: number) => (top > 1 ? low * (high / low) ** (Math.log2(batch) / Math.log2(top)) : low);
  const work = plannedWork(plan, maxNewTokens);
  return work.calibration / rate(plan.calibration.batch) + work.table1 / rate(1) + work.load.reduce((s, l) => s + l.tokens / rate(l.batch), 0);
}

/** The options given on the command line, as typed-equivalent arguments (defaults left out). */
function givenOptions(command: Command): string[] {
  const args: string[] = [];
  for (const option of command.options) {
    const key = option.attributeName();
    if (command.getOptionValueSource(key) !== 'cli') continue;
    const value: unknown = command.getOptionValue(key);
    if (value === true) args.push(option.long!);
    else args.push(option.long!, Array.isArray(value) ? value.join(',') : String(value));
  }
  return args;
}

export function register(program: Command): void {
  const command = program
    .command('reproduce')
    .description("regenerate the ECHO paper's figures and tables on one pair, with every claim's verdict computed from the data, as a report folder (HTML, SVG, CSV, JSON)")
    .requiredOption('--out <dir>', 'the report folder (created; files in it are overwritten)');
  withPairFolders(command)
    .addOption(new Option('--domains <list>', 'bundled prompt sets, each calibrated and run for Table 1; the first also runs the batch sizes').argParser(list('--domains', (d) => d)).default(['code', 'prose', 'math'], 'code,prose,math'))
    .option('--batches <list>', 'batch sizes for throughput against batch (default 1,8,32,64; quick 1,4,16)', list('--batches', integer('--batches', 1)))
    .addOption(knobListOption('kmax', "K_max: one for every batch size, or one per --batches entry (default: the modelled device's knee, else max(16, 8 × batch))"));
  knobOption(command, 'clock', { help: 'wall (default), or modelled: every run also timed, budgeted and priced on the device --hw names' });
  knobOption(command, 'hw', { help: 'the modelled device: HARDWARE[:MODEL] (e.g. h100:70b), measured or curves (with --hw-profile)' });
  knobOption(command, 'hwProfile', { help: 'with --hw measured or curves: a `profile-hw --out` file' });
  knobOption(command, 'priceProfile');
  command.option('--quick', 'a smaller study (fewer requests, rounds and batch sizes): minutes on a laptop for the bundled pair');
  knobOption(command, 'requests', { help: 'Table 1 requests per domain (default 16; quick 4)' });
  command.option('--rounds <n>', 'interleaved rounds of every comparison (default 3; quick 2)', integer('--rounds', 1));
  knobOption(command, 'maxNewTokens', { help: 'tokens per request (default 64; quick 24)' });
  knobOption(command, 'profile', { help: 'one calibration profile for every domain instead of calibrating each (its histograms are the densities shown)' });
  knobOption(command, 'cuts');
  knobOption(command, 'draftCost', { help: "gated policies' draft price as a share of a target forward (default 0.05; on a modelled clock, the device's)" });
  knobOption(command, 'seed', { help: 'seed of the runs and of the bootstrap intervals', default: 0 });
  knobOptions(command, ['threads', 'draftPrecision', 'targetPrecision']);
  command.action(async (flags: ReproduceFlags, command: Command) => {
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const result = await executeReproduce(flags, ['reproduce', ...givenOptions(command)], log);
      process.stdout.write(
        `wrote ${result.files.length} files to ${result.out} in ${formatDuration(result.seconds)}: open ${path.join(result.out, 'report.html')}\n` +
          `${result.verdicts.map((v) => `  ${v.id}: ${v.verdict}`).join('\n')}\n`,
      );
    });
}

/** A folder as a report shows it: relative to the working directory when it lies under it, else as given. */
export function shownPath(dir: string, cwd = process.cwd()): string {
  const relative = path.relative(cwd, dir);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : dir;
}

/** The study's pair as serving engines would take it, or the one line saying why none can. */
function servingTarget(draftDir: string, targetDir: string): ServingTarget {
  try {
    return { pair: readServingPair(draftDir, targetDir) };
  } catch (err) {
    if (err instanceof Refusal) return { refused: err.message };
    throw err;
  }
}
