// Every knob of a run, declared once: its flag, what it means, how text becomes its value (with
// the one-line error a bad value gets), its range (the schema) and its defaults. The command
// line's options (src/cli/flags.ts knobOption), the studio's Run form (its defaults) and the run
// config's own fields (RUN_FIELDS in config.ts: the ranges the hosts validate) are all cut from
// here. Settings that live outside the run config — threads, provider, the weights' precision,
// the clock — are knobs too. Pure: the renderer reads it.
import { z } from 'zod';
import {
  ConfidenceSignalSchema,
  MAX_DRAFT_COST,
  parseTauList,
  parseValidAttentionWindow,
  RUN_FIELDS,
  tauProblem,
  WEIGHT_PRECISIONS,
  WeightPrecisionSchema,
  type AttentionWindow,
  type ConfidenceSignal,
  type RunConfig,
  type TreeShape,
  type WeightPrecision,
} from './config.js';

/** What a knob's parser may need to know of the machine it runs on. */
export interface Machine {
  cores: number;
}

export interface KnobSpec<T> {
  /** The command line's flag with its value's name, e.g. `--threads <n>`. */
  flag: string;
  /** What it does, as `--help` says it. */
  help: string;
  /** Its type and range. */
  schema: z.ZodType<T>;
  /** Text → value; throws an Error whose message is the one line the user sees. */
  parse(text: string, machine: Machine): T;
  /** What a run takes when nobody says (absent: nothing, or decided by a rule the help names). */
  default?: T;
  /** The studio's Run form starts here where it differs from `default` (it shows a batch to watch). */
  studio?: T;
}

const bad = (message: string): never => {
  throw new Error(message);
};

/** A whole number of at least `min` (and at most `max`, when given), e.g. integer('--requests', 1). */
export function integerParser(flag: string, min: number, max = Infinity): (text: string) => number {
  const range = Number.isFinite(max) ? `in [${min}, ${max}]` : `≥ ${min}`;
  return (text) => {
    const n = Number(text);
    return !Number.isInteger(n) || n < min || n > max ? bad(`${flag} must be an integer ${range}, got "${text}"`) : n;
  };
}

/** integerParser over a run-config field's own range, so the flag refuses what the config would. */
function fieldInteger(flag: string, field: z.ZodNumber | z.ZodOptional<z.ZodNumber>): (text: string) => number {
  const n = field instanceof z.ZodOptional ? field.unwrap() : field;
  return integerParser(flag, n.minValue ?? -Infinity, n.maxValue ?? Infinity);
}

/** Any finite number. */
export function numberParser(flag: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    return text.trim() === '' || !Number.isFinite(n) ? bad(`${flag} must be a number, got "${text}"`) : n;
  };
}

function precisionParser(flag: string): (text: string) => WeightPrecision {
  return (text) => {
    const parsed = WeightPrecisionSchema.safeParse(text);
    return parsed.success ? parsed.data : bad(`${flag} takes ${WEIGHT_PRECISIONS.join(', ')}, got "${text}"`);
  };
}

/** `--draft-cost`: a share of a target forward, within the config's bound (`also` names other forms a flag takes). */
export function parseDraftCostShare(text: string, also = ''): number {
  const share = Number(text);
  return text.trim() === '' || !(share >= 0 && share <= MAX_DRAFT_COST)
    ? bad(`--draft-cost takes a share of a target forward in [0, ${MAX_DRAFT_COST}]${also}, got "${text}"`)
    : share;
}

/** `--taus`, in the one τ grammar (parseTauList). */
export function parseTausFlag(text: string): Record<string, number> {
  const parsed = parseTauList(text);
  if ('bad' in parsed && parsed.repeats !== undefined) bad(`--taus gives depth ${parsed.repeats} twice ("${parsed.bad}" repeats it); give each depth one τ, got "${text}"`);
  if ('bad' in parsed) bad(`--taus takes DEPTH:TAU,… with each τ in [0, 1] (e.g. 0:0.2,5:0.35) or none, got "${text}"`);
  return (parsed as { taus: Record<string, number> }).taus;
}

/** `--tau`: one threshold, in τ's range (tauProblem). */
export function parseTauFlag(text: string): number {
  const tau = numberParser('--tau')(text);
  const problem = tauProblem(tau, '--tau');
  return problem !== null ? bad(`${problem}, got "${text}"`) : tau;
}

function parseShape(text: string): TreeShape {
  const parts = text.split(',').map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isInteger(n) || n < 1)) bad(`--shape takes DEPTH,TOPK,TOKENS (positive integers), got "${text}"`);
  return { depth: parts[0], topk: parts[1], tokens: parts[2] };
}

type VerifyCostValue = NonNullable<RunConfig['verifyCost']>;

function parseVerifyCost(text: string): VerifyCostValue {
  const m = /^\s*(\d+)\s*:\s*([0-9.eE+-]+)\s*(?::\s*([0-9.eE+-]+)\s*)?$/.exec(text);
  const wrong = (x: string | undefined) => x !== undefined && !(Number.isFinite(Number(x)) && Number(x) >= 0);
  if (!m || wrong(m[2]) || wrong(m[3])) bad(`--verify-cost takes KNEE:GAMMA[:DRAFT_ROW] (profile-hw prints it, e.g. 15:0.067:0.013), got "${text}"`);
  const [, knee, gamma, draftRow] = m!;
  return draftRow === undefined ? { knee: Number(knee), gamma: Number(gamma) } : { knee: Number(knee), gamma: Number(gamma), draftRow: Number(draftRow) };
}

function oneOf<T extends string>(flag: string, values: readonly T[], said = values.join(' or ')): (text: string) => T {
  return (text) => ((values as readonly string[]).includes(text) ? (text as T) : bad(`${flag} takes ${said}, got "${text}"`));
}

const text = (value: string) => value;
const optionalString = z.string().optional();

/**
 * The K_max a run takes when neither --kmax nor a knee says: at least 64, and 6 verified tokens a
 * request (the root and 5 drafted) once the batch passes 10. `echo-studio run` and the studio's
 * form both use it; on a modelled clock, or a measured knee in the studio, the knee's K_max
 * (suggestKmax) comes first.
 */
export function defaultKmax(batch: number): number {
  return Math.max(64, 6 * batch);
}

/**
 * The K_max of each batch size in a study over many (`sweep`, `reproduce`) when no knee is known:
 * 8 verified tokens a request, at least 16. Kept apart from defaultKmax so that a study's tables
 * stay comparable with the ones it wrote before.
 */
export function studyKmax(batch: number): number {
  return Math.max(16, 8 * batch);
}

export const DRAFT_WINDOW_HELP =
  "the draft sees only its request's first SINK rows and the RECENT rows before each drafted token (attention sinks and a recent window, as MagicDec drafts): a drafted row reads a bounded past however long the request grows. Lossless either way: the target verifies. Default: the whole past";
export const THREADS_HELP =
  "onnxruntime threads of the target (default 2 when its weights pass 32 MiB, as a last-level cache holds about that much, else 1; its workers spin between kernels); the draft runs on one thread, so that it never waits for a core the target's workers hold";
export const DRAFT_PRECISION_HELP =
  "the draft's weights: int8 (default on CPU: 8-bit linear layers and head, a faster draft), int4 (4-bit) or float32 (as on disk; default with cuda). Never changes what a lossless run outputs";
export const TARGET_PRECISION_HELP =
  "the target's weights: float32 (default, as on disk), or int8 / int4 weight-only blocks for a target too large for this machine in float32 (`model info` says what each takes); runs on it are lossless with respect to that quantised target; the run records the precision";

/** The knobs by name (the run config's own names where they are its fields). */
export const KNOBS = {
  policy: { flag: '--policy <name>', help: 'speculation policy', schema: RUN_FIELDS.policy, parse: text, default: undefined, studio: 'echo' },
  batch: { flag: '--batch <n>', help: 'requests in flight at once', schema: RUN_FIELDS.batch, parse: fieldInteger('--batch', RUN_FIELDS.batch), default: 1, studio: 16 },
  kmax: {
    flag: '--kmax <n>',
    help: "verification budget: Σ(1+K_i) ≤ K_max tokens per step (default max(64, 6 × batch); on a modelled clock, the device's knee)",
    schema: RUN_FIELDS.kmax,
    parse: fieldInteger('--kmax', RUN_FIELDS.kmax),
  },
  requests: { flag: '--requests <n>', help: 'requests to run', schema: RUN_FIELDS.requests, parse: integerParser('--requests', 1), default: 8, studio: 64 },
  maxNewTokens: { flag: '--max-new-tokens <n>', help: 'tokens to generate per request at most', schema: RUN_FIELDS.maxNewTokens, parse: fieldInteger('--max-new-tokens', RUN_FIELDS.maxNewTokens), default: 64 },
  temperature: { flag: '--temperature <x>', help: '0 = greedy; > 0 = lossless tree sampling', schema: RUN_FIELDS.temperature, parse: numberParser('--temperature'), default: 0 },
  seed: { flag: '--seed <n>', help: 'sampling seed', schema: RUN_FIELDS.seed, parse: integerParser('--seed', 0), default: 0, studio: 1 },
  domain: { flag: '--domain <name>', help: 'bundled prompt set (code, prose, math); default code', schema: RUN_FIELDS.domain, parse: text, default: 'code' },
  promptsFile: {
    flag: '--prompts <file>',
    help: 'prompts file: one plain-text prompt per line, or JSONL with {"id","prompt"} per line or {"id","messages":[{"role","content"},…]} rendered by the target’s chat template (optional "domain", "arrivalMs")',
    schema: optionalString,
    parse: text,
  },
  draftDir: { flag: '--draft <dir>', help: 'draft model folder (Hugging Face) or EAGLE-3 head folder; default: the bundled demo pair', schema: optionalString, parse: text },
  targetDir: { flag: '--target <dir>', help: 'target model folder (Hugging Face)', schema: optionalString, parse: text },
  draftKind: {
    flag: '--draft-kind <kind>',
    help: 'model or head: what drafts (default: what the --draft folder holds; the bundled small draft); head without --draft picks the bundled demo head',
    schema: RUN_FIELDS.draftKind,
    parse: oneOf('--draft-kind', ['model', 'head'] as const),
  },
  chainLength: { flag: '--chain-length <n>', help: 'chain: draft tokens per step (default 5)', schema: RUN_FIELDS.chainLength, parse: fieldInteger('--chain-length', RUN_FIELDS.chainLength) },
  shape: { flag: '--shape <d,k,t>', help: 'tree policies: base depth, top-k, draft tokens per request (default 8,10,60)', schema: RUN_FIELDS.shape, parse: parseShape },
  taus: { flag: '--taus <list>', help: 'ECHO: τ_d at the sweet spots, e.g. 0:0.2,5:0.35', schema: RUN_FIELDS.taus, parse: parseTausFlag },
  tau: { flag: '--tau <x>', help: 'fixed: one τ for every gated depth', schema: RUN_FIELDS.tau, parse: parseTauFlag, studio: 0.3 },
  maxDepth: { flag: '--max-depth <n>', help: 'ECHO: deepest layer a confident request may reach', schema: RUN_FIELDS.maxDepth, parse: fieldInteger('--max-depth', RUN_FIELDS.maxDepth) },
  maxWidth: { flag: '--max-width <n>', help: 'ECHO: most children per node under width expansion', schema: RUN_FIELDS.maxWidth, parse: fieldInteger('--max-width', RUN_FIELDS.maxWidth) },
  dddThreshold: { flag: '--ddd-threshold <x>', help: 'ddd: stop deepening when log Σ_beam exp(S) is below this', schema: RUN_FIELDS.dddThreshold, parse: numberParser('--ddd-threshold') },
  verifyCost: {
    flag: '--verify-cost <knee:gamma[:draft]>',
    help: 'echo/dense/fixed: grant a token only if its expected acceptance pays for its verification time under this T_ver fit, and draft a layer only if a sure token would pay for its draft row too (profile-hw prints it); default: fill K_max',
    schema: RUN_FIELDS.verifyCost,
    parse: parseVerifyCost,
  },
  draftCost: {
    flag: '--draft-cost <share|auto>',
    help: "echo/dense/fixed: one draft forward's cost as a share of the target's one-token forward (profile-hw prints it), or auto: measured on this machine after loading; with a profile or warm-up, a layer is drafted only if its measured chance of acceptance pays for that; 0 = draft every layer the budget allows (default 0.05)",
    schema: z.union([z.number().min(0).max(MAX_DRAFT_COST), z.literal('auto')]),
    parse: (value: string): number | 'auto' => (value === 'auto' ? 'auto' : parseDraftCostShare(value, ' or auto')),
  },
  profile: { flag: '--profile <file>', help: 'echo/dense/fixed: calibration profile JSON with τ_d (from `echo-studio calibrate`)', schema: RUN_FIELDS.profile, parse: text },
  cuts: {
    flag: '--cuts <rule>',
    help: 'echo/dense/fixed: when a failed gate truncates: priced (only when the budget the cut frees buys more than the request\'s layer; the default) or bare (at every failed gate, the paper\'s rule alone)',
    schema: RUN_FIELDS.cuts,
    parse: oneOf('--cuts', ['priced', 'bare'] as const),
  },
  confidence: {
    flag: '--confidence <signal>',
    help: "echo/dense/fixed: what gates and priorities read: path-prob (the paper's draft path probability) or path-margin (each step renormalised over the parent's two best candidates); default: the profile's; without one, the warm-up's pick (the better separating signal); with --taus, path-prob",
    schema: RUN_FIELDS.confidence,
    parse: oneOf<ConfidenceSignal>('--confidence', ConfidenceSignalSchema.options),
  },
  draftWindow: {
    flag: '--draft-window <sink:recent>',
    help: DRAFT_WINDOW_HELP,
    schema: RUN_FIELDS.draftWindow,
    parse: (value: string): AttentionWindow => parseValidAttentionWindow(value.trim()) ?? bad(`--draft-window takes SINK:RECENT rows, e.g. 4:64 (recent ≥ 1), got "${value}"`),
  },
  targetPrecision: { flag: '--target-precision <precision>', help: TARGET_PRECISION_HELP, schema: RUN_FIELDS.targetPrecision, parse: precisionParser('--target-precision'), studio: 'float32' as WeightPrecision },
  draftPrecision: { flag: '--draft-precision <precision>', help: DRAFT_PRECISION_HELP, schema: WeightPrecisionSchema.optional(), parse: precisionParser('--draft-precision') },
  threads: {
    flag: '--threads <n>',
    help: THREADS_HELP,
    schema: z.number().int().min(1).optional(),
    // 1 up to twice this machine's cores: more only makes the workers wait on each other.
    parse: (value: string, machine: Machine): number => {
      const most = 2 * Math.max(1, machine.cores);
      const n = Number(value);
      return !Number.isInteger(n) || n < 1 || n > most ? bad(`--threads takes 1 to ${most} (twice this machine's ${most / 2} cores), got "${value}"`) : n;
    },
  },
  provider: {
    flag: '--provider <name>',
    help: 'onnxruntime execution provider: cpu (default) or cuda (falls back to cpu, saying why)',
    schema: z.enum(['cpu', 'cuda']).optional(),
    parse: oneOf('--provider', ['cpu', 'cuda'] as const),
  },
  clock: { flag: '--clock <kind>', help: 'wall (default), or modelled: also report time on the hardware named by --hw', schema: z.enum(['wall', 'modelled']).optional(), parse: text },
  hw: {
    flag: '--hw <spec>',
    help: "modelled clock: HARDWARE[:MODEL] roofline (e.g. h100:70b, a100:8b, h200:235b-a22b), measured (the paper's T_ver formula fitted to this machine) or curves (this machine's measured curves, no formula)",
    schema: optionalString,
    parse: text,
  },
  hwProfile: {
    flag: '--hw-profile <file>',
    help: "this machine's `echo-studio profile-hw --out` file: on the wall clock echo, dense and fixed are priced by its measured curves and K_max comes from its knee; with --hw measured or curves, the modelled clock's curves",
    schema: optionalString,
    parse: text,
  },
  priceProfile: {
    flag: '--price-profile <file>',
    help: "with --hw curves or measured: another `profile-hw --out` file of this machine that prices echo, dense and fixed and sets K_max's knee, while --hw-profile's curves time the run; a step is then not timed by the same measured points its shape was priced on, whose noise would read as a gain",
    schema: optionalString,
    parse: text,
  },
} satisfies Record<string, KnobSpec<never> | KnobSpec<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

export type KnobName = keyof typeof KNOBS;

/** A knob's default in the studio's Run form: its own, unless the studio starts elsewhere. */
export function studioDefault<K extends KnobName>(name: K): unknown {
  const spec = KNOBS[name] as { default?: unknown; studio?: unknown };
  return spec.studio ?? spec.default;
}
