// An EAGLE-3 head folder → a running Eagle3HeadSession beside its target (docs/model-runtime.md,
// "EAGLE-3 draft heads"). The head's graph is cached like a model's, keyed by the head's files, the
// target's embedding when the head borrows it, and the precision.
import { weightContentHash } from './weight-hashes.js';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { WEIGHT_PRECISIONS, WeightPrecisionSchema, type WeightPrecision } from '../../shared/config.js';
import { parseModelConfig, readConfigJson, type ModelConfig } from './config.js';
import { checkHeadAgainstTarget, featureBoundaries, headArchitecture, isEagle3Config, notAHeadProblem, parseEagle3Config, type Eagle3Config } from './eagle3-config.js';
import { ModelLoadError } from './errors.js';
import type { WeightSource } from './graph-builder.js';
import { buildIntoCache, cachedGraphPath, cachedGraphProblem, cacheRoot, errorCode, graphCacheKey, markGraphUsed, pruneSupersededGraphs, removeCachedGraph, writeGraphSidecar } from './graph-cache.js';
import { buildHeadGraph } from './head-graph.js';
import { Eagle3HeadSession } from './head-session.js';
import { DEFAULT_THREADS, entryWeightSource, runtimeSessionOptions, type LoadOptions } from './loader.js';
import { indexWeights, isWeightDtype, readTensorF32, readTensorHalf, readTensorInts, weightIdentity, type HalfTensor, type TensorEntry, type WeightIndex } from './safetensors.js';
import { OrtModelSession, windowProblem } from './session.js';
import type { ModelInfo } from './types.js';

/** Bump when the head graph's layout changes, so cached head graphs are rebuilt. */
export const HEAD_GRAPH_VERSION = 9;

/** True when `dir` holds an EAGLE-3 head (its config.json names an Eagle3 class). */
export function isHeadFolder(dir: string): boolean {
  if (!existsSync(join(dir, 'config.json'))) return false;
  return isEagle3Config(readConfigJson(dir).json);
}

export interface HeadFolder {
  dir: string;
  configText: string;
  config: Eagle3Config;
  weights: WeightIndex;
  /** Boundaries of the target's hidden states the head reads. */
  featureBoundaries: number[];
  /** Whether the head borrows the target's embedding. */
  borrowsEmbedding: boolean;
}

/** Finds a head tensor by its published name, with or without `model.`, `midlayer.` also as `layers.0.`. */
export function headTensor(weights: WeightIndex, name: string): TensorEntry | undefined {
  const names = [name, `model.${name}`];
  if (name.startsWith('midlayer.')) names.push(`layers.0.${name.slice(9)}`, `model.layers.0.${name.slice(9)}`);
  for (const n of names) {
    const entry = weights.tensors.get(n);
    if (entry !== undefined) return entry;
  }
  return undefined;
}

function weightsFile(dir: string, weights: WeightIndex): string {
  return weights.files.length === 1 ? weights.files[0].path : join(dir, 'model.safetensors.index.json');
}

function headWeightSource(dir: string, weights: WeightIndex): WeightSource {
  return entryWeightSource(
    (name) => headTensor(weights, name),
    (name) => new ModelLoadError(weightsFile(dir, weights), `missing tensor ${name} (EAGLE-3 head)`),
    "the head's config.json",
  );
}

/** Reads and checks a head folder against its target's config (no weights read). */
export function openHeadFolder(dir: string, target: ModelConfig): HeadFolder {
  const { path, text, json } = readConfigJson(dir);
  if (!isEagle3Config(json)) throw new ModelLoadError(path, notAHeadProblem(json));
  const config = parseEagle3Config(json, path);
  checkHeadAgainstTarget(config, target, path);
  const boundaries = featureBoundaries(config, target.numLayers, path);
  const weights = indexWeights(dir);
  const borrowsEmbedding = headTensor(weights, 'embed_tokens.weight') === undefined;
  if (borrowsEmbedding && config.layers.hiddenSize !== target.hiddenSize) {
    throw new ModelLoadError(path, `the head has no embed_tokens.weight and its hidden size ${config.layers.hiddenSize} differs from the target's ${target.hiddenSize}, so it cannot use the target's`);
  }
  return { dir, configText: text, config, weights, featureBoundaries: boundaries, borrowsEmbedding };
}

/** What `model info` says of a head folder, read without its target. */
export interface HeadDescription {
  dir: string;
  kind: 'eagle3-head';
  architecture: string;
  parameters: number;
  /** The dtype most of its weights are stored in. */
  dtype: string;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  draftVocabSize: number;
  targetHiddenSize: number;
  /** The target layers (0-based) whose outputs it reads, or null for EAGLE-3's default rule. */
  featureLayers: number[] | null;
  /** Whether it carries its own embedding table (else it borrows the target's). */
  ownEmbedding: boolean;
  maxPositions: number;
}

/** Describes a head folder from its config and weight index (no weights read, no target needed). */
export function describeHeadFolder(dir: string): HeadDescription {
  const { path, json } = readConfigJson(dir);
  if (!isEagle3Config(json)) throw new ModelLoadError(path, notAHeadProblem(json));
  const config = parseEagle3Config(json, path);
  const weights = indexWeights(dir);
  let parameters = 0;
  const dtypes = new Map<string, number>();
  // Weights only: d2t and t2d are integer maps, not parameters.
  for (const t of weights.tensors.values()) {
    if (!isWeightDtype(t.dtype)) continue;
    const count = t.shape.reduce((a, b) => a * b, 1);
    parameters += count;
    dtypes.set(t.dtype, (dtypes.get(t.dtype) ?? 0) + count);
  }
  const l = config.layers;
  return {
    dir,
    kind: 'eagle3-head',
    architecture: headArchitecture(json),
    parameters,
    dtype: [...dtypes.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'float32',
    hiddenSize: l.hiddenSize,
    intermediateSize: l.intermediateSize,
    numLayers: l.numLayers,
    numHeads: l.numHeads,
    numKvHeads: l.numKvHeads,
    headDim: l.headDim,
    vocabSize: l.vocabSize,
    draftVocabSize: config.draftVocabSize,
    targetHiddenSize: config.targetHiddenSize,
    featureLayers: config.auxLayerIds,
    ownEmbedding: headTensor(weights, 'embed_tokens.weight') !== undefined,
    maxPositions: l.maxPositions,
  };
}

/** Target id of each draft id, from d2t (target = draft + d2t[draft]); identity when the vocabularies are equal. */
function draftToTarget(head: HeadFolder): Int32Array {
  const { draftVocabSize, layers } = head.config;
  const entry = headTensor(head.weights, 'd2t');
  const file = weightsFile(head.dir, head.weights);
  if (entry === undefined) {
    if (draftVocabSize === layers.vocabSize) return Int32Array.from({ length: draftVocabSize }, (_, i) => i);
    throw new ModelLoadError(file, `missing tensor d2t: a draft vocabulary of ${draftVocabSize} < ${layers.vocabSize} needs its map to target ids`);
  }
  if (entry.shape.length !== 1 || entry.shape[0] !== draftVocabSize) {
    throw new ModelLoadError(entry.file, `d2t has shape [${entry.shape.join(', ')}], expected [${draftVocabSize}] (draft_vocab_size)`);
  }
  const offsets = readTensorInts(entry);
  const out = new Int32Array(draftVocabSize);
  for (let i = 0; i < draftVocabSize; i++) {
    const id = i + offsets[i];
    if (!(id >= 0 && id < layers.vocabSize)) throw new ModelLoadError(entry.file, `d2t maps draft id ${i} to ${id}, outside the target's vocabulary [0, ${layers.vocabSize})`);
    out[i] = id;
  }
  const t2d = headTensor(head.weights, 't2d');
  if (t2d !== undefined && (t2d.shape.length !== 1 || t2d.shape[0] !== layers.vocabSize)) {
    throw new ModelLoadError(t2d.file, `t2d has shape [${t2d.shape.join(', ')}], expected [${layers.vocabSize}] (vocab_size)`);
  }
  return out;
}

export interface HeadLoadOptions extends Pick<LoadOptions, 'threads' | 'spin' | 'cacheDir' | 'onMessage' | 'window'> {
  slots?: number;
  maxLength?: number;
  precision?: WeightPrecision;
}

/**
 * Loads a head for the target in `targetDir` (whose config and weights it may read: the embedding
 * when the head has none). The target itself must be loaded with `featureBoundaries` of the result.
 */
export async function loadHead(dir: string, targetDir: string, options: HeadLoadOptions = {}): Promise<Eagle3HeadSession> {
  const precision = options.precision ?? 'float32';
  if (!WeightPrecisionSchema.safeParse(precision).success) throw new ModelLoadError(dir, `precision must be ${WEIGHT_PRECISIONS.join(', ')}, got ${String(precision)}`);
  const targetJson = readConfigJson(targetDir);
  const targetConfig = parseModelConfig(targetJson.json, targetJson.path);
  const head = openHeadFolder(dir, targetConfig);
  const cfg = head.config;
  const slots = options.slots ?? 8;
  const maxLength = options.maxLength ?? Math.min(2048, cfg.layers.maxPositions);
  const threads = options.threads ?? DEFAULT_THREADS;
  if (!Number.isInteger(slots) || slots < 1) throw new ModelLoadError(dir, `slots must be a positive integer, got ${slots}`);
  if (!Number.isInteger(maxLength) || maxLength < 1) throw new ModelLoadError(dir, `maxLength must be a positive integer, got ${maxLength}`);
  const window = options.window ?? null;
  const problem = window === null ? null : windowProblem(window);
  if (problem !== null) throw new ModelLoadError(dir, problem);
  const note = options.onMessage ?? (() => {});

  const toTarget = draftToTarget(head);
  const targetWeights = head.borrowsEmbedding ? indexWeights(targetDir) : null;
  const cacheDir = options.cacheDir ?? cacheRoot();
  // Keyed by the weights' content, as the decoder graphs are (weight-hashes.ts).
  const contentHash = (file: string) => weightContentHash(file, cacheDir, (f) => note(`hashing ${basename(f)} once for the graph cache (remembered while its size and mtime stay)`));
  const identity = weightIdentity(head.weights, contentHash) + (targetWeights ? `\ntarget embedding:\n${weightIdentity(targetWeights, contentHash)}` : '');
  const key = graphCacheKey(`eagle3-head-v${HEAD_GRAPH_VERSION}\n${head.configText}`, identity, precision);
  const graphPath = cachedGraphPath(key, cacheDir);
  let parameters = 0;
  for (const t of head.weights.tensors.values()) parameters += t.shape.reduce((a, b) => a * b, 1);
  const damaged = existsSync(graphPath) ? cachedGraphProblem(graphPath) : null;
  if (damaged !== null) {
    removeCachedGraph(graphPath);
    note(`${damaged}; rebuilding it`);
  }
  if (existsSync(graphPath)) {
    try {
      markGraphUsed(graphPath);
    } catch {
      // Only pruning by last use is affected.
    }
    note(`reused cached graph ${basename(graphPath)}`);
  } else {
    // A 16-bit embedding stays 16-bit (graph-builder: gatherEmbedding).
    let embedding: Float32Array | HalfTensor;
    if (targetWeights !== null) {
      const entry = targetWeights.tensors.get('model.embed_tokens.weight');
      if (entry === undefined) throw new ModelLoadError(targetDir, 'missing tensor model.embed_tokens.weight (the head borrows the target embedding)');
      embedding = readTensorHalf(entry) ?? readTensorF32(entry);
    } else {
      const source = headWeightSource(dir, head.weights);
      const shape = [cfg.layers.vocabSize, cfg.layers.hiddenSize];
      embedding = source.getHalf('embed_tokens.weight', shape) ?? source.get('embed_tokens.weight', shape);
    }
    const embeddingValues = embedding instanceof Float32Array ? embedding.length : embedding.bits.length;
    buildIntoCache(
      graphPath,
      (parameters + embeddingValues) * 4,
      (weightStore) => buildHeadGraph(cfg, { head: headWeightSource(dir, head.weights), embedding, draftToTarget: toTarget }, { precision, weightStore }),
      { source: dir, graph_version: `head-${HEAD_GRAPH_VERSION}`, architecture: 'eagle3' },
    );
    try {
      writeGraphSidecar(graphPath, { source: dir, graphVersion: HEAD_GRAPH_VERSION, architecture: 'eagle3', precision });
      pruneSupersededGraphs(graphPath, dir, precision);
    } catch (err) {
      note(`graph cache: cannot record or prune ${graphPath} (${errorCode(err)})`);
    }
    note(`built graph ${basename(graphPath)}`);
  }

  const info: ModelInfo = {
    dir,
    architecture: 'llama',
    kind: 'eagle3-head',
    vocabSize: cfg.layers.vocabSize,
    hiddenSize: cfg.layers.hiddenSize,
    numLayers: cfg.layers.numLayers,
    numHeads: cfg.layers.numHeads,
    numKvHeads: cfg.layers.numKvHeads,
    headDim: cfg.layers.headDim,
    parameters,
    dtype: 'float32',
    maxPositions: cfg.layers.maxPositions,
    bosTokenId: targetConfig.bosTokenId,
    eosTokenIds: targetConfig.eosTokenIds,
    precision,
  };
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(graphPath, { ...runtimeSessionOptions(threads, options.spin ?? false), executionProviders: ['cpu'] });
  } catch (err) {
    throw new ModelLoadError(graphPath, `onnxruntime could not load the built head graph: ${(err as Error).message.split('\n')[0]}`);
  }
  const inner = new OrtModelSession({ info, session, slots, maxLength, provider: 'cpu', window });
  return new Eagle3HeadSession({ inner, info, featureWidth: 3 * cfg.targetHiddenSize, draftVocabSize: cfg.draftVocabSize, draftToTarget: toTarget, featureBoundaries: head.featureBoundaries });
}
