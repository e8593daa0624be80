// From a RunConfig to a run's setup: resolve the model folders and prompts, load the pair sized for
// them, resolve τ_d (flags, profile or warm-up) and build the policy. `echo-studio run`, `sweep`
// and `reproduce` load a setup and start their runs on it; run.ts's prepare does both for one run.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { findPackageRoot, packageVersion } from '../package-root.js';
import { isGatedPolicy, type RunConfig, type WeightPrecision } from '../../shared/config.js';
import type { TraceHeader } from '../../shared/trace-schema.js';
import { AUTO_WARMUP, needsWarmup, resolveGates, type ResolvedGates } from './resolve-gates.js';
import { warmupProgressLog } from './warmup.js';
import { isEagle3Config, parseEagle3Config, refuseHeadAsModel } from '../model/eagle3-config.js';
import { loadPair, pairSlotLimit, type DraftKind, type ModelPair } from './pair.js';
import { measureForwardCurve } from '../cost/measure.js';
import { parseModelConfig, readConfigJson } from '../model/config.js';
import { kvFitProblem } from '../model/kv-budget.js';
import { IN_ORDER_KEYS } from '../model/graph-builder.js';
import { DEFAULT_DRAFT_COST } from '../policy/echo.js';
import { createPolicy, type PolicyOptions, type SpeculationPolicy } from '../policy/index.js';
import { slotRows, warmUpDecode, warmUpSteps, type SlotLimit, type WorkItem } from './runner.js';
import { buildTraceHeader } from '../trace/header.js';
import { MAX_DRAFT_DEPTH } from '../policy/drive.js';
import { encodePrompt, fitPrompts, readPromptsFile, repeatNote, skippedNotes, takeRequests, type FittedPrompts, type PromptRecord, type PromptTokenizer } from './workload.js';
import { Refusal } from '../refusal.js';

export const BUNDLED_DRAFT = 'echo-demo-draft';
export const BUNDLED_TARGET = 'echo-demo-target';
/** The bundled EAGLE-3 head for the bundled target (`--draft-kind head`). */
export const BUNDLED_HEAD = 'echo-demo-head';

function packageRoot(): string {
  return findPackageRoot(import.meta.url);
}

/** loadPair's draft kind for a config's: absent lets the draft folder say. */
export function draftKindOption(config: Pick<RunConfig, 'draftKind'>): { draftKind?: DraftKind } {
  if (config.draftKind === undefined) return {};
  return { draftKind: config.draftKind === 'head' ? 'eagle3-head' : 'model' };
}

/** The model folders a config names, or the bundled demo pair. */
export function resolveModelDirs(config: Pick<RunConfig, 'draftDir' | 'targetDir' | 'draftKind'>, root = packageRoot()): { draftDir: string; targetDir: string } {
  if (config.draftDir !== undefined && config.targetDir !== undefined) {
    return { draftDir: path.resolve(config.draftDir), targetDir: path.resolve(config.targetDir) };
  }
  const models = path.join(root, 'assets', 'models');
  const draftDir = path.join(models, config.draftKind === 'head' ? BUNDLED_HEAD : BUNDLED_DRAFT);
  const targetDir = path.join(models, BUNDLED_TARGET);
  if (config.draftKind === 'head' && !existsSync(path.join(draftDir, 'config.json'))) {
    throw new Refusal(`the bundled demo head is missing (${draftDir}); pass --draft HEAD_DIR --target DIR`);
  }
  for (const dir of [draftDir, targetDir]) {
    if (!existsSync(path.join(dir, 'config.json'))) {
      throw new Refusal(`the bundled demo pair is missing (${dir}); pass --draft DIR --target DIR`);
    }
  }
  return { draftDir, targetDir };
}

/** The folders a run loads, as a hardware profile names them (profileMismatches); undefined where they cannot be resolved. */
export function modelFolders(config: Pick<RunConfig, 'draftDir' | 'targetDir' | 'draftKind'>): { draft: string; target: string } | undefined {
  try {
    const { draftDir, targetDir } = resolveModelDirs(config);
    return { draft: draftDir, target: targetDir };
  } catch {
    // The load says what is missing, in its own words.
    return undefined;
  }
}

/** The bundled prompt sets (assets/prompts/NAME.jsonl) by name, in name order. */
export function bundledDomains(root = packageRoot()): string[] {
  const dir = path.join(root, 'assets', 'prompts');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => f.slice(0, -'.jsonl'.length))
    .sort();
}

/**
 * The prompts of the file or bundled domain a config names, in file order, read as a stream;
 * with `limit`, only that many (a run of few requests does not read a huge file to its end).
 */
export async function promptSource(config: Pick<RunConfig, 'promptsFile' | 'domain'>, options: { limit?: number; root?: string } = {}): Promise<PromptRecord[]> {
  if (config.promptsFile !== undefined) return readPromptsFile(config.promptsFile, { limit: options.limit });
  const root = options.root ?? packageRoot();
  const file = path.join(root, 'assets', 'prompts', `${config.domain}.jsonl`);
  // A domain is a name among the bundled ones, never a path that could lead out of their folder.
  if (!/^[\w-]+$/.test(config.domain ?? '') || !existsSync(file)) {
    throw new Refusal(`unknown domain "${config.domain}" (bundled: ${bundledDomains(root).join(', ') || 'none'}); or pass --prompts FILE`);
  }
  return readPromptsFile(file, { limit: options.limit });
}

/**
 * The most prompt tokens a request may have: the target's positions less its new tokens and the
 * deepest draft tree. The tree is reserved whatever the policy (ar drafts none), so that every
 * policy runs the same prompts: separate runs of two policies on one prompts file compare like
 * with like.
 */
export function promptTokenLimit(targetDir: string, config: Pick<RunConfig, 'maxNewTokens'>): { limit: number; why: string } {
  const { path: file, json } = readConfigJson(targetDir);
  const positions = parseModelConfig(json, file).maxPositions;
  return {
    limit: positions - config.maxNewTokens - MAX_DRAFT_DEPTH,
    why: `the target holds ${positions} positions: the prompt, ${config.maxNewTokens} new tokens and a draft tree up to ${MAX_DRAFT_DEPTH} deep, reserved for every policy alike`,
  };
}

/**
 * The prompts a run reads, tokenised: those that cannot fit the context are left out with a note,
 * and a run left with none fails. `requests` of them are taken (repeating the file, said so, when short).
 */
export async function tokenizeRunPrompts(
  config: RunConfig,
  tokenizer: PromptTokenizer,
  limits: { limit: number; why: string },
  options: { extra?: number; log?: (line: string) => void } = {},
): Promise<{ records: PromptRecord[]; workload: WorkItem[]; fitted: FittedPrompts }> {
  if (limits.limit < 1) throw new Refusal(`--max-new-tokens ${config.maxNewTokens} leaves no room for a prompt: ${limits.why}`);
  const source = await promptSource(config, { limit: Math.max(config.requests, options.extra ?? 0) });
  const fitted = fitPrompts(source, tokenizer, limits.limit);
  for (const note of skippedNotes(fitted, limits.limit, limits.why)) options.log?.(note);
  const where = config.promptsFile ?? `the ${config.domain} prompts`;
  if (fitted.items.length === 0) {
    throw new Refusal(`none of the ${source.length} prompts read from ${where} can run: each is empty or longer than ${limits.limit} tokens (${limits.why})`);
  }
  const fitting = fitted.items.map((i) => i.record);
  const note = repeatNote(fitting, config.requests, where);
  if (note) options.log?.(note);
  const records = takeRequests(fitting, config.requests);
  const workload = records.map((r, i) => ({ id: r.id, promptTokens: fitted.items[i % fitted.items.length].promptTokens, arrivalMs: r.arrivalMs }));
  return { records, workload, fitted };
}

export interface RunSetupOptions {
  /** Model folders to use instead of what the config names (the host passes the bundled pair it found). */
  models?: { draftDir: string; targetDir: string };
  threads?: number;
  /** The most threads the target takes by default (loadPair's maxDefaultThreads). */
  maxDefaultThreads?: number;
  /** Prompts other runs on this pair will take besides the config's (a study over several domains): the KV rows fit them too. */
  alsoFits?: readonly PromptRecord[];
  /** KV slots to load each model with (default the config's batch; a sweep taking turns by steps needs more). */
  slots?: number;
  /** onnxruntime execution provider; CUDA falls back to CPU with a one-line message. */
  provider?: 'cpu' | 'cuda';
  /** The draft's weight precision (default: int8 on CPU, see loadPair). */
  draftPrecision?: WeightPrecision;
  log?: (line: string) => void;
  /**
   * echo / dense / fixed: price draft forwards at what one costs on this machine against a target
   * forward, measured after loading, instead of config.draftCost (`run --draft-cost auto`).
   */
  measureDraftCost?: boolean;
  /** Setup phases as they happen: 'load' (tokenise, load both models), 'calibrate' (warm-up). */
  progress?: (task: 'load' | 'calibrate', done: number, total: number, message?: string) => void;
  /** Stops the setup between its phases (and the warm-up between its steps); models loaded so far are released. */
  signal?: AbortSignal;
}

/** Refuses, with the reason, KV slots that cannot fit this machine, before any model loads. */
export function checkKvFits(dirs: { draftDir: string; targetDir: string }, slots: number, maxLength: number, policy: RunConfig['policy']): void {
  const config = (dir: string) => {
    const { path: file, json } = readConfigJson(dir);
    // An EAGLE-3 head's KV is its own decoder layers'.
    return isEagle3Config(json) ? parseEagle3Config(json, file).layers : parseModelConfig(json, file);
  };
  const models = [{ name: 'target', config: config(dirs.targetDir) }, ...(policy === 'ar' ? [] : [{ name: 'draft', config: config(dirs.draftDir) }])];
  const problem = kvFitProblem(models, slots, maxLength);
  if (problem !== null) throw new Refusal(`${problem}: lower the batch, K_max or max new tokens`);
}

/** A run's models, prompts and policy, loaded and resolved; release() frees the models. */
export interface RunSetup {
  config: RunConfig;
  draftDir: string;
  targetDir: string;
  pair: ModelPair;
  /** The run's requests as read (ids as in the workload), for their prompt text. */
  records: PromptRecord[];
  workload: WorkItem[];
  /** KV rows per slot the pair was loaded with. */
  maxLength: number;
  /** How far a raised batch may grow the KV slots on this machine (the memory plan's answer). */
  slotLimit: SlotLimit;
  gates: ResolvedGates | null;
  /** The config's policy with its resolved τ_d. */
  policy: SpeculationPolicy;
  release(): Promise<void>;
}

/** Resolves folders and prompts, loads the pair sized for them, resolves τ_d, builds the policy. */
export async function loadRunSetup(config: RunConfig, options: RunSetupOptions = {}): Promise<RunSetup> {
  const { draftDir, targetDir } = options.models ?? resolveModelDirs(config);
  // An unknown or misconfigured policy fails before any model loads.
  createPolicy(config.policy, { ...config });
  const progress = options.progress ?? (() => {});
  const signal = options.signal;
  progress('load', 0, 3, 'reading the tokenizer');
  // Tokenise with the target's tokenizer before loading, to size the KV slots. A gated policy
  // without τ_d calibrates on a warm-up over the first prompts of the same source (as many as
  // `calibrate` takes, not just the run's few), so the KV slots must fit those too.
  const { ModelTokenizer } = await import('../model/tokenizer.js');
  refuseHeadAsModel(targetDir, 'the target');
  const tokenizer = ModelTokenizer.load(targetDir);
  const warmup = needsWarmup(config);
  const { records, workload, fitted } = await tokenizeRunPrompts(config, tokenizer, promptTokenLimit(targetDir, config), {
    extra: warmup ? AUTO_WARMUP.prompts : 0,
    log: (line) => {
      options.log?.(line);
      progress('load', 0, 3, line);
    },
  });
  const warmupWorkload = warmup ? fitted.items.slice(0, AUTO_WARMUP.prompts).map((item, i) => ({ id: `warmup-${i}`, promptTokens: item.promptTokens })) : [];
  let longest = 0;
  for (const w of [...workload, ...warmupWorkload]) longest = Math.max(longest, w.promptTokens.length);
  for (const r of options.alsoFits ?? []) longest = Math.max(longest, encodePrompt(r, tokenizer).length);
  const maxLength = slotRows(longest, config.maxNewTokens, config.kmax);
  const slots = Math.max(config.batch, options.slots ?? 0);
  checkKvFits({ draftDir, targetDir }, slots, maxLength, config.policy);
  const orderNote = inOrderKeysNote(maxLength, config.targetPrecision);
  if (orderNote) options.log?.(orderNote);
  signal?.throwIfAborted();
  progress('load', 1, 3, 'building or reusing the ONNX graphs and starting onnxruntime');
  const onMessage = (line: string) => {
    options.log?.(line);
    progress('load', 1, 3, line);
  };
  const pair = await loadPair(draftDir, targetDir, { slots, maxLength, threads: options.threads, maxDefaultThreads: options.maxDefaultThreads, provider: options.provider, draftPrecision: options.draftPrecision, targetPrecision: config.targetPrecision, draftWindow: config.draftWindow, onMessage, ...draftKindOption(config) });
  progress('load', 2, 3, 'models loaded');
  try {
    signal?.throwIfAborted();
    // echo / dense / fixed: τ_d from the config, else its profile, else a short announced warm-up.
    const logProgress = options.log ? warmupProgressLog(options.log) : undefined;
    const gates = await resolveGates({
      config,
      target: pair.target,
      draft: pair.draft,
      workload,
      warmupWorkload,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength,
      models: { draft: draftDir, target: targetDir },
      log: (line) => {
        options.log?.(line);
        progress('calibrate', 0, 1, line);
      },
      onProgress: (finished, total) => {
        signal?.throwIfAborted(); // a stop during the warm-up ends it here, between its steps
        logProgress?.(finished, total);
        progress('calibrate', finished, total, `warm-up: ${finished} of ${total} prompt runs finished`);
      },
    });
    if (gates?.source === 'warm-up') progress('calibrate', 1, 1, 'warm-up calibration done');
    // The signal the τ_d were calibrated in is part of the run: the policy gates with it and the
    // trace header records it, as it records the draft cost layers were priced at (when the
    // calibration's acceptance made a price possible), so a what-if re-score prices them alike.
    const draftCost = gates?.acceptance ? await runDraftCost(config, pair, options) : undefined;
    // An ungated run records its empty τ_d, so its trace header says so and a re-score gates alike.
    const resolved: RunConfig = gates
      ? { ...config, confidence: gates.confidence, ...(gates.source === 'ungated' ? { taus: {} } : {}), ...(draftCost !== undefined ? { draftCost } : {}) }
      : config;
    // Only a gated policy with measured acceptance prices its layers (policy/echo.ts gatedRules):
    // `ar` under a modelled clock carries the device's draft price and never drafts.
    if (resolved.draftCost && isGatedPolicy(config.policy) && gates?.acceptance) {
      options.log?.(
        `${config.policy}: drafts a layer only when its measured chance of acceptance repays a draft forward, priced at ${resolved.draftCost} of a target forward (--draft-cost; 0 turns this off)`,
      );
    }
    const policy = createPolicy(config.policy, policyOptions(resolved, gates));
    // A few steps of the run's own shapes, so its first requests decode at the steady pace (runner.ts).
    await warmUpDecode(
      { target: pair.target, draft: pair.draft, policy: createPolicy(config.policy, policyOptions(resolved, gates)), batch: config.batch, kmax: config.kmax, maxNewTokens: config.maxNewTokens, temperature: config.temperature, seed: config.seed, eosTokenIds: [], maxLength },
      workload,
      warmUpSteps(config.batch),
    );
    progress('load', 3, 3, 'ready');
    return { config: resolved, draftDir, targetDir, pair, records, workload, maxLength, slotLimit: pairSlotLimit(pair), gates, policy, release: () => pair.release() };
  } catch (err) {
    await pair.release();
    throw err;
  }
}

/** A policy's options from a resolved run config and its gates (τ_d, dense τ_d, measured acceptance). */
export function policyOptions(config: RunConfig, gates: ResolvedGates | null): PolicyOptions {
  return { ...config, ...(gates ? { taus: gates.taus, denseTaus: gates.denseTaus, acceptance: gates.acceptance, childAcceptance: gates.childAcceptance } : {}) };
}

/**
 * The draft price of a run that can price layers: measured on this machine when asked (the median
 * of a few one-token forwards of each model on a slot with some context), else the config's, else
 * the default.
 */
async function runDraftCost(config: RunConfig, pair: ModelPair, options: RunSetupOptions): Promise<number> {
  if (!options.measureDraftCost) return config.draftCost ?? DEFAULT_DRAFT_COST;
  return measureDraftCost(config, pair, options);
}

/** A draft forward's cost on this machine as a share of a target forward (`--draft-cost auto`), said in a line. */
export async function measureDraftCost(config: Pick<RunConfig, 'policy'>, pair: ModelPair, options: Pick<RunSetupOptions, 'log'>): Promise<number> {
  const forward = { tokenCounts: [1], repeats: 9, slots: 1, context: 16 };
  const [target] = await measureForwardCurve(pair.target, forward);
  const [draft] = await measureForwardCurve(pair.draft, forward);
  const share = Number((draft.ms / target.ms).toPrecision(3));
  options.log?.(`${config.policy}: measured a draft forward at ${share} of a target forward (${draft.ms.toFixed(2)} ms against ${target.ms.toFixed(2)} ms): the draft price`);
  return share;
}

/** The trace header of a setup's run: config, both models hashed, this machine, the resolved profile. */
export function runTraceHeader(setup: RunSetup, recordCandidates = false): Promise<TraceHeader> {
  // The provider the target actually runs on (a CUDA request may have fallen back to CPU).
  const provider = (setup.pair.target as { provider?: string }).provider ?? 'cpu';
  return buildTraceHeader({
    recordCandidates,
    config: setup.config,
    draftDir: setup.draftDir,
    targetDir: setup.targetDir,
    provider,
    draftPrecision: setup.pair.draft.info.precision,
    targetPrecision: setup.pair.target.info.precision,
    draftKind: setup.pair.draftKind,
    targetEnds: setup.pair.target.info.eosTokenIds,
    windows: { draft: setup.pair.draft.window, target: setup.pair.target.window },
    writer: `echo-studio ${packageVersion(packageRoot())}`,
    ...(setup.gates?.profile ? { profile: setup.gates.profile as unknown as Record<string, unknown> } : {}),
  });
}

/**
 * Past IN_ORDER_KEYS key columns a verified row may sum its attention in another order than the
 * same row decoded: a quantised target's speculative output can then part from its `ar` (float32
 * moves only last bits, a token at an exact tie). Said at load when the slots reach that far.
 */
export function inOrderKeysNote(maxLength: number, targetPrecision: RunConfig['targetPrecision']): string | null {
  if (maxLength <= IN_ORDER_KEYS || targetPrecision === undefined || targetPrecision === 'float32') return null;
  return `note: this run's requests reach ${maxLength} positions; past ${IN_ORDER_KEYS} an ${targetPrecision} target's verified rows may sum attention in another order than decoded ones, so its speculative output can part from ar's there (exact up to ${IN_ORDER_KEYS}: shorter prompts or fewer --max-new-tokens keep it)`;
}
