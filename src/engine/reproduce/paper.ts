// The ECHO paper's published numbers, for setting a reproduction beside them: each entry names
// the table, figure or section it is read from. Only numbers the paper prints are here (its
// figures' curves are not given as numbers). Where the paper used H100s, SGLang and 8B–235B
// models, a reproduction on another pair and machine compares the shape of a finding, not the
// magnitude.

/** Table 1's benchmarks, and the bundled domain each is compared with. */
export const PAPER_BENCHMARKS = ['HumanEval', 'GSM8K', 'CNN/DM', 'Alpaca', 'MT-Bench'] as const;
export type PaperBenchmark = (typeof PAPER_BENCHMARKS)[number];
export const DOMAIN_BENCHMARK: Readonly<Record<string, PaperBenchmark>> = { code: 'HumanEval', math: 'GSM8K', prose: 'MT-Bench' };

/** The paper's method names for this project's policies (Table 1, §5.1). */
export const PAPER_METHOD: Readonly<Record<string, string>> = { chain: 'Sps (standard SD)', static: 'EAGLE3', ddd: 'DDD', echo: 'ECHO', eagle2: 'OPT-Tree (nearest)' };

export interface PaperTable1Row {
  model: string;
  method: string;
  /** MAT and wall speedup over autoregressive decoding, per benchmark; and the average speedup. */
  cells: Readonly<Record<PaperBenchmark, { mat: number; speedup: number }>>;
  averageSpeedup: number;
}

function row(model: string, method: string, values: number[], averageSpeedup: number): PaperTable1Row {
  const cells = Object.fromEntries(PAPER_BENCHMARKS.map((b, i) => [b, { mat: values[2 * i], speedup: values[2 * i + 1] }])) as Record<PaperBenchmark, { mat: number; speedup: number }>;
  return { model, method, cells, averageSpeedup };
}

/** Table 1: low load (batch 1), greedy, H100, HuggingFace transformers. */
export const PAPER_TABLE1: readonly PaperTable1Row[] = [
  row('Vicuna-13B', 'Sps (standard SD)', [2.55, 1.81, 1.99, 1.75, 2.31, 1.71, 2.01, 1.74, 2.25, 1.81], 1.76),
  row('Vicuna-13B', 'OPT-Tree (nearest)', [8.21, 3.85, 6.77, 3.25, 6.91, 2.75, 6.56, 3.2, 6.95, 3.3], 3.27),
  row('Vicuna-13B', 'DDD', [8.95, 4.95, 6.21, 3.92, 6.02, 3.45, 5.98, 3.59, 6.05, 3.95], 3.97),
  row('Vicuna-13B', 'EAGLE3', [8.49, 4.81, 6.82, 3.85, 6.41, 3.38, 6.49, 3.65, 6.83, 3.89], 3.92),
  row('Vicuna-13B', 'ECHO', [9.35, 5.25, 6.53, 4.08, 6.34, 3.53, 6.24, 3.74, 6.33, 4.12], 4.14),
  row('LLaMA3.1-8B', 'DDD', [6.95, 4.18, 6.02, 4.07, 5.08, 3.1, 6.53, 4.08, 5.98, 3.7], 3.83),
  row('LLaMA3.1-8B', 'EAGLE3', [7.18, 4.02, 6.5, 3.94, 5.46, 3.02, 7.06, 4.01, 6.43, 3.63], 3.72),
  row('LLaMA3.1-8B', 'ECHO', [7.22, 4.3, 6.28, 4.1, 5.24, 3.26, 6.81, 4.19, 6.23, 3.86], 3.94),
  row('LLaMA3.3-70B', 'DDD', [6.82, 5.13, 6.15, 4.63, 4.92, 3.52, 6.68, 4.84, 5.7, 4.02], 4.43),
  row('LLaMA3.3-70B', 'EAGLE3', [7.12, 4.98, 6.53, 4.72, 5.19, 3.6, 6.95, 4.75, 5.92, 4.09], 4.43),
  row('LLaMA3.3-70B', 'ECHO', [7.07, 5.35, 6.41, 5.08, 5.1, 3.79, 6.84, 4.94, 5.94, 4.32], 4.7),
  row('Qwen3-8B', 'DDD', [3.65, 2.54, 3.72, 2.32, 3.08, 2.13, 3.22, 2.06, 3.48, 2.35], 2.28),
  row('Qwen3-8B', 'EAGLE3', [3.91, 2.37, 3.94, 2.35, 3.28, 1.98, 3.46, 2.09, 3.71, 2.2], 2.2),
  row('Qwen3-8B', 'ECHO', [3.82, 2.74, 3.88, 2.68, 3.2, 2.37, 3.36, 2.51, 3.63, 2.57], 2.57),
  row('Qwen3-32B', 'DDD', [2.82, 2.18, 3.15, 2.38, 2.38, 1.71, 2.68, 2.11, 2.88, 1.97], 2.07),
  row('Qwen3-32B', 'EAGLE3', [2.99, 2.02, 3.32, 2.41, 2.55, 1.67, 2.83, 1.97, 3.04, 1.93], 2.0),
  row('Qwen3-32B', 'ECHO', [2.95, 2.37, 3.29, 2.72, 2.48, 1.93, 2.74, 2.31, 2.95, 2.25], 2.32),
  row('Qwen3-235B', 'DDD', [2.2, 1.88, 2.48, 1.68, 2.05, 1.49, 2.18, 1.78, 2.28, 1.99], 1.77),
  row('Qwen3-235B', 'EAGLE3', [2.41, 1.82, 2.73, 1.71, 2.02, 1.35, 2.35, 1.72, 2.54, 1.83], 1.69),
  row('Qwen3-235B', 'ECHO', [2.32, 2.23, 2.59, 1.92, 2.08, 1.63, 2.24, 2.07, 2.37, 2.23], 2.02),
];

/** Throughput at batch 256 (tokens/s, SGLang, H100) the paper prints in §5.2 and §5.3 (Fig. 5). */
export const PAPER_HIGH_LOAD: ReadonlyArray<{ model: string; batch: number; policy: string; throughput: number; source: string }> = [
  { model: 'LLaMA3.1-8B', batch: 256, policy: 'static', throughput: 10703, source: '§5.2' },
  { model: 'LLaMA3.1-8B', batch: 256, policy: 'echo', throughput: 11551, source: '§5.2, §5.3' },
  { model: 'LLaMA3.1-8B', batch: 256, policy: 'dense', throughput: 10978, source: '§5.3 (Fig. 5)' },
  { model: 'Qwen3-235B', batch: 256, policy: 'static', throughput: 2803, source: '§5.2' },
  { model: 'Qwen3-235B', batch: 256, policy: 'echo', throughput: 3207, source: '§5.2, §5.3' },
  { model: 'Qwen3-235B', batch: 256, policy: 'fixed', throughput: 3046, source: '§5.3 (Fig. 5)' },
];

/** The paper's high-load ratio of one policy to another for a model (from PAPER_HIGH_LOAD). */
export function paperHighLoadRatio(model: string, policy: string, over: string): number | null {
  const at = (p: string) => PAPER_HIGH_LOAD.find((r) => r.model === model && r.policy === p)?.throughput;
  const a = at(policy);
  const b = at(over);
  return a !== undefined && b !== undefined ? a / b : null;
}

/** The paper's average batch-1 speedup of one method over another for a model (Table 1). */
export function paperTable1Ratio(model: string, method: string, over: string): number | null {
  const a = PAPER_TABLE1.find((r) => r.model === model && r.method === method);
  const b = PAPER_TABLE1.find((r) => r.model === model && r.method === over);
  return a && b ? a.averageSpeedup / b.averageSpeedup : null;
}

/** What the paper says about each figure a reproduction regenerates, in this project's words. */
export const PAPER_FIGURES = {
  fig2: 'Figs. 2 and 6–9: the confidence of accepted and rejected draft tokens separates best at the root and at the target depth (the "sweet spots"), and blurs at the depths between; the sweet spots are marked with their thresholds.',
  table1: 'Table 1: at batch 1 ECHO has the best average speedup over autoregressive decoding on every model, ahead of both EAGLE-3 and DDD, while its MAT is not always the highest.',
  fig1: 'Figs. 1 and 5: as concurrency grows the gain of tree speculation shrinks; at batch 256 ECHO is 8 % (LLaMA3.1-8B) and 14.4 % (Qwen3-235B) above EAGLE-3, and the dense and fixed-threshold ablations sit about 5 % below ECHO.',
  fig4: 'Fig. 4: ECHO reaches a higher draft utilisation than the baselines, with a narrower interquartile range.',
} as const;
