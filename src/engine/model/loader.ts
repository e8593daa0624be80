// HF model folder → ModelInfo, and → a running OrtModelSession (building or reusing the cached graph).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { WEIGHT_PRECISIONS, WeightPrecisionSchema, type WeightPrecision } from '../../shared/config.js';
import { parseModelConfig, readConfigJson, ropeTableRows, type ModelConfig } from './config.js';
import { headAsModelProblem, isEagle3Config } from './eagle3-config.js';
import { ModelLoadError } from './errors.js';
import { buildGraph, GRAPH_VERSION, type WeightSource } from './graph-builder.js';
import {
  cachedGraphPath,
  cacheRoot,
  buildIntoCache,
  DEFAULT_EXTERNAL_DATA_THRESHOLD,
  errorCode,
  graphCacheKey,
  markGraphUsed,
  pruneSupersededGraphs,
  removeCachedGraph,
  cachedGraphProblem,
  writeGraphSidecar,
  type GraphRemoval,
} from './graph-cache.js';
import { estimateAllPrecisions, estimateMemory, machineMemoryBytes, memoryFitProblem, type MemoryEstimate } from './memory-estimate.js';
import { indexWeights, isWeightDtype, readTensorF32, readTensorHalf, weightIdentity, type TensorEntry, type WeightIndex } from './safetensors.js';
import { weightContentHash } from './weight-hashes.js';
import { OrtModelSession, windowProblem } from './session.js';
import { ModelTokenizer } from './tokenizer.js';
import type { AttentionWindow, ModelInfo } from './types.js';
import { weightsMismatch } from './weight-check.js';

/** onnxruntime intra-op threads of a model large enough to use a second core (see defaultThreads). */
export const DEFAULT_THREADS = 2;

/**
 * Weights past this many bytes, as held at the load's precision, run on two threads by default and
 * smaller ones on one: about a desktop CPU's last-level cache. A model that fits it is bound by
 * compute and per-kernel overhead at a decode step's size, and waking a second thread costs more
 * than it saves (the 5.4M-parameter demo target and the draft, measured); one that does not reads
 * its weights from memory on every forward, and a second core adds memory bandwidth as well as
 * arithmetic (the 25.7M-parameter demo target, 103 MB in float32, decoded about 1.6x as fast on two
 * threads of an otherwise idle 2-core machine). docs/model-runtime.md, "Threads".
 */
export const TWO_THREADS_ABOVE_WEIGHT_BYTES = 32 * 2 ** 20;

/** onnxruntime intra-op threads for a model whose weights take this many bytes, when not told otherwise. */
export function defaultThreads(weightBytes: number): number {
  return weightBytes > TWO_THREADS_ABOVE_WEIGHT_BYTES ? DEFAULT_THREADS : 1;
}

/** The bytes a folder's weights take as the graph holds them at `precision` (memory-estimate.ts). */
export function heldWeightBytes(folder: Pick<ModelFolder, 'config' | 'untiedHead' | 'halfEmbedding'>, precision: WeightPrecision): number {
  return estimateMemory(folder.config, folder, precision, 1, 1).weightBytes;
}

export interface LoadOptions {
  /** onnxruntime intra-op threads (default: defaultThreads of the model's weights at its precision). */
  threads?: number;
  /**
   * Let the pool's worker threads spin between kernels, and briefly after a run, instead of
   * sleeping (default false). A sleeping worker is woken for every parallel kernel of a forward; a
   * spinning one holds a core while it waits, so of two models that alternate only one may spin
   * (pair.ts, pairThreads).
   */
  spin?: boolean;
  /** 'cuda' falls back to CPU, with a message in `warnings`, when the CUDA provider is missing. */
  provider?: 'cpu' | 'cuda';
  /** KV slots = requests in flight at once (default 8). */
  slots?: number;
  /** Rows per slot: committed history + scratch tree nodes (default min(2048, max_position_embeddings)). */
  maxLength?: number;
  /** Graph cache folder (default $ECHO_STUDIO_CACHE or ~/.cache/echo-studio). */
  cacheDir?: string;
  /** Weights above this many bytes (float32) stream into an external data file (default 64 MiB). */
  externalDataThreshold?: number;
  /**
   * Linear-layer and head weights: 'float32' (default, exact) or 'int8' / 'int4' (weight-only blocks: a draft
   * runs faster on CPU and its proposals never change what a lossless run outputs; a target takes a
   * quarter or an eighth of the memory, and runs are then lossless with respect to the quantised target).
   */
  precision?: WeightPrecision;
  /**
   * What a query sees of the committed past (attention sinks and a recent window), in place of the
   * model's own: for a draft, whose proposals never change what a lossless run outputs. Default:
   * the model's sliding window (Mistral), else the whole past.
   */
  window?: AttentionWindow | null;
  /**
   * For a target an EAGLE-3 head drafts for: the hidden-state boundaries its forward returns as
   * `features` (eagle3-config.ts, featureBoundaries). Default: none.
   */
  featureBoundaries?: number[];
  /**
   * The memory to plan the load against (default: $ECHO_STUDIO_MEMORY, else this machine's): a
   * load whose estimate cannot fit is refused before anything is built (memory-estimate.ts).
   */
  memoryBytes?: number;
  /** Receives one-line notes (CUDA fallback, graph built vs reused). */
  onMessage?: (line: string) => void;
}

export interface ModelFolder {
  dir: string;
  configText: string;
  config: ModelConfig;
  weights: WeightIndex;
  info: ModelInfo;
  cacheKey: string;
  graphPath: string;
  precision: WeightPrecision;
  /** Feature boundaries built into the graph (an EAGLE-3 head's target); empty: none. */
  featureBoundaries: number[];
  /** The folder has its own lm_head.weight and config.json does not tie it to the embedding. */
  untiedHead: boolean;
  /** The folder stores the embedding in float16 or bfloat16 (the graph's lookup table keeps it so). */
  halfEmbedding: boolean;
}

/**
 * EOS ids of config.json plus those of generation_config.json (chat models often list their
 * end-of-turn tokens only there). An unreadable generation_config.json is ignored: it is optional.
 */
function mergeGenerationEos(dir: string, eos: number[]): number[] {
  const path = join(dir, 'generation_config.json');
  if (!existsSync(path)) return eos;
  let raw: unknown;
  try {
    raw = (JSON.parse(readFileSync(path, 'utf8')) as { eos_token_id?: unknown }).eos_token_id;
  } catch {
    return eos;
  }
  const extra = Array.isArray(raw) ? raw : [raw];
  const merged = new Set(eos);
  for (const id of extra) if (typeof id === 'number' && Number.isInteger(id)) merged.add(id);
  return [...merged].sort((a, b) => a - b);
}

/** Reads config.json and the safetensors headers (no weights): enough for `model info`. */
export function openModelFolder(dir: string, cacheDir = cacheRoot(), precision: WeightPrecision = 'float32', featureBoundaries: number[] = [], onHash?: (file: string) => void): ModelFolder {
  const { path, text, json } = readConfigJson(dir);
  if (isEagle3Config(json)) throw new ModelLoadError(path, headAsModelProblem(json));
  const config = parseModelConfig(json, path);
  const weights = indexWeights(dir);
  // Weights that are not the model config.json describes are refused now, in one line, rather
  // than halfway through building a graph (or by a `model info` that reports the config alone).
  const mismatch = weightsMismatch(config, weights);
  if (mismatch !== null) throw mismatch;
  let parameters = 0;
  const dtypeCounts = new Map<ModelInfo['dtype'], number>();
  for (const t of weights.tensors.values()) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    parameters += count;
    if (isWeightDtype(t.dtype)) dtypeCounts.set(t.dtype, (dtypeCounts.get(t.dtype) ?? 0) + count);
  }
  const dtype = [...dtypeCounts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'float32';
  const info: ModelInfo = {
    dir,
    architecture: config.architecture,
    vocabSize: config.vocabSize,
    hiddenSize: config.hiddenSize,
    numLayers: config.numLayers,
    numHeads: config.numHeads,
    numKvHeads: config.numKvHeads,
    headDim: config.headDim,
    parameters,
    dtype,
    maxPositions: config.maxPositions,
    bosTokenId: config.bosTokenId,
    eosTokenIds: mergeGenerationEos(dir, config.eosTokenIds),
    precision,
  };
  // The key hashes the weights' bytes, so it is worked out only when a graph is looked up
  // (`model info` never needs it); each file is hashed once and remembered by size and mtime.
  let cacheKey: string | null = null;
  const key = () => (cacheKey ??= graphCacheKey(text, weightIdentity(weights, (file) => weightContentHash(file, cacheDir, onHash)), precision, featureBoundaries));
  return {
    dir,
    configText: text,
    config,
    weights,
    info,
    get cacheKey() {
      return key();
    },
    get graphPath() {
      return cachedGraphPath(key(), cacheDir);
    },
    precision,
    featureBoundaries,
    untiedHead: !config.tieWordEmbeddings && weights.tensors.has('lm_head.weight'),
    halfEmbedding: ['float16', 'bfloat16'].includes(weights.tensors.get('model.embed_tokens.weight')?.dtype ?? 'float32'),
  };
}

/** KV rows per slot a load gets when not told (loadModel's default). */
export function defaultMaxLength(config: ModelConfig): number {
  return Math.min(2048, config.maxPositions);
}

/** A folder's memory at every precision for `slots` slots of `maxLength` rows, from its headers alone. */
export function folderMemory(folder: Pick<ModelFolder, 'config' | 'untiedHead' | 'halfEmbedding'>, slots: number, maxLength: number): MemoryEstimate[] {
  return estimateAllPrecisions(folder.config, folder, slots, maxLength);
}

export function readModelInfo(dir: string): ModelInfo {
  return openModelFolder(dir).info;
}

/** True when a built graph for this exact folder is in the cache. */
export function isGraphCached(folder: ModelFolder): boolean {
  return existsSync(folder.graphPath);
}

/**
 * Weights read from safetensors entries one tensor at a time, shape-checked against what a
 * config.json implies: `find` gives a name's entry, `missing` the error for a name it has none of,
 * `config` names that config.json in the shape error.
 */
export function entryWeightSource(find: (name: string) => TensorEntry | undefined, missing: (name: string) => ModelLoadError, config: string): WeightSource {
  const entryFor = (name: string, shape: number[]): TensorEntry => {
    const entry = find(name);
    if (entry === undefined) throw missing(name);
    if (entry.shape.length !== shape.length || entry.shape.some((d, i) => d !== shape[i])) {
      throw new ModelLoadError(entry.file, `${entry.name} has shape [${entry.shape.join(', ')}], ${config} implies [${shape.join(', ')}]`);
    }
    return entry;
  };
  return {
    has: (name) => find(name) !== undefined,
    get: (name, shape, rows) => readTensorF32(entryFor(name, shape), rows),
    getHalf: (name, shape) => readTensorHalf(entryFor(name, shape)),
  };
}

/** A folder's weights as the graph builder reads them. */
export function weightSource(weights: WeightIndex): WeightSource {
  const indexFile = (): string => (weights.files.length === 1 ? weights.files[0].path : join(dirname(weights.files[0].path), 'model.safetensors.index.json'));
  return entryWeightSource(
    (name) => weights.tensors.get(name),
    (name) => new ModelLoadError(indexFile(), `missing tensor ${name}`),
    'config.json',
  );
}

export interface EnsuredGraph {
  path: string;
  /** True when the graph was built now, false when the cached one is reused. */
  built: boolean;
  /** When built: the superseded graphs of this folder and stale leftovers that were deleted. */
  pruned: GraphRemoval | null;
  /** Cache upkeep that failed without failing the load (sidecar not written, a file not deleted), one line each. */
  cacheProblems: string[];
  /** Why the cached graph was deleted and built again (cachedGraphProblem), or null. */
  damaged: string | null;
}

/** onnxruntime session options of every model this runtime loads (execution providers aside). */
export function runtimeSessionOptions(threads: number, spin = false): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: spin ? '1' : '0' } } },
  };
}

/**
 * Builds the graph into the cache (unless already there) and returns its path. A reuse is recorded
 * as the graph file's mtime; a build writes the `<key>.json` sidecar and then deletes the graphs
 * this one supersedes (same model folder). Neither upkeep step can fail the load.
 */
export function ensureGraph(folder: ModelFolder, externalThreshold = DEFAULT_EXTERNAL_DATA_THRESHOLD): EnsuredGraph {
  const cacheProblems: string[] = [];
  let damaged: string | null = null;
  if (isGraphCached(folder)) {
    damaged = cachedGraphProblem(folder.graphPath);
    if (damaged !== null) removeCachedGraph(folder.graphPath);
  }
  if (damaged === null && isGraphCached(folder)) {
    try {
      markGraphUsed(folder.graphPath);
    } catch (err) {
      cacheProblems.push(`cannot record the use of ${folder.graphPath} (${errorCode(err)}); pruning by last use may count it as unused`);
    }
    return { path: folder.graphPath, built: false, pruned: null, cacheProblems, damaged };
  }
  buildIntoCache(
    folder.graphPath,
    folder.info.parameters * 4,
    (weightStore) => buildGraph(folder.config, weightSource(folder.weights), { precision: folder.precision, featureBoundaries: folder.featureBoundaries, weightStore }),
    { source: folder.dir, graph_version: String(GRAPH_VERSION), architecture: folder.config.architecture },
    externalThreshold,
  );
  try {
    writeGraphSidecar(folder.graphPath, {
      source: folder.dir,
      graphVersion: GRAPH_VERSION,
      architecture: folder.config.architecture,
      precision: folder.precision,
      features: folder.featureBoundaries,
    });
  } catch (err) {
    // Without its sidecar the graph still works; only automatic pruning cannot tell its folder.
    cacheProblems.push(`cannot write the sidecar of ${folder.graphPath} (${errorCode(err)}); it will not be pruned automatically`);
    return { path: folder.graphPath, built: true, pruned: null, cacheProblems, damaged };
  }
  let pruned: GraphRemoval | null = null;
  try {
    pruned = pruneSupersededGraphs(folder.graphPath, folder.dir, folder.precision, Date.now(), folder.featureBoundaries);
    for (const f of pruned.failed) cacheProblems.push(`cannot delete ${f.path} (${f.reason})`);
  } catch (err) {
    cacheProblems.push(`cannot prune ${dirname(folder.graphPath)} (${errorCode(err)})`);
  }
  return { path: folder.graphPath, built: true, pruned, cacheProblems, damaged };
}

/**
 * Why CUDA cannot be used here, or null when it may be. onnxruntime-node ships the CUDA provider
 * as a separate download; without its library a CUDA session fails after printing a native error.
 */
export function cudaUnavailableReason(): string | null {
  if (process.platform !== 'linux' && process.platform !== 'win32') return `no CUDA build of onnxruntime-node for ${process.platform}`;
  let bindingDir: string;
  try {
    const require = createRequire(import.meta.url);
    const pkgDir = dirname(require.resolve('onnxruntime-node/package.json'));
    bindingDir = join(pkgDir, 'bin', 'napi-v6', process.platform, process.arch);
  } catch {
    return 'onnxruntime-node is not installed where it can be found';
  }
  const lib = process.platform === 'win32' ? 'onnxruntime_providers_cuda.dll' : 'libonnxruntime_providers_cuda.so';
  if (!existsSync(join(bindingDir, lib))) return `the CUDA provider (${lib}) is not installed in ${bindingDir}`;
  return null;
}

export async function loadModel(dir: string, options: LoadOptions = {}): Promise<OrtModelSession> {
  const precision = options.precision ?? 'float32';
  if (!WeightPrecisionSchema.safeParse(precision).success) throw new ModelLoadError(dir, `precision must be ${WEIGHT_PRECISIONS.join(', ')}, got ${String(precision)}`);
  const note = options.onMessage ?? (() => {});
  const folder = openModelFolder(dir, options.cacheDir ?? cacheRoot(), precision, options.featureBoundaries ?? [], (file) => note(`hashing ${basename(file)} once for the graph cache (remembered while its size and mtime stay)`));
  const threads = options.threads ?? defaultThreads(heldWeightBytes(folder, precision));
  const slots = options.slots ?? 8;
  const maxLength = options.maxLength ?? defaultMaxLength(folder.config);
  if (!Number.isInteger(threads) || threads < 1) throw new ModelLoadError(dir, `threads must be a positive integer, got ${threads}`);
  if (!Number.isInteger(slots) || slots < 1) throw new ModelLoadError(dir, `slots must be a positive integer, got ${slots}`);
  if (!Number.isInteger(maxLength) || maxLength < 1) throw new ModelLoadError(dir, `maxLength must be a positive integer, got ${maxLength}`);
  const positions = ropeTableRows(folder.config);
  if (maxLength > positions) throw new ModelLoadError(dir, `maxLength ${maxLength} is past the ${positions} positions the graph's RoPE tables cover`);
  // Mistral windows every layer alike, which the session's mask does; Qwen2's use_sliding_window
  // windows only some layers (max_window_layers), which it does not. A window no sequence outgrows
  // changes nothing.
  const sliding = folder.config.slidingWindow;
  if (sliding !== null && folder.config.architecture !== 'mistral' && maxLength > sliding) {
    throw new ModelLoadError(
      `${dir}/config.json`,
      `sliding_window ${sliding} is shorter than maxLength ${maxLength}; ${folder.config.architecture}'s per-layer sliding windows are not implemented, load with maxLength <= ${sliding}`,
    );
  }
  const ownWindow = sliding !== null && folder.config.architecture === 'mistral' && maxLength > sliding ? { sink: 0, recent: sliding } : null;
  const window = options.window !== undefined ? options.window : ownWindow;
  const problem = window === null ? null : windowProblem(window);
  if (problem !== null) throw new ModelLoadError(dir, problem);
  const tooBig = memoryFitProblem([{ name: 'model', precision, estimates: folderMemory(folder, slots, maxLength) }], options.memoryBytes ?? machineMemoryBytes());
  if (tooBig !== null) throw new ModelLoadError(dir, `${slots} KV slots of ${maxLength} rows: ${tooBig}`);
  let { path, built, pruned, cacheProblems, damaged } = ensureGraph(folder, options.externalDataThreshold);
  if (damaged !== null) note(`${damaged}; rebuilt it`);
  const superseded = pruned?.removed.length ?? 0;
  const freed = superseded === 0 ? '' : ` (deleted ${superseded} superseded graph${superseded === 1 ? '' : 's'} of this folder, ${(pruned!.removed.reduce((sum, e) => sum + e.bytes, 0) / (1 << 20)).toFixed(1)} MiB)`;
  note(built ? `built graph ${basename(path)}${freed}` : `reused cached graph ${basename(path)}`);
  for (const problem of cacheProblems) note(`graph cache: ${problem}`);

  let provider: 'cpu' | 'cuda' = 'cpu';
  if (options.provider === 'cuda') {
    const reason = cudaUnavailableReason();
    if (reason === null) provider = 'cuda';
    else note(`CUDA requested but ${reason}; running on CPU`);
  }
  const sessionOptions = runtimeSessionOptions(threads, options.spin ?? false);
  let session: ort.InferenceSession;
  try {
    try {
      session = await ort.InferenceSession.create(path, { ...sessionOptions, executionProviders: provider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'] });
    } catch (err) {
      if (built) throw err;
      // A cached graph that does not load (a torn or corrupted file): drop it and build it again.
      note(`cached graph ${basename(path)} could not be loaded (${(err as Error).message.split('\n')[0]}); rebuilding it`);
      removeCachedGraph(path);
      ({ path, built, pruned, cacheProblems } = ensureGraph(folder, options.externalDataThreshold));
      note(`built graph ${basename(path)}`);
      for (const problem of cacheProblems) note(`graph cache: ${problem}`);
      session = await ort.InferenceSession.create(path, { ...sessionOptions, executionProviders: provider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'] });
    }
  } catch (err) {
    if (provider !== 'cuda') {
      throw new ModelLoadError(path, `onnxruntime could not load the built graph: ${(err as Error).message.split('\n')[0]}`);
    }
    note(`CUDA session failed (${(err as Error).message.split('\n')[0]}); running on CPU`);
    provider = 'cpu';
    session = await ort.InferenceSession.create(path, { ...sessionOptions, executionProviders: ['cpu'] });
  }
  const info = folder.featureBoundaries.length > 0 ? { ...folder.info, featureWidth: folder.featureBoundaries.length * folder.config.hiddenSize } : folder.info;
  return new OrtModelSession({ info, session, slots, maxLength, provider, window });
}

export { graphFileBytes } from './graph-cache.js';

/** The folder's tokenizer, with the EOS ids of config.json and generation_config.json merged in. */
export function loadTokenizer(dir: string): ModelTokenizer {
  const { path, json } = readConfigJson(dir);
  return ModelTokenizer.load(dir, mergeGenerationEos(dir, parseModelConfig(json, path).eosTokenIds));
}
