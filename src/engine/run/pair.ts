// A draft/target model pair: both models loaded with the same KV slots, their tokenizers
// checked to share one vocabulary (speculation compares token ids across the two). On CPU the
// draft runs on 8-bit weights by default: a one-token draft call is bound by reading its weights,
// and what the draft proposes never changes a lossless run's output, only how much of it the
// target accepts. The target runs in float32 unless told otherwise (targetPrecision), and then every
// lossless run outputs what plain decoding of that quantised target would.
import { defaultDraftPrecision, type WeightPrecision } from '../../shared/config.js';
import { parseModelConfig, readConfigJson } from '../model/config.js';
import { notAHeadProblem, refuseHeadAsModel } from '../model/eagle3-config.js';
import { isHeadFolder, loadHead, openHeadFolder } from '../model/head-loader.js';
import { defaultThreads, folderMemory, heldWeightBytes, loadModel, openModelFolder, type LoadOptions } from '../model/loader.js';
import { kvFitProblem } from '../model/kv-budget.js';
import { machineMemoryBytes, memoryFitProblem, type PlannedModel } from '../model/memory-estimate.js';
import { assertSameVocabulary, ModelTokenizer } from '../model/tokenizer.js';
import type { AttentionWindow, ModelSession } from '../model/types.js';
import { Refusal } from '../refusal.js';
import type { SlotLimit } from './runner.js';

/** What drafts: a small language model, or an EAGLE-3 head that reads the target's features. */
export type DraftKind = 'model' | 'eagle3-head';

export interface ModelPair {
  draft: ModelSession;
  draftKind: DraftKind;
  target: ModelSession;
  tokenizer: ModelTokenizer;
  draftDir: string;
  targetDir: string;
  /** KV rows per slot both models were loaded with. */
  maxLength: number;
  release(): Promise<void>;
}

export interface PairOptions extends Pick<LoadOptions, 'threads' | 'provider' | 'cacheDir' | 'onMessage' | 'memoryBytes'> {
  /** KV slots = requests in flight at once. */
  slots: number;
  /** Rows per slot: prompt + output + draft tree. */
  maxLength: number;
  /** The draft's linear-layer weights; default int8 on CPU, float32 with CUDA (see defaultDraftPrecision). */
  draftPrecision?: WeightPrecision;
  /** The target's linear-layer weights; default float32 (a quantised target makes runs lossless with respect to it). */
  targetPrecision?: WeightPrecision;
  /**
   * Attention sinks and a recent window for the draft (default: the draft's own attention): a
   * drafted row then reads at most sink + recent rows of its request's past, however long it grows.
   */
  draftWindow?: AttentionWindow;
  /** What the draft folder holds; default: an EAGLE-3 head when its config.json says so, else a model. */
  draftKind?: DraftKind;
  /**
   * The most threads the target takes when `threads` is not given (default: no cap). The studio
   * leaves a core to its window this way: on a 2-core machine two spinning target threads would
   * take the cores the renderer draws with.
   */
  maxDefaultThreads?: number;
}

/**
 * How a pair's two models share the cores: the target on `threads` threads (default: what its size
 * measured best with, defaultThreads) whose workers spin, the draft on one thread, the caller's.
 * Sleeping workers are woken for every parallel kernel, which costs a small forward more than its
 * second core gives it; spinning ones hold their cores while they wait, so the draft, which runs
 * between the target's forwards, must not need them (docs/model-runtime.md, "Threads").
 */
export function pairThreads(
  threads: number | undefined,
  targetWeightBytes: number,
  maxDefaultThreads = Infinity,
): { target: { threads: number; spin: boolean }; draft: { threads: number; spin: boolean } } {
  const target = threads ?? Math.max(1, Math.min(defaultThreads(targetWeightBytes), maxDefaultThreads));
  return { target: { threads: target, spin: target > 1 }, draft: { threads: 1, spin: false } };
}

/**
 * Refuses, before either model loads, a pair whose memory estimate cannot fit this machine (or
 * `options.memoryBytes`), in one line naming a precision that would fit (memory-estimate.ts).
 */
export function checkPairMemory(options: Pick<PairOptions, 'slots' | 'maxLength' | 'memoryBytes'>, target: { dir: string; precision: WeightPrecision }, draft?: { dir: string; precision: WeightPrecision }): void {
  const plan = (m: { dir: string; precision: WeightPrecision }, name: 'target' | 'draft'): PlannedModel => ({
    name,
    precision: m.precision,
    estimates: folderMemory(openModelFolder(m.dir), options.slots, options.maxLength),
    precisionOption: `--${name}-precision`,
  });
  const problem = memoryFitProblem([plan(target, 'target'), ...(draft ? [plan(draft, 'draft')] : [])], options.memoryBytes ?? machineMemoryBytes());
  if (problem !== null) throw new Refusal(`${options.slots} KV slots of ${options.maxLength} rows: the pair ${problem}`);
}

/** The most requests in flight a run takes (the batch setting's own bound). */
export const MAX_SLOTS = 1024;

/**
 * How many KV slots a loaded pair could grow to, from the same memory plan the load was checked
 * against (checkPairMemory: weights at their loaded precisions, KV for the slots at the pair's rows,
 * onnxruntime's copies) and the KV budget (one array per layer, a share of the machine), and why
 * not one more. The largest fitting count is found by bisection: both checks only grow with slots.
 */
export function pairSlotLimit(pair: Pick<ModelPair, 'draft' | 'draftKind' | 'target' | 'draftDir' | 'targetDir' | 'maxLength'>, options: { memoryBytes?: number } = {}): SlotLimit {
  const memoryBytes = options.memoryBytes ?? machineMemoryBytes();
  const folders = [
    { name: 'target' as const, folder: openModelFolder(pair.targetDir), session: pair.target },
    // A head is a layer or two beside the target: the target decides, as at load.
    ...(pair.draftKind === 'model' ? [{ name: 'draft' as const, folder: openModelFolder(pair.draftDir), session: pair.draft }] : []),
  ];
  const problem = (slots: number): string | null => {
    const planned: PlannedModel[] = folders.map((f) => ({ name: f.name, precision: f.session.info.precision, estimates: folderMemory(f.folder, slots, pair.maxLength), precisionOption: `--${f.name}-precision` }));
    const memory = memoryFitProblem(planned, memoryBytes);
    if (memory !== null) return `${slots} KV slots of ${pair.maxLength} rows: the pair ${memory}`;
    return kvFitProblem(folders.map((f) => ({ name: f.name, config: f.session.info })), slots, pair.maxLength, memoryBytes);
  };
  const loaded = Math.min(pair.target.capacity, pair.draft.capacity);
  if (problem(MAX_SLOTS) === null) return { max: MAX_SLOTS, beyond: `a run takes at most ${MAX_SLOTS} requests in flight` };
  let fits = loaded; // loaded and running: what it holds fits, whatever the plan says now
  let fails = MAX_SLOTS;
  while (fails - fits > 1) {
    const mid = Math.floor((fits + fails) / 2);
    if (problem(mid) === null) fits = mid;
    else fails = mid;
  }
  return { max: fits, beyond: problem(fits + 1) ?? `${fits + 1} slots do not fit this machine` };
}

export async function loadPair(draftDir: string, targetDir: string, options: PairOptions): Promise<ModelPair> {
  // A folder that is not a model at all should say so, not that its tokenizer.json is missing.
  const targetJson = readConfigJson(targetDir);
  refuseHeadAsModel(targetDir, 'the target');
  readConfigJson(draftDir);
  const headFolder = isHeadFolder(draftDir);
  const kind = options.draftKind ?? (headFolder ? 'eagle3-head' : 'model');
  if (kind === 'eagle3-head') {
    if (!headFolder) throw new Refusal(`${draftDir}: ${notAHeadProblem(readConfigJson(draftDir).json)} (draft kind "model" loads it as a draft)`);
    return loadHeadPair(draftDir, targetDir, parseModelConfig(targetJson.json, targetJson.path), options);
  }
  if (headFolder) throw new Refusal(`${draftDir} is an EAGLE-3 head, not a draft model (draft kind "head" loads it)`);
  const targetTokenizer = ModelTokenizer.load(targetDir);
  const draftTokenizer = ModelTokenizer.load(draftDir);
  assertSameVocabulary(draftTokenizer, targetTokenizer);
  const draftPrecision = options.draftPrecision ?? defaultDraftPrecision(options.provider);
  checkPairMemory(options, { dir: targetDir, precision: options.targetPrecision ?? 'float32' }, { dir: draftDir, precision: draftPrecision });
  const load = { provider: options.provider, cacheDir: options.cacheDir, onMessage: options.onMessage, slots: options.slots, memoryBytes: options.memoryBytes };
  const threads = pairThreads(options.threads, heldWeightBytes(openModelFolder(targetDir), options.targetPrecision ?? 'float32'), options.maxDefaultThreads);
  const target = await loadModel(targetDir, { ...load, ...threads.target, maxLength: options.maxLength, precision: options.targetPrecision ?? 'float32' });
  const draft = await loadModel(draftDir, {
    ...load,
    ...threads.draft,
    maxLength: options.maxLength,
    precision: draftPrecision,
    ...(options.draftWindow ? { window: options.draftWindow } : {}),
  });
  // Padded output layers may differ in size, but the draft must never propose an id the target lacks.
  if (draft.info.vocabSize > target.info.vocabSize) {
    await Promise.all([draft.release(), target.release()]);
    throw new Refusal(
      `draft ${draftDir} has ${draft.info.vocabSize} output logits but target ${targetDir} only ${target.info.vocabSize}: the pair must share one vocabulary`,
    );
  }
  const tokenizer = ModelTokenizer.load(targetDir, target.info.eosTokenIds);
  return {
    draft,
    draftKind: 'model',
    target,
    tokenizer,
    draftDir,
    targetDir,
    maxLength: options.maxLength,
    release: async () => {
      await Promise.all([draft.release(), target.release()]);
    },
  };
}

/**
 * A target and the EAGLE-3 head that drafts for it: the head is checked against the target's config
 * first (one line on a mismatch), then the target is loaded with the features the head reads. The
 * head has no tokenizer of its own; it reads and proposes the target's ids.
 */
async function loadHeadPair(draftDir: string, targetDir: string, targetConfig: ReturnType<typeof parseModelConfig>, options: PairOptions): Promise<ModelPair> {
  const { featureBoundaries } = openHeadFolder(draftDir, targetConfig);
  // The head is a layer or two beside the target: the target decides whether the pair fits.
  checkPairMemory(options, { dir: targetDir, precision: options.targetPrecision ?? 'float32' });
  const load = { provider: options.provider, cacheDir: options.cacheDir, onMessage: options.onMessage, slots: options.slots, memoryBytes: options.memoryBytes };
  const threads = pairThreads(options.threads, heldWeightBytes(openModelFolder(targetDir), options.targetPrecision ?? 'float32'), options.maxDefaultThreads);
  const target = await loadModel(targetDir, { ...load, ...threads.target, maxLength: options.maxLength, precision: options.targetPrecision ?? 'float32', featureBoundaries });
  let draft;
  try {
    draft = await loadHead(draftDir, targetDir, {
      cacheDir: options.cacheDir,
      onMessage: options.onMessage,
      slots: options.slots,
      ...threads.draft,
      maxLength: options.maxLength,
      precision: options.draftPrecision ?? defaultDraftPrecision(options.provider),
      ...(options.draftWindow ? { window: options.draftWindow } : {}),
    });
  } catch (err) {
    await target.release();
    throw err;
  }
  return {
    draft,
    draftKind: 'eagle3-head',
    target,
    tokenizer: ModelTokenizer.load(targetDir, target.info.eosTokenIds),
    draftDir,
    targetDir,
    maxLength: options.maxLength,
    release: async () => {
      await Promise.all([draft.release(), target.release()]);
    },
  };
}
