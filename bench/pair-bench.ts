// What the pair benches (engine-policies, echo-policies) share: their common flags and a greedy
// run of one policy on a loaded pair.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseValidAttentionWindow, WeightPrecisionSchema, type AttentionWindow, type TreeShape, type WeightPrecision } from '../src/shared/config.js';
import { INTERLEAVINGS, type Interleaving } from '../src/engine/run/rounds.js';
import { splitRepeat } from '../src/engine/run/sweep.js';
import type { ModelPair } from '../src/engine/run/pair.js';
import type { SpeculationPolicy } from '../src/engine/policy/types.js';
import { Runner, type RunSummary, type WorkItem } from '../src/engine/run/runner.js';
import type { StepEvent } from '../src/shared/events.js';

/** parseArgs options every pair bench takes; each bench adds its own and sets its defaults. */
export function pairBenchOptions(defaults: { batches: string; policies: string; maxNewTokens: string; threads: string }) {
  return {
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    domains: { type: 'string', default: 'code,prose,math' },
    batches: { type: 'string', default: defaults.batches },
    policies: { type: 'string', default: defaults.policies },
    requests: { type: 'string' },
    'max-new-tokens': { type: 'string', default: defaults.maxNewTokens },
    threads: { type: 'string', default: defaults.threads },
    kmax: { type: 'string' },
    'draft-precision': { type: 'string', default: 'int8' },
    'draft-window': { type: 'string' },
    interleave: { type: 'string', default: 'steps' },
  } as const;
}

export interface PairBenchArgs {
  draft: string;
  target: string;
  domains: string[];
  batches: number[];
  policies: string[];
  maxNewTokens: number;
  threads: number;
  draftPrecision: WeightPrecision;
  /** How a round's runs share the machine (src/engine/run/rounds.ts). */
  interleave: Interleaving;
  /** `--draft-window SINK:RECENT`: the draft's attention sinks and recent window (default: its whole past). */
  draftWindow?: AttentionWindow;
}

export function precisionArg(value: string, what: string): WeightPrecision {
  const parsed = WeightPrecisionSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${what}: the draft precision is int8 or float32, got "${value}"`);
  return parsed.data;
}

/** The common flags, parsed and checked (both model folders must exist). */
export function pairBenchArgs(values: {
  draft: string;
  target: string;
  domains: string;
  batches: string;
  policies: string;
  'max-new-tokens': string;
  threads: string;
  'draft-precision': string;
  'draft-window'?: string;
  interleave: string;
}): PairBenchArgs {
  const interleave = values.interleave as Interleaving;
  if (!INTERLEAVINGS.includes(interleave)) throw new Error(`--interleave takes ${INTERLEAVINGS.join(' or ')}, got "${values.interleave}"`);
  for (const dir of [values.draft, values.target]) {
    if (!existsSync(join(dir, 'config.json'))) throw new Error(`no model at ${dir} (pass --draft DIR --target DIR)`);
  }
  return {
    draft: values.draft,
    target: values.target,
    domains: values.domains.split(','),
    batches: values.batches.split(',').map(Number),
    policies: values.policies.split(','),
    maxNewTokens: Number(values['max-new-tokens']),
    threads: Number(values.threads),
    draftPrecision: precisionArg(values['draft-precision'], '--draft-precision'),
    interleave,
    ...(values['draft-window'] !== undefined ? { draftWindow: windowArg(values['draft-window']) } : {}),
  };
}

function windowArg(value: string): AttentionWindow {
  const window = parseValidAttentionWindow(value);
  if (window === null) throw new Error(`--draft-window takes SINK:RECENT rows, e.g. 4:64 (recent ≥ 1), got "${value}"`);
  return window;
}

/**
 * A --policies entry's name and the options its suffix sets: `static:4x2x8` a base shape (depth x
 * top-k x tokens), `chain:3` a chain length. An `@…` suffix is each bench's own: a draft precision in
 * engine-policies (`chain:3@float32`), a confidence signal in echo-policies (`echo@path-margin`).
 * `#N` repeats an entry (`static#2`: an A/A control, as in `echo-studio sweep`).
 */
export function policyEntry(entry: string): { name: string; shape?: TreeShape; chainLength?: number } {
  const [name, spec] = splitRepeat(entry).repeated.split('@')[0].split(':');
  if (spec === undefined) return { name };
  const parts = spec.split('x').map(Number);
  const bad = () => new Error(`--policies ${entry}: expected name:DxKxT or chain:N`);
  if (parts.some((n) => !Number.isInteger(n) || n < 1)) throw bad();
  if (parts.length === 1) return { name, chainLength: parts[0] };
  if (parts.length !== 3) throw bad();
  return { name, shape: { depth: parts[0], topk: parts[1], tokens: parts[2] } };
}

/** A greedy run of `policy` over `workload` on the pair, not started. */
export function greedyRunner(
  pair: ModelPair,
  policy: SpeculationPolicy,
  run: { batch: number; kmax: number; maxNewTokens: number },
  workload: WorkItem[],
  onStep: (e: StepEvent) => void,
): Runner {
  return new Runner(
    {
      target: pair.target,
      draft: pair.draft,
      policy,
      ...run,
      temperature: 0,
      seed: 0,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength: pair.maxLength,
      onStep,
    },
    workload,
  );
}

/** One greedy run of `policy` over `workload` on the pair. */
export function runGreedy(...args: Parameters<typeof greedyRunner>): Promise<RunSummary> {
  return greedyRunner(...args).run();
}
