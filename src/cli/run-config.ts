// From `run`'s flags to a RunConfig, shared by the commands that start runs from flags (run,
// sweep, reproduce): the config's validation with messages that name the flags, the notes on
// flags a policy ignores, and what a clock decides (K_max from a knee, the draft and verification
// prices).
import { clockFromSpec, clockPrices, loadHardwareProfile, unknownPolicy, type HardwareProfile, type ModelledClock, type VerifyCost } from '../engine/index.js';
import { GATED_POLICIES, POLICY_NAMES, RunConfigSchema, type PolicyName, type RunConfig, type WeightPrecision } from '../shared/config.js';
import { defaultKmax, KNOBS } from '../shared/knobs.js';

/**
 * `run`'s flags: the run config's own settings (src/shared/config.ts) plus what only the command
 * line has. Three take the command line's names: --draft, --target and --prompts.
 */
export interface RunFlags
  extends Pick<
      RunConfig,
      | 'batch' | 'domain' | 'requests' | 'maxNewTokens' | 'temperature' | 'seed' | 'draftKind' | 'chainLength' | 'shape' | 'taus' | 'tau'
      | 'maxDepth' | 'maxWidth' | 'dddThreshold' | 'verifyCost' | 'profile' | 'confidence' | 'cuts' | 'draftWindow' | 'targetPrecision'
    >,
    Partial<Pick<RunConfig, 'kmax'>> {
  /** Any text: checked against the policy names for a one-line error that lists them. */
  policy: string;
  /** Default: the modelled device's knee (suggestKmax) on a modelled clock, else defaultKmax(batch) (src/shared/knobs.ts). */
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
  priceProfile?: string;
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
  { key: 'cuts', flag: '--cuts', policies: GATED_POLICIES },
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
    domain: prompts === undefined ? (flags.domain ?? KNOBS.domain.default) : flags.domain,
    kmax: flags.kmax ?? defaultKmax(flags.batch),
    draftCost: draftCost === 'auto' ? undefined : draftCost,
  };
  const parsed = RunConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(issue.code === 'custom' || issue.path.length === 0 ? issue.message : `${flagOfField(String(issue.path[0]))}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * The clock decides the costs. On a modelled clock the run is budgeted and priced as that device
 * would: K_max defaults to the device's knee (suggestKmax for the batch) and the draft price
 * (`--draft-cost`, or `auto`) to the device's draft forward over its target forward, so the steps
 * a policy chooses are chosen for the device they are timed on. On the wall clock with this
 * machine's hardware profile (`--hw-profile`), the same from its measured curves: the wall clock
 * is what those curves measured. Explicit values win. On the wall clock without a profile nothing
 * is priced (`auto` measures this machine's draft forward). A price profile (`--price-profile`)
 * prices instead of the clock's own curves: a modelled clock of this machine's curves then times
 * each step by points measured apart from the ones its shape was chosen on, as the wall clock does.
 * Returns the K_max rule, the draft price to put in the config (undefined: the config's default)
 * and whether to measure this machine's.
 */
export function clockCosts(
  flags: { draftCost?: number | 'auto'; verifyCost?: VerifyCost },
  { clock, profile, priceProfile, log }: { clock?: ModelledClock; profile?: HardwareProfile; priceProfile?: HardwareProfile; log?: (line: string) => void } = {},
): { knee?: number; draftCost?: number; verifyCost?: VerifyCost; measureDraftCost: boolean } {
  // A profile prices the wall clock as its curves clock would: that is what its curves measured.
  const pricing = priceProfile ? clockFromSpec('curves', priceProfile) : (clock ?? (profile ? clockFromSpec('curves', profile) : undefined));
  if (!pricing) return { draftCost: flags.draftCost === 'auto' ? undefined : flags.draftCost, verifyCost: flags.verifyCost, measureDraftCost: flags.draftCost === 'auto' };
  const prices = clockPrices(pricing.costs);
  const whose = clock && !priceProfile ? "the device's" : "the profile's";
  const knee = pricing.costs.knee;
  const draftCost = typeof flags.draftCost === 'number' ? flags.draftCost : prices.draftCost;
  const verifyCost = flags.verifyCost ?? prices.verifyCost;
  const tokens = verifyCost.curves
    ? 'verified tokens and draft rows at their measured forward times'
    : `verified tokens at ${verifyCost.knee}:${verifyCost.gamma}:${verifyCost.draftRow ?? 0}${flags.verifyCost ? ' (--verify-cost)' : ` (${whose} knee, γ and draft row)`}`;
  log?.(
    `${priceProfile ? 'priced by the price profile, apart from the clock' : clock ? 'priced as the modelled device' : "priced by this machine's hardware profile"} (${pricing.label}): K_max from its knee, ${knee} tokens, unless --kmax is given; draft forward ${draftCost} of a target forward${typeof flags.draftCost === 'number' ? ' (--draft-cost)' : ` (${whose})`}; ${tokens}`,
  );
  return { knee, draftCost, verifyCost, measureDraftCost: false };
}

/**
 * `--price-profile FILE` → the profile that prices the run, apart from the one whose curves time
 * it; only for a clock of this machine's curves (`--hw curves` or `measured`): a roofline device
 * prices itself, and the wall clock has no curves to keep apart.
 */
export function priceProfileFromFlags(flags: { priceProfile?: string; hw?: string }): HardwareProfile | undefined {
  if (flags.priceProfile === undefined) return undefined;
  if (flags.hw !== 'curves' && flags.hw !== 'measured') {
    throw new Error(`--price-profile prices a run that this machine's measured curves time: it needs --hw curves or measured${flags.hw === undefined ? '' : `, got --hw ${flags.hw}`}`);
  }
  return loadHardwareProfile(flags.priceProfile);
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
