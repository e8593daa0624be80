export { mannWhitneyAuc, mannWhitneyU, type MannWhitneyResult } from './auc.js';
export { percentile } from './percentile.js';
export { DEFAULT_HISTOGRAM_BINS, DepthHistogramAccumulator, type DepthHistogramOptions } from './depth-histograms.js';
export {
  RunMetricsAccumulator,
  computeRunMetrics,
  formatStepTime,
  speedupVsAr,
  withSpeedupVsAr,
  type RequestMetrics,
  type RunMetricsOptions,
} from './run-metrics.js';
export { formatPairedRatio, pairedRatio, roundOrder, type PairedRatio } from './paired-rounds.js';
export { requestFutures, type RequestFuture } from './greedy-futures.js';
export {
  CONFIDENCE_EDGES,
  clockPricer,
  explainBudget,
  verifySlope,
  wallPricer,
  type BudgetExplanation,
  type Bound,
  type ExplainStep,
  type ExplainRequestStep,
  type StepPricer,
} from './budget-explanation.js';
