// What a model's KV cache will take before it is allocated: slots × rows per slot, per layer, keys
// and values. A size that cannot fit is refused up front with the reason, instead of an allocation
// failing (or the machine swapping) halfway through loading.
import { totalmem } from 'node:os';
import type { ModelConfig } from './config.js';
import { PAST_BLOCK } from './graph-builder.js';

/** Most elements one typed array may hold. */
const MAX_ARRAY_ELEMENTS = 2 ** 32 - 1;
/** Share of this machine's memory the KV caches may take; the weights and the runtime need the rest. */
const KV_MEMORY_SHARE = 0.75;

type KvShape = Pick<ModelConfig, 'numLayers' | 'numKvHeads' | 'headDim'>;

/** Floats in one layer's key (or value) buffer: every slot's rows, rounded up to whole past blocks. */
export function kvBufferElements(model: KvShape, slots: number, maxLength: number): number {
  return slots * Math.ceil(maxLength / PAST_BLOCK) * PAST_BLOCK * model.numKvHeads * model.headDim;
}

/** Bytes of a model's whole KV cache (float32 keys and values of every layer). */
export function kvCacheBytes(model: KvShape, slots: number, maxLength: number): number {
  return model.numLayers * 2 * kvBufferElements(model, slots, maxLength) * 4;
}

const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/**
 * Why models loaded with `slots` KV slots of `maxLength` rows each cannot fit on this machine, or
 * null when they can.
 */
export function kvFitProblem(models: ReadonlyArray<{ name: string; config: KvShape }>, slots: number, maxLength: number, memoryBytes = totalmem()): string | null {
  const sizes = models.map((m) => ({ name: m.name, bytes: kvCacheBytes(m.config, slots, maxLength), elements: kvBufferElements(m.config, slots, maxLength) }));
  const what = `${slots} KV slots of ${maxLength} rows`;
  const tooLong = sizes.find((s) => s.elements > MAX_ARRAY_ELEMENTS);
  if (tooLong) return `${what} make one layer's cache of the ${tooLong.name} ${tooLong.elements} floats, more than one array can hold (${MAX_ARRAY_ELEMENTS})`;
  const total = sizes.reduce((sum, s) => sum + s.bytes, 0);
  if (total > KV_MEMORY_SHARE * memoryBytes) {
    const parts = sizes.map((s) => `${gib(s.bytes)} for the ${s.name}`).join(' and ');
    return `${what} need ${parts} of KV cache, more than ${Math.round(KV_MEMORY_SHARE * 100)} % of this machine's ${gib(memoryBytes)}`;
  }
  return null;
}
