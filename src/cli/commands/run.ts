// `echo-studio run`: one headless run of the speculative engine on a draft/target pair.
//   echo-studio run --policy eagle2 --batch 8 --kmax 64 --domain code --requests 16 \
//     --max-new-tokens 64 --temperature 0 --seed 0 [--out FILE] [--trace FILE] [--json]
// --json prints one summary object (the run's metrics); --out writes one JSONL line per request
// as it finishes (a killed run keeps those), put in workload order when the run ends.
import { InvalidArgumentError, type Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { checkOutputPaths, JsonLinesOutput, streamedOutput } from '../output-files.js';
import { availablePolicies, clockFromSpec, type DeviceCosts, type FinishedRun, formatStepTime, type HardwareProfile, loadHardwareProfile, type ModelledClock, type ModelledTime, profileMismatches, promptText, type RequestResult, type RunSetup, prepare, suggestKmax, unknownPolicy, type VerifyCost } from '../../engine/index.js';
import { ConfidenceSignalSchema, defaultDraftPrecision, GATED_POLICIES, MAX_DRAFT_COST, parseTauList, parseValidAttentionWindow, POLICY_NAMES, RunConfigSchema, WEIGHT_PRECISIONS, WeightPrecisionSchema, type AttentionWindow, type ConfidenceSignal, type PolicyName, type RunConfig, type WeightPrecision } from '../../shared/config.js';
import type { RunMetrics, StepTimeSplit } from '../../shared/events.js';
import { atBaselineStepCost, meanStepMs } from '../../shared/step-costs.js';
import { integer } from '../flags.js';

// Resolving a RunConfig into loaded models and a runner is shared with the studio's engine host.
export { BUNDLED_DRAFT, BUNDLED_TARGET, resolveModelDirs } from '../../engine/index.js';

/**
 * `run`'s flags: the run config's own settings (src/shared/config.ts) plus what only the command
 * line has. Three take the command line's names: --draft, --target and --prompts.
 */
export interface RunFlags
  extends Pick<
      RunConfig,
      | 'batch' | 'domain' | 'requests' | 'maxNewTokens' | 'temperature' | 'seed' | 'draftKind' | 'chainLength' | 'shape' | 'taus' | 'tau'
      | 'maxDepth' | 'maxWidth' | 'dddThreshold' | 'verifyCost' | 'profile' | 'confidence' | 'draftWindow' | 'targetPrecision'
    >,
    Partial<Pick<RunConfig, 'kmax'>> {
  /** Any text: checked against the policy names for a one-line error that lists them. */
  policy: string;
  /** Default: the modelled device's knee (suggestKmax) on a modelled clock, else DEFAULT_RUN_KMAX. */
  kmax?: number;
  prompts?: string;
  draft?: string;
  target?: string;
  /** A share of a target forward, or `auto`: measured on this machine after loading. */
  draftCost?: number | 'auto';
  threads?: number;
  provider?: 'cpu' | 'cuda';
  draftPrecision?: WeightPrecision;
  out?: string;
  trace?: string;
  force?: boolean;
  recordCandidates?: boolean;
  json?: boolean;
  compareAr?: boolean;
  clock?: string;
  hw?: string;
  hwProfile?: string;
}

export interface RunReport {
  config: RunConfig;
  draftDir: string;
  targetDir: string;
  metrics: RunMetrics;
  /** Share of step wall time spent outside onnxruntime's run() (the engine's own work). */
  engineOverhead: number;
  results: RequestResult[];
  /** The weight precision each model ran in: with a quantised target, the output is lossless with respect to it. */
  precision: { draft: WeightPrecision; target: WeightPrecision };
  /** Present with `--clock modelled`: the run's time on the modelled hardware. */
  modelled?: ModelledTime;
  /** echo/dense/fixed whose warm-up found no sweet spot: the run went ungated. */
  ungated?: boolean;
  /** With --compare-ar: ar's steps on the same workload, and this run's throughput over ar's had its steps cost ar's (atBaselineStepCost). */
  ar?: { steps: number; stepTime?: StepTimeSplit; atArStepCost: number };
}


const ELASTIC: readonly PolicyName[] = ['ddd', ...GATED_POLICIES];
/** The policy-specific flags and the policies that read them. */
const POLICY_FLAGS: ReadonlyArray<{ key: keyof RunFlags; flag: string; policies: readonly PolicyName[] }> = [
  { key: 'chainLength', flag: '--chain-length', policies: ['chain'] },
  { key: 'shape', flag: '--shape', policies: ['static', 'eagle2', ...ELASTIC] },
  { key: 'taus', flag: '--taus', policies: GATED_POLICIES },
  { key: 'tau', flag: '--tau', policies: ['fixed'] },
  { key: 'maxDepth', flag: '--max-depth', policies: ELASTIC },
  { key: 'maxWidth', flag: '--max-width', policies: ELASTIC },
  { key: 'dddThreshold', flag: '--ddd-threshold', policies: ['ddd'] },
  { key: 'verifyCost', flag: '--verify-cost', policies: GATED_POLICIES },
  { key: 'draftCost', flag: '--draft-cost', policies: GATED_POLICIES },
  { key: 'profile', flag: '--profile', policies: GATED_POLICIES },
  { key: 'confidence', flag: '--confidence', policies: GATED_POLICIES },
  { key: 'draftWindow', flag: '--draft-window', policies: POLICY_NAMES.filter((p) => p !== 'ar') },
];

/** One line per given flag the chosen policy does not read (a script may pass them to every policy). */
export function ignoredFlagNotes(flags: RunFlags): string[] {
  return POLICY_FLAGS.filter(({ key, policies }) => flags[key] !== undefined && !(policies as readonly string[]).includes(flags.policy)).map(
    ({ flag, policies }) => `note: ${flag} has no effect on ${flags.policy} (it applies to ${policies.join(', ')})`,
  );
}

const FIELD_FLAGS: Record<string, string> = { draftDir: '--draft', targetDir: '--target', promptsFile: '--prompts' };

/** The flag that sets a RunConfig field (`maxNewTokens` → `--max-new-tokens`): messages name what the user typed. */
export function flagOfField(field: string): string {
  return FIELD_FLAGS[field] ?? `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Flags → a validated RunConfig; the first problem as one line. */
export function runConfigFromFlags(flags: RunFlags): RunConfig {
  const unknown = unknownPolicy(flags.policy);
  if (unknown !== null) throw new Error(unknown);
  const { draft, target, prompts, draftCost, ...settings } = flags;
  const candidate = {
    // The config's own settings go by their own names; the schema drops the command line's others.
    ...settings,
    draftDir: draft,
    targetDir: target,
    promptsFile: prompts,
    domain: prompts === undefined ? (flags.domain ?? 'code') : flags.domain,
    kmax: flags.kmax ?? DEFAULT_RUN_KMAX,
    draftCost: draftCost === 'auto' ? undefined : draftCost,
  };
  const parsed = RunConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(issue.code === 'custom' || issue.path.length === 0 ? issue.message : `${flagOfField(String(issue.path[0]))}: ${issue.message}`);
  }
  return parsed.data;
}

export interface RunOptions {
  threads?: number;
  provider?: 'cpu' | 'cuda';
  draftPrecision?: WeightPrecision;
  /** Write the JSONL trace of the run here (in place when new, else beside it and renamed over it at the end). */
  trace?: string;
  /** Each request of the run (not of --compare-ar's ar) as it finishes, as an --out line. */
  onOutput?: (line: RequestOutput) => void;
  /** With trace: also record every draft expansion's top-k, so `trace what-if` can re-score the run. */
  recordCandidates?: boolean;
  /** Also run the workload under `ar` on the same pair and report the wall-time speedup. */
  compareAr?: boolean;
  /** Also time every step on this modelled clock (acceptance still comes from the real models). */
  clock?: ModelledClock;
  /** Price draft forwards at what one costs on this machine (`--draft-cost auto`). */
  measureDraftCost?: boolean;
  log?: (line: string) => void;
}

/** `run`'s K_max when neither --kmax nor a modelled clock says otherwise. */
export const DEFAULT_RUN_KMAX = 64;

/**
 * The clock decides the costs. On a modelled clock the run is budgeted and priced as that device
 * would: K_max defaults to the device's knee (suggestKmax for the batch) and the draft price
 * (`--draft-cost`, or `auto`) to the device's draft forward over its target forward, so the steps
 * a policy chooses are chosen for the device they are timed on. Explicit values win. On the wall
 * clock nothing changes (`auto` measures this machine). Returns the K_max rule, the draft price to
 * put in the config (undefined: the config's default) and whether to measure this machine's.
 */
export function clockCosts(
  flags: { draftCost?: number | 'auto'; verifyCost?: VerifyCost },
  clock: ModelledClock | undefined,
  log?: (line: string) => void,
): { knee?: number; draftCost?: number; verifyCost?: VerifyCost; measureDraftCost: boolean } {
  if (!clock) return { draftCost: flags.draftCost === 'auto' ? undefined : flags.draftCost, verifyCost: flags.verifyCost, measureDraftCost: flags.draftCost === 'auto' };
  const { knee, draftForward } = clock.costs;
  const draftCost = typeof flags.draftCost === 'number' ? flags.draftCost : draftForward;
  const verifyCost = flags.verifyCost ?? deviceVerifyCost(clock.costs);
  log?.(
    `priced as the modelled device (${clock.label}): K_max from its knee, ${knee} tokens, unless --kmax is given; draft forward ${draftCost} of a target forward${typeof flags.draftCost === 'number' ? ' (--draft-cost)' : ' (the device\'s)'}; verified tokens at ${verifyCost.knee}:${verifyCost.gamma}:${verifyCost.draftRow ?? 0}${flags.verifyCost ? ' (--verify-cost)' : ' (the device\'s knee, γ and draft row)'}`,
  );
  return { knee, draftCost, verifyCost, measureDraftCost: false };
}

/**
 * The verification price of a device, as the gated policies read it (`--verify-cost`'s
 * KNEE:GAMMA:DRAFT_ROW): past its knee a token is granted only when its expected acceptance pays
 * for its share of the target forward and of the draft forwards.
 */
export function deviceVerifyCost(costs: DeviceCosts): VerifyCost {
  return { knee: Math.max(0, Math.round(costs.knee)), gamma: Number(costs.gamma.toPrecision(3)), draftRow: costs.draftRow };
}

/** `--clock modelled --hw SPEC [--hw-profile FILE]` → a modelled clock; wall time alone otherwise. */
export function clockFromFlags(flags: Pick<RunFlags, 'clock' | 'hw' | 'hwProfile'>, profile?: HardwareProfile): ModelledClock | undefined {
  const clock = flags.clock ?? 'wall';
  if (clock === 'wall') {
    if (flags.hw !== undefined) throw new Error('--hw needs --clock modelled');
    return undefined;
  }
  if (clock !== 'modelled') throw new Error(`--clock takes wall or modelled, got "${clock}"`);
  if (flags.hw === undefined) throw new Error('--clock modelled needs --hw (e.g. h100:70b, or measured or curves with --hw-profile FILE)');
  return clockFromSpec(flags.hw, profile ?? (flags.hwProfile ? loadHardwareProfile(flags.hwProfile) : undefined));
}

export async function executeRun(config: RunConfig, options: RunOptions = {}): Promise<RunReport> {
  // The trace goes in place when new, else beside it, renamed over it once the run ends.
  const traceOutput = options.trace ? streamedOutput(options.trace) : null;
  const run = await prepare(config, {
    threads: options.threads,
    provider: options.provider,
    draftPrecision: options.draftPrecision,
    measureDraftCost: options.measureDraftCost,
    log: options.log,
    trace: traceOutput?.writePath,
    recordCandidates: options.recordCandidates,
    clock: options.clock,
    // With --compare-ar, the same workload under ar beside it on the same loaded pair.
    compareAr: options.compareAr,
  });
  const { setup } = run;
  try {
    if (options.onOutput) run.on('requestFinished', (result) => options.onOutput?.(outputLine(result, setup)));
    let finished: FinishedRun;
    try {
      finished = await run.toEnd({ log: options.log });
    } catch (err) {
      run.end('error', { message: (err as Error).message });
      traceOutput?.commit();
      throw err;
    }
    const { main, ar, metrics } = finished;
    run.end('finished', { wallMs: main.summary.wallMs, speedupVsAr: metrics.speedupVsAr });
    traceOutput?.commit();
    const arSteps = ar ? { ar: { steps: ar.metrics.steps, stepTime: ar.metrics.stepTime, atArStepCost: atBaselineStepCost(main.metrics, ar.metrics) } } : {};
    const ungated = setup.gates?.source === 'ungated' ? { ungated: true } : {};
    const precision = { draft: setup.pair.draft.info.precision, target: setup.pair.target.info.precision };
    return { config, draftDir: setup.draftDir, targetDir: setup.targetDir, metrics, engineOverhead: main.engineOverhead, results: main.summary.results, precision, modelled: main.modelled, ...ungated, ...arSteps };
  } finally {
    await run.release();
  }
}

/**
 * The summary's line on weights and what the output is exact to. Only a float32 target is claimed
 * lossless: a quantised target is batch-invariant (ar at any batch decodes the same tokens) but
 * its 8-bit activation rounding can turn a verified row's float rounding into another token.
 */
export function precisionLine(precision: RunReport['precision']): string {
  if (precision.target === 'float32') return `weights: target float32, draft ${precision.draft} · lossless with respect to the float32 target (as on disk)`;
  return `weights: target ${precision.target}, draft ${precision.draft} · not claimed lossless: the ${precision.target} target's projections round activations to 8 bits, so speculation may part from ar on near-ties (ar itself decodes the same at every batch)`;
}

/** One --out line: the request's id, its prompt text, its tokens and their text, why it ended. */
export interface RequestOutput {
  id: string;
  prompt: string;
  tokens: number[];
  text: string;
  finish: RequestResult['finish'];
}

function outputLine(result: RequestResult, setup: RunSetup): RequestOutput {
  const tokenizer = setup.pair.tokenizer;
  const record = setup.records[result.index];
  const prompt = record && record.id === result.id ? promptText(record, tokenizer) : '';
  return { id: result.id, prompt, tokens: result.tokens, text: tokenizer.decode(result.tokens, { skipSpecialTokens: true }), finish: result.finish };
}

/** `--draft-cost` of run and trace what-if: a share of a target forward, within the config's bound. */
export function parseDraftCost(value: string, also = ''): number {
  const share = Number(value);
  if (value.trim() === '' || !(share >= 0 && share <= MAX_DRAFT_COST)) {
    throw new InvalidArgumentError(`--draft-cost takes a share of a target forward in [0, ${MAX_DRAFT_COST}]${also}, got "${value}"`);
  }
  return share;
}

export function draftCostFlag(value: string): number | 'auto' {
  return value === 'auto' ? 'auto' : parseDraftCost(value, ' or auto');
}

function number(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number, got "${value}"`);
    return n;
  };
}

function provider(value: string): 'cpu' | 'cuda' {
  if (value !== 'cpu' && value !== 'cuda') throw new InvalidArgumentError(`--provider takes cpu or cuda, got "${value}"`);
  return value;
}

/** `--draft-kind`: model or head. */
export function draftKindFlag(value: string): 'model' | 'head' {
  if (value !== 'model' && value !== 'head') throw new InvalidArgumentError(`--draft-kind takes model or head, got "${value}"`);
  return value;
}

/** A `--…-precision` flag's parser: one of the weight precisions, else a one-line error naming them. */
function precisionFlag(flag: string): (value: string) => WeightPrecision {
  return (value) => {
    const parsed = WeightPrecisionSchema.safeParse(value);
    if (!parsed.success) throw new InvalidArgumentError(`${flag} takes ${WEIGHT_PRECISIONS.join(', ')}, got "${value}"`);
    return parsed.data;
  };
}

/** `--draft-precision`: the draft's linear-layer weights. */
export const draftPrecisionFlag = precisionFlag('--draft-precision');
/** `--target-precision`: the target's linear-layer weights. */
export const targetPrecisionFlag = precisionFlag('--target-precision');

/** `--draft-window SINK:RECENT`: the draft's attention sinks and recent window, in rows. */
export function draftWindowFlag(value: string): AttentionWindow {
  const window = parseValidAttentionWindow(value.trim());
  if (window === null) {
    throw new InvalidArgumentError(`--draft-window takes SINK:RECENT rows, e.g. 4:64 (recent ≥ 1), got "${value}"`);
  }
  return window;
}

export const DRAFT_WINDOW_HELP =
  "the draft sees only its request's first SINK rows and the RECENT rows before each drafted token (attention sinks and a recent window, as MagicDec drafts): a drafted row reads a bounded past however long the request grows. Lossless either way: the target verifies. Default: the whole past";

/** `--confidence`: the signal ECHO's gates and scheduler read. */
export function confidenceFlag(value: string): ConfidenceSignal {
  const parsed = ConfidenceSignalSchema.safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(`--confidence takes ${ConfidenceSignalSchema.options.join(' or ')}, got "${value}"`);
  return parsed.data;
}

/** `--threads`: 1 up to twice this machine's cores (more only makes the workers wait on each other). */
export function threadsFlag(value: string): number {
  const most = 2 * Math.max(1, availableParallelism());
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > most) throw new InvalidArgumentError(`--threads takes 1 to ${most} (twice this machine's ${most / 2} cores), got "${value}"`);
  return n;
}

export const THREADS_HELP = "onnxruntime threads of the target (default 2 when its weights pass 32 MiB, as a last-level cache holds about that much, else 1; its workers spin between kernels); the draft runs on one thread, so that it never waits for a core the target's workers hold";
export const DRAFT_PRECISION_HELP = "the draft's weights: int8 (default on CPU: 8-bit linear layers and head, a faster draft), int4 (4-bit) or float32 (as on disk; default with cuda). Never changes what a lossless run outputs";
export const TARGET_PRECISION_HELP =
  "the target's weights: float32 (default, as on disk), or int8 / int4 weight-only blocks for a target too large for this machine in float32 (`model info` says what each takes). Runs on it are not claimed lossless (8-bit activation rounding may part speculation from ar on near-ties); the run records the precision";

function parseShape(value: string): { depth: number; topk: number; tokens: number } {
  const parts = value.split(',').map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new InvalidArgumentError(`--shape takes DEPTH,TOPK,TOKENS (positive integers), got "${value}"`);
  }
  return { depth: parts[0], topk: parts[1], tokens: parts[2] };
}

function parseVerifyCost(value: string): VerifyCost {
  const m = /^\s*(\d+)\s*:\s*([0-9.eE+-]+)\s*(?::\s*([0-9.eE+-]+)\s*)?$/.exec(value);
  const bad = (x: string | undefined) => x !== undefined && !(Number.isFinite(Number(x)) && Number(x) >= 0);
  if (!m || bad(m[2]) || bad(m[3])) {
    throw new InvalidArgumentError(`--verify-cost takes KNEE:GAMMA[:DRAFT_ROW] (profile-hw prints it, e.g. 15:0.067:0.013), got "${value}"`);
  }
  return m[3] === undefined ? { knee: Number(m[1]), gamma: Number(m[2]) } : { knee: Number(m[1]), gamma: Number(m[2]), draftRow: Number(m[3]) };
}

/** `--taus` of run, sweep and trace what-if, in the one τ grammar (parseTauList). */
export function parseTaus(value: string): Record<string, number> {
  const parsed = parseTauList(value);
  if ('bad' in parsed && parsed.repeats !== undefined) throw new InvalidArgumentError(`--taus gives depth ${parsed.repeats} twice ("${parsed.bad}" repeats it); give each depth one τ, got "${value}"`);
  if ('bad' in parsed) throw new InvalidArgumentError(`--taus takes DEPTH:TAU,… with each τ in [0, 1] (e.g. 0:0.2,5:0.35) or none, got "${value}"`);
  return parsed.taus;
}

/** The workload and model folder options of run and sweep. */
export function withWorkloadOptions(command: Command, requests: number): Command {
  return command
    .option('--domain <name>', 'bundled prompt set (code, prose, math); default code')
    .option('--prompts <file>', 'prompts file: one plain-text prompt per line, or JSONL with {"id","prompt"} per line or {"id","messages":[{"role","content"},…]} rendered by the target’s chat template (optional "domain", "arrivalMs")')
    .option('--requests <n>', 'requests to run', integer('--requests', 1), requests)
    .option('--max-new-tokens <n>', 'tokens to generate per request at most', integer('--max-new-tokens', 1), 64)
    .option('--temperature <x>', '0 = greedy; > 0 = lossless tree sampling', number('--temperature'), 0)
    .option('--seed <n>', 'sampling seed', integer('--seed', 0), 0)
    .option('--draft <dir>', 'draft model folder (Hugging Face) or EAGLE-3 head folder; default: the bundled demo pair')
    .option('--target <dir>', 'target model folder (Hugging Face)')
    .option('--draft-kind <kind>', 'model or head: what drafts (default: what the --draft folder holds; the bundled small draft); head without --draft picks the bundled demo head', draftKindFlag);
}

/** The onnxruntime options of run and sweep. */
export function withRuntimeOptions(command: Command): Command {
  return command
    .option('--threads <n>', THREADS_HELP, threadsFlag)
    .option('--provider <name>', 'onnxruntime execution provider: cpu (default) or cuda (falls back to cpu, saying why)', provider)
    .option('--draft-precision <precision>', DRAFT_PRECISION_HELP, draftPrecisionFlag)
    .option('--target-precision <precision>', TARGET_PRECISION_HELP, targetPrecisionFlag)
    .option('--draft-window <sink:recent>', DRAFT_WINDOW_HELP, draftWindowFlag);
}

export function register(program: Command): void {
  const command = program
    .command('run')
    .description('run the speculative engine on a workload and report throughput, MAT and utilisation')
    .requiredOption('--policy <name>', `speculation policy (${availablePolicies().join(', ')})`)
    .option('--batch <n>', 'requests in flight at once', integer('--batch', 1), 1)
    .option('--kmax <n>', `verification budget: Σ(1+K_i) ≤ K_max tokens per step (default ${DEFAULT_RUN_KMAX}; on a modelled clock, the device's knee)`, integer('--kmax', 1));
  withRuntimeOptions(withWorkloadOptions(command, 8))
    .option('--chain-length <n>', 'chain: draft tokens per step (default 5)', integer('--chain-length', 1))
    .option('--shape <d,k,t>', 'tree policies: base depth, top-k, draft tokens per request (default 8,10,60)', parseShape)
    .option('--taus <list>', 'ECHO: τ_d at the sweet spots, e.g. 0:0.2,5:0.35', parseTaus)
    .option('--tau <x>', 'fixed: one τ for every gated depth', number('--tau'))
    .option('--max-depth <n>', 'ECHO: deepest layer a confident request may reach', integer('--max-depth', 1))
    .option('--max-width <n>', 'ECHO: most children per node under width expansion', integer('--max-width', 1))
    .option('--ddd-threshold <x>', 'ddd: stop deepening when log Σ_beam exp(S) is below this', number('--ddd-threshold'))
    .option('--verify-cost <knee:gamma[:draft]>', 'echo/dense/fixed: grant a token only if its expected acceptance pays for its verification time under this T_ver fit, and draft a layer only if a sure token would pay for its draft row too (profile-hw prints it); default: fill K_max', parseVerifyCost)
    .option('--draft-cost <share|auto>', "echo/dense/fixed: one draft forward's cost as a share of the target's one-token forward (profile-hw prints it), or auto: measured on this machine after loading; with a profile or warm-up, a layer is drafted only if its measured chance of acceptance pays for that; 0 = draft every layer the budget allows (default 0.05)", draftCostFlag)
    .option('--profile <file>', 'echo/dense/fixed: calibration profile JSON with τ_d (from `echo-studio calibrate`)')
    .option('--confidence <signal>', "echo/dense/fixed: what gates and priorities read: path-prob (the paper's draft path probability) or path-margin (each step renormalised over the parent's two best candidates); default: the profile's; without one, the warm-up's pick (the better separating signal); with --taus, path-prob", confidenceFlag)
    .option('--out <file>', 'write one JSONL line per request as it finishes (id, prompt, tokens, text, finish), in workload order once the run ends')
    .option('--trace <file>', 'write the JSONL trace (header, one line per step, summary)')
    .option('--force', 'replace --out and --trace files that already exist (each is replaced only once the run ends)')
    .option('--record-candidates', 'with --trace: also record each draft expansion’s top-k, so `trace what-if` can re-score the run (larger file)')
    .option('--compare-ar', 'also run the workload under ar, the two taking turns step by step on one loaded pair, and report the wall-time speedup')
    .option('--clock <kind>', 'wall (default), or modelled: also report time on the hardware named by --hw')
    .option('--hw <spec>', 'modelled clock: HARDWARE[:MODEL] roofline (e.g. h100:70b, a100:8b, h200:235b-a22b), measured (the paper\'s T_ver formula fitted to this machine) or curves (this machine\'s measured curves, no formula)')
    .option('--hw-profile <file>', 'with --hw measured or curves: a profile from `echo-studio profile-hw --out`')
    .option('--json', 'print one JSON summary object instead of text')
    .action(async (given: RunFlags) => {
      // Before any work: an output that cannot be written, or would destroy a file, fails now.
      checkOutputPaths(
        [...(given.out ? [{ flag: '--out', path: given.out }] : []), ...(given.trace ? [{ flag: '--trace', path: given.trace }] : [])],
        {
          force: given.force,
          inputs: [
            given.prompts ? { flag: '--prompts', path: given.prompts } : undefined,
            given.profile ? { flag: '--profile', path: given.profile } : undefined,
            given.hwProfile ? { flag: '--hw-profile', path: given.hwProfile } : undefined,
          ],
        },
      );
      const hwProfile = given.hwProfile ? loadHardwareProfile(given.hwProfile) : undefined;
      const clock = clockFromFlags(given, hwProfile);
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const costs = clockCosts(given, clock, log);
      const flags: RunFlags = {
        ...given,
        kmax: given.kmax ?? (costs.knee !== undefined ? suggestKmax({ kmax: costs.knee }, given.batch) : undefined),
        ...(costs.draftCost !== undefined ? { draftCost: costs.draftCost } : {}),
        ...(costs.verifyCost !== undefined ? { verifyCost: costs.verifyCost } : {}),
      };
      const config = runConfigFromFlags(flags);
      for (const note of ignoredFlagNotes(given)) log(note);
      if (hwProfile && clock) {
        const draftPrecision = flags.draftPrecision ?? defaultDraftPrecision(flags.provider);
        for (const note of profileMismatches(hwProfile, { batch: config.batch, draftPrecision, targetPrecision: config.targetPrecision, draftWindow: flags.draftWindow })) log(note);
      }
      // --out: one line per request as it finishes, so a killed run keeps what finished; at the
      // end the file is rewritten in workload order (the order it always had).
      const outputs = flags.out ? { file: new JsonLinesOutput(flags.out), lines: new Map<string, RequestOutput>() } : null;
      const onOutput = outputs
        ? (line: RequestOutput) => {
            outputs.lines.set(line.id, line);
            outputs.file.write(line);
          }
        : undefined;
      let report: RunReport;
      try {
        report = await executeRun(config, {
          threads: flags.threads,
          provider: flags.provider,
          draftPrecision: flags.draftPrecision,
          trace: flags.trace,
          recordCandidates: flags.recordCandidates,
          compareAr: flags.compareAr,
          clock,
          measureDraftCost: costs.measureDraftCost,
          onOutput,
          log,
        });
      } catch (err) {
        await outputs?.file.close();
        throw err;
      }
      if (outputs) {
        const inOrder = report.results.flatMap((r) => {
          const line = outputs.lines.get(r.id);
          return line ? [`${JSON.stringify(line)}\n`] : [];
        });
        await outputs.file.close((temporary) => writeFileSync(temporary, inOrder.join('')));
      }
      const m = report.metrics;
      if (flags.json) {
        process.stdout.write(
          JSON.stringify({
            ...m,
            engineOverhead: report.engineOverhead,
            ...(report.modelled ? { modelled: report.modelled } : {}),
            ...(report.ar ? { ar: report.ar } : {}),
            ...(report.ungated ? { ungated: true } : {}),
            config: report.config,
            draftDir: report.draftDir,
            targetDir: report.targetDir,
            precision: report.precision,
          }) + '\n',
        );
        return;
      }
      const fmt = (x: number, d = 2) => x.toFixed(d);
      process.stdout.write(
        [
          `policy ${m.policy}: ${m.requests} requests, ${m.generatedTokens} tokens in ${fmt(m.wallMs / 1000)} s over ${m.steps} steps`,
          precisionLine(report.precision),
          ...(report.ungated ? ['ungated: the warm-up found no sweet spot, so no depth was truncated by a τ_d'] : []),
          `throughput ${fmt(m.throughput, 1)} tok/s${m.decodeThroughput ? ` (decoding ${fmt(m.decodeThroughput, 1)} tok/s: prefill left out)` : ''} · MAT ${fmt(m.meanAcceptedTokens)} (bonus excluded) · acceptance length ${fmt(m.meanAcceptanceLength)}`,
          `draft utilisation ${fmt(m.draftUtilisation)} · verified tokens/step ${fmt(m.verifiedTokensPerStep, 1)} (K_max ${config.kmax}) · padding waste ${fmt(m.paddingWaste)}`,
          `time per output token p50 ${fmt(m.tpotP50Ms)} ms, p99 ${fmt(m.tpotP99Ms)} ms · engine overhead ${fmt(100 * report.engineOverhead, 1)}% of step time`,
          ...(m.stepTime ? [`per step: ${formatStepTime(m.stepTime)}`] : []),
          ...(m.speedupVsAr !== undefined ? [`wall-time speedup over ar on the same workload: ${fmt(m.speedupVsAr)}×`] : []),
          ...(report.ar?.stepTime && m.stepTime
            ? [
                `  ar took ${report.ar.steps} steps of ${fmt(meanStepMs(report.ar.stepTime))} ms to these ${m.steps} of ${fmt(meanStepMs(m.stepTime))} ms; at ar's step cost this run would be ${fmt(report.ar.atArStepCost)}× ar (what taking fewer steps buys, before what drafting costs)`,
              ]
            : []),
          ...(report.modelled
            ? [
                `modelled clock (${report.modelled.clock}): ${fmt(report.modelled.ms / 1000, 3)} s (draft ${fmt(report.modelled.draftMs / 1000, 3)} s, verify ${fmt(report.modelled.verifyMs / 1000, 3)} s) → ${fmt(report.modelled.throughput, 1)} tok/s, next to ${fmt(m.wallMs / 1000)} s wall`,
              ]
            : []),
          '',
        ].join('\n'),
      );
    });
}
