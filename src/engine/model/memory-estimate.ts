// What loading a model will take of this machine's memory, worked out from config.json and the
// safetensors headers before anything loads: its weights as onnxruntime will hold them at a given
// precision, its KV cache, and the one-time peak of building its graph. A load that cannot fit is
// refused up front, naming a precision that would, instead of swapping or being killed halfway.
import { totalmem } from 'node:os';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../../shared/config.js';
import type { ModelConfig } from './config.js';
import { headSharesTable, MAX_PROJECTION_BYTES, projectionBytes, weightBits } from './graph-builder.js';
import { DEFAULT_EXTERNAL_DATA_THRESHOLD } from './graph-cache.js';
import { kvCacheBytes } from './kv-budget.js';
import { Refusal } from '../refusal.js';
import { expectedWeights } from './weight-check.js';

/** Node, onnxruntime and a tokenizer before any weights: measured at about 150 MiB. */
export const PROCESS_BYTES = 150 * 2 ** 20;
/** Share of this machine's memory a load may plan to use; the system and other programs keep the rest. */
export const MEMORY_SHARE = 0.85;
/** Overrides the machine's memory the fit check reads (bytes, or a number with MiB / GiB), for tests and for a machine shared with other work. */
export const MEMORY_ENV = 'ECHO_STUDIO_MEMORY';

export interface MemoryEstimate {
  precision: WeightPrecision;
  /** The graph's weights as onnxruntime holds them (a quantised tied head gets its own copy). */
  weightBytes: number;
  /** Float32 keys and values of every layer for the slots and rows asked for. */
  kvBytes: number;
  /**
   * While the model runs: the process, the weights, the KV cache, and one projection part held
   * twice (onnxruntime prepacks a weight into a copy of its own before it frees the original).
   */
  runningBytes: number;
  /**
   * The one-time peak of the first load, which builds the graph: past 64 MiB the weights stream
   * into the graph's data file, so the builder holds a few copies of its largest matrix at most;
   * a smaller graph is held whole and encoded. Later loads read the built graph from the cache.
   */
  buildPeakBytes: number;
}

/** What of a folder's layout the estimate reads besides config.json (ModelFolder has both). */
export interface WeightLayout {
  /** The folder has its own lm_head.weight and config.json does not tie it (graph-builder: lmHeadProjection). */
  untiedHead: boolean;
  /** The folder stores the embedding in float16 or bfloat16, and the graph's lookup table keeps it so. */
  halfEmbedding: boolean;
}

/** The memory a decoder model takes at one precision. */
export function estimateMemory(cfg: ModelConfig, layout: WeightLayout, precision: WeightPrecision, slots: number, maxLength: number): MemoryEstimate {
  const bits = weightBits(precision);
  const matrix = (out: number, inner: number): number => projectionBytes(out, inner, bits);
  const V = cfg.vocabSize;
  const H = cfg.hiddenSize;
  let weightBytes = 0;
  let float32Bytes = 0;
  let largest = 0;
  for (const t of expectedWeights(cfg)) {
    const elements = t.shape.reduce((a, b) => a * b, 1);
    float32Bytes += 4 * elements;
    const embedding = t.name === 'model.embed_tokens.weight';
    // 2-D tensors other than the embedding are the linear layers; norms stay float32.
    const linear = t.shape.length === 2 && !embedding;
    weightBytes += linear ? matrix(t.shape[0], t.shape[1]) : embedding && layout.halfEmbedding ? 2 * elements : 4 * elements;
    largest = Math.max(largest, elements);
  }
  // A head that is not the embedding table itself is a matrix of its own.
  if (!headSharesTable(!layout.untiedHead, precision, !layout.halfEmbedding, V, H)) weightBytes += matrix(V, H);
  if (layout.untiedHead) float32Bytes += 4 * V * H;
  // The builder fuses q/k/v and gate/up: the largest matrix it holds at once, as float32.
  const qkv = (cfg.numHeads + 2 * cfg.numKvHeads) * cfg.headDim * H;
  largest = Math.max(largest, qkv, 2 * cfg.intermediateSize * H, V * H);
  const kvBytes = kvCacheBytes(cfg, slots, maxLength);
  const runningBytes = PROCESS_BYTES + weightBytes + Math.min(weightBytes, MAX_PROJECTION_BYTES) + kvBytes;
  // Streaming: the parts read, their fused float32 copy and its quantised form. Inline: the graph whole, then encoded.
  const building = float32Bytes > DEFAULT_EXTERNAL_DATA_THRESHOLD ? 3 * 4 * largest : 3 * weightBytes;
  return { precision, weightBytes, kvBytes, runningBytes, buildPeakBytes: PROCESS_BYTES + building };
}

/** The estimate at every precision, float32 first. */
export function estimateAllPrecisions(cfg: ModelConfig, layout: WeightLayout, slots: number, maxLength: number): MemoryEstimate[] {
  return WEIGHT_PRECISIONS.map((p) => estimateMemory(cfg, layout, p, slots, maxLength));
}

/** What a load needs at its worst moment: the first load's build peak or the running model, whichever is more. */
export function peakBytes(e: MemoryEstimate): number {
  return Math.max(e.runningBytes, e.buildPeakBytes);
}

/** This machine's memory as the fit check reads it: $ECHO_STUDIO_MEMORY when set, else os.totalmem(). */
export function machineMemoryBytes(env: NodeJS.ProcessEnv = process.env): number {
  const given = env[MEMORY_ENV];
  if (given === undefined || given.trim() === '') return totalmem();
  const m = /^\s*(\d+(?:\.\d+)?)\s*(GiB|G|MiB|M)?\s*$/i.exec(given);
  if (!m) throw new Refusal(`${MEMORY_ENV} takes bytes or a size such as 16GiB or 512MiB, got "${given}"`);
  const unit = (m[2] ?? '').toLowerCase().startsWith('g') ? 2 ** 30 : (m[2] ?? '').toLowerCase().startsWith('m') ? 2 ** 20 : 1;
  return Math.round(Number(m[1]) * unit);
}

/** The bytes a load may plan to use on a machine with `memoryBytes`. */
export function usableBytes(memoryBytes: number): number {
  return MEMORY_SHARE * memoryBytes;
}

export const formatGiB = (bytes: number): string => (bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${Math.max(1, Math.round(bytes / 2 ** 20))} MiB`);

/** A model a load plans: its name in messages ('target', 'draft', or a folder), its precision, and its estimate at every precision. */
export interface PlannedModel {
  name: string;
  precision: WeightPrecision;
  estimates: readonly MemoryEstimate[];
  /** How the caller asks for another precision, e.g. '--target-precision'; default: the precision's name alone. */
  precisionOption?: string;
}

/**
 * Why loading these models together cannot fit `memoryBytes`, naming the first precision that
 * would (tried on each model in turn, the first model first), or null when they fit. One line.
 */
export function memoryFitProblem(models: readonly PlannedModel[], memoryBytes: number): string | null {
  const usable = usableBytes(memoryBytes);
  const at = (m: PlannedModel, p: WeightPrecision) => m.estimates.find((e) => e.precision === p)!;
  const total = (choice: ReadonlyMap<PlannedModel, WeightPrecision>) => models.reduce((sum, m) => sum + peakBytes(at(m, choice.get(m) ?? m.precision)), 0);
  const asked = new Map(models.map((m) => [m, m.precision] as const));
  const need = total(asked);
  if (need <= usable) return null;
  const parts = models
    .map((m) => {
      const e = at(m, m.precision);
      return `${m.name} at ${m.precision}: weights ${formatGiB(e.weightBytes)} + KV ${formatGiB(e.kvBytes)}`;
    })
    .join('; ');
  const head = `needs about ${formatGiB(need)} (${parts}; with onnxruntime's copies and the first load's graph build), more than the ${formatGiB(usable)} this machine allows (${Math.round(MEMORY_SHARE * 100)} % of ${formatGiB(memoryBytes)})`;
  // Smaller weights first on the first model (the target in a pair), then the others.
  for (const m of models) {
    for (const p of WEIGHT_PRECISIONS) {
      if (peakBytes(at(m, p)) >= peakBytes(at(m, m.precision))) continue;
      const choice = new Map(asked).set(m, p);
      const fits = total(choice);
      if (fits <= usable) {
        const how = m.precisionOption ? ` (${m.precisionOption} ${p})` : '';
        return `${head}: the ${m.name} in ${p} would fit, about ${formatGiB(fits)}${how}`;
      }
    }
  }
  return `${head}: no precision fits; lower the batch or the context, or use a machine with more memory`;
}
