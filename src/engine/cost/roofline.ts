// Roofline forward time for named hardware and model sizes: a forward over N packed tokens reads
// the weights it touches once (memory time = bytes / bandwidth) and does 2·params FLOPs per token
// (compute time = 2·active·N / FLOPs); it takes the longer of the two, plus a fixed launch
// overhead. Reading the KV cache is counted when the caller says how many context rows the
// forward attends to. The peaks are datasheet figures scaled by typical achieved efficiency; the
// point is the shape (flat, then linear past the ridge), not the last digit.

export interface Hardware {
  name: string;
  /** Peak dense matmul throughput at the weights' dtype, FLOP/s. */
  peakFlops: number;
  /** Peak memory bandwidth, bytes/s. */
  peakBandwidth: number;
  /** Fraction of peak FLOPs and bandwidth a serving engine typically reaches. */
  computeEfficiency: number;
  memoryEfficiency: number;
  /** Fixed cost per forward (kernel launches, scheduling), ms. */
  overheadMs: number;
}

export interface ModelSize {
  name: string;
  /** All parameters (what a forward may have to read). */
  totalParams: number;
  /** Parameters one token passes through (= total for a dense model). */
  activeParams: number;
  /** MoE: routed experts and experts per token; absent for dense models. */
  experts?: { count: number; perToken: number };
  bytesPerParam: number;
  /** KV cache bytes per context token (all layers, K and V). */
  kvBytesPerToken: number;
}

export const HARDWARE: Record<string, Hardware> = {
  h100: { name: 'NVIDIA H100 SXM', peakFlops: 989e12, peakBandwidth: 3.35e12, computeEfficiency: 0.6, memoryEfficiency: 0.8, overheadMs: 0.3 },
  h200: { name: 'NVIDIA H200 SXM', peakFlops: 989e12, peakBandwidth: 4.8e12, computeEfficiency: 0.6, memoryEfficiency: 0.8, overheadMs: 0.3 },
  a100: { name: 'NVIDIA A100 SXM 80GB', peakFlops: 312e12, peakBandwidth: 2.04e12, computeEfficiency: 0.6, memoryEfficiency: 0.8, overheadMs: 0.3 },
  'cpu-laptop': { name: 'laptop CPU (8 cores, AVX2, DDR5)', peakFlops: 1e12, peakBandwidth: 80e9, computeEfficiency: 0.3, memoryEfficiency: 0.6, overheadMs: 0.2 },
};

/** bf16 weights; KV = layers × 2 × kv heads × head dim × 2 bytes. */
export const MODEL_SIZES: Record<string, ModelSize> = {
  '8b': { name: 'Llama-3.1-8B', totalParams: 8.0e9, activeParams: 8.0e9, bytesPerParam: 2, kvBytesPerToken: 32 * 2 * 8 * 128 * 2 },
  '70b': { name: 'Llama-3.3-70B', totalParams: 70.6e9, activeParams: 70.6e9, bytesPerParam: 2, kvBytesPerToken: 80 * 2 * 8 * 128 * 2 },
  '235b-a22b': {
    name: 'Qwen3-235B-A22B (MoE)',
    totalParams: 235e9,
    activeParams: 22e9,
    experts: { count: 128, perToken: 8 },
    bytesPerParam: 2,
    kvBytesPerToken: 94 * 2 * 4 * 128 * 2,
  },
};

export function hardwareByName(name: string): Hardware {
  const hw = HARDWARE[name];
  if (!hw) throw new Error(`unknown hardware "${name}" (known: ${Object.keys(HARDWARE).join(', ')})`);
  return hw;
}

export function modelByName(name: string): ModelSize {
  const m = MODEL_SIZES[name];
  if (!m) throw new Error(`unknown model size "${name}" (known: ${Object.keys(MODEL_SIZES).join(', ')})`);
  return m;
}

/**
 * Weight bytes a forward over `tokens` tokens reads. Dense: all of them. MoE: the shared part
 * plus the experts the tokens are routed to, expected under uniform routing:
 * experts touched = E · (1 − (1 − k/E)^tokens).
 */
export function weightBytesRead(model: ModelSize, tokens: number): number {
  if (!model.experts || tokens <= 0) return model.totalParams * model.bytesPerParam * (tokens > 0 ? 1 : 0);
  const { count, perToken } = model.experts;
  // active = shared + expertParams·k/E and total = shared + expertParams.
  const expertParams = (model.totalParams - model.activeParams) / (1 - perToken / count);
  const shared = model.totalParams - expertParams;
  const touched = 1 - (1 - perToken / count) ** tokens;
  return (shared + expertParams * touched) * model.bytesPerParam;
}

export interface RooflineTime {
  ms: number;
  memoryMs: number;
  computeMs: number;
  bound: 'memory' | 'compute';
}

/** Forward time of `tokens` packed tokens attending to `contextTokens` KV rows in total. */
export function rooflineForward(hw: Hardware, model: ModelSize, tokens: number, contextTokens = 0): RooflineTime {
  if (!(tokens >= 1)) throw new Error(`a forward needs at least one token, got ${tokens}`);
  const bytes = weightBytesRead(model, tokens) + contextTokens * model.kvBytesPerToken;
  const memoryMs = (bytes / (hw.peakBandwidth * hw.memoryEfficiency)) * 1e3;
  const computeMs = ((2 * model.activeParams * tokens) / (hw.peakFlops * hw.computeEfficiency)) * 1e3;
  return {
    ms: Math.max(memoryMs, computeMs) + hw.overheadMs,
    memoryMs,
    computeMs,
    bound: computeMs > memoryMs ? 'compute' : 'memory',
  };
}

/** Tokens at which compute time overtakes weight reading (no KV): the roofline's knee. */
export function rooflineKnee(hw: Hardware, model: ModelSize): number {
  for (let n = 1; n <= 1 << 16; n++) {
    const t = rooflineForward(hw, model, n);
    if (t.bound === 'compute') return n;
  }
  return 1 << 16;
}
