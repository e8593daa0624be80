// The engine's one door: everything outside it (the CLI's commands, the engine host and its web
// host, the output layer's report and exports) imports the engine from here and from nowhere else (.dependency-cruiser.cjs,
// `faces-use-the-door`); only the shared types and the pure clock modules the renderer reads sit
// beside it. A run starts at `prepare` (run.ts); the rest is grouped by what a command or handler
// does with it. Inside the engine, modules import each other directly.

// Running: prepare a run (or start more on a loaded setup) and step it.
export { prepare, startOn, Run, type FinishedRun, type PrepareOptions, type RunEvents, type RunOutcome, type StartOptions } from './run/run.js';
export type { ModelledTime } from './run/instrumented-run.js';
export type { RequestResult, SlotGrowth } from './run/runner.js';
export {
  BUNDLED_DRAFT,
  BUNDLED_HEAD,
  BUNDLED_TARGET,
  bundledDomains,
  loadRunSetup,
  measureDraftCost,
  promptSource,
  resolveModelDirs,
  modelFolders,
  runTraceHeader,
  type RunSetup,
} from './run/session-run.js';
export type { ResolvedGates } from './run/resolve-gates.js';
export { pairThreads } from './run/pair.js';
export { encodePrompt, promptText, type PromptRecord } from './run/workload.js';
export { formatServingHandOff, readServingPair, servingHandOff, type ServingHandOff, type ServingPair } from './serving-flags.js';

// Policies.
export { availablePolicies, createPolicy, registerPolicy, unknownPolicy } from './policy/index.js';
export type { VerifyCost } from './policy/types.js';
export { DEFAULT_DRAFT_COST } from './policy/echo.js';
export { startingTaus, tausAfter } from './policy/shown-knobs.js';

// Calibration: a pair calibrated from its folders (calibrate's door, as prepare is run's), the τ_d rules, profiles.
export { calibrateFolders, type FolderCalibration } from './run/calibrate-folders.js';
export { CLEARLY_BETTER_AUC } from './run/warmup.js';
export { DEFAULT_DELTA, DEFAULT_MIN_SAMPLES, DEFAULT_SIGNIFICANCE, TAU_RULES, type TauRule } from './calibrate/calibration.js';
export { loadProfile, saveProfile, signalAucs, type EchoProfile } from './calibrate/profile.js';

// Clocks and hardware: what a step costs on this machine or a modelled one.
export { clockFromSpec, clockPrices, spreadCurve, type DeviceCosts, type ModelledClock } from './cost/clock.js';
export { draftRowCost, fitKnee, suggestKmax, type KneeFit, type TimedPoint } from './cost/knee.js';
export {
  DEFAULT_TOKEN_COUNTS,
  HardwareProfileSchema,
  loadHardwareProfile,
  measureDraftAfterTarget,
  measureForwardCurve,
  measureForwardCurves,
  parseHardwareProfile,
  profileMismatches,
  rowsNeeded,
  type HardwareProfile,
} from './cost/measure.js';

// Sweeps and the reproduction study (its data and claims; src/output writes the report).
export { checkSweep, draftWindows, parseSweepEntry, runSweep, splitRepeat, type SweepRow } from './run/sweep.js';
export { INTERLEAVINGS, slotsForRounds, type Interleaving } from './run/rounds.js';
export { formatPairedRatio, pairedRatio, roundRatios, type PairedRatio } from './metrics/paired-rounds.js';
export { SweepExplainer } from './reproduce/explain-capture.js';
export type { BudgetExplanation } from './metrics/budget-explanation.js';
export {
  LOAD_CONTROL,
  LOAD_POLICIES,
  plannedWork,
  runStudy,
  TABLE1_CONTROL,
  TABLE1_POLICIES,
  type DomainWorkload,
  type ExplanationRow,
  type StudyData,
  type StudyExplanations,
  type StudyPlan,
} from './reproduce/study.js';
export { aaHalfWidth, judgeClaims, roundRatiosOf, type Claim } from './reproduce/claims.js';
export { DOMAIN_BENCHMARK, PAPER_BENCHMARKS, PAPER_FIGURES, PAPER_HIGH_LOAD, PAPER_METHOD, PAPER_TABLE1 } from './reproduce/paper.js';
export { readReport } from './reproduce/read-report.js';

// Metrics of a run or a trace.
export { computeRunMetrics, formatStepTime, metricsAsRecorded, RunMetricsAccumulator, traceMetrics, type RecordedEnd, type RequestMetrics } from './metrics/run-metrics.js';
export { percentile } from './metrics/percentile.js';

// Traces: read, index, re-score (exporting one is src/output's). A replay is no Run: the host replays a trace through its
// index and the metrics fold (docs/architecture.md, "Why a trace replay is not a Run").
export { TraceRecorder } from './trace/writer.js';
export { readTraceStreaming } from './trace/read.js';
export { parseTrace, TraceFormatError, type TraceContents, type TraceLineError } from './trace/parse.js';
export { TraceFileIndex, TraceLineScan, TraceOpenCancelled } from './trace/file-index.js';
export { rescoreTrace, type WhatIfResult, type WhatIfSettings } from './trace/what-if.js';

// Model folders: what they hold, what they take, the graph cache.
export { defaultMaxLength, folderMemory, graphFileBytes, heldWeightBytes, isGraphCached, loadModel, loadTokenizer, openModelFolder, readModelInfo } from './model/loader.js';
export { parseModelConfig, readConfigJson } from './model/config.js';
export { isEagle3Config, parseEagle3Config } from './model/eagle3-config.js';
export { describeHeadFolder, isHeadFolder, loadHead, openHeadFolder, type HeadDescription } from './model/head-loader.js';
export { formatGiB, machineMemoryBytes, MEMORY_SHARE, peakBytes, usableBytes, type MemoryEstimate } from './model/memory-estimate.js';
export { cacheRoot, clearGraphCache, graphsDir, listGraphCache, pruneUnusedGraphs, type GraphCacheEntry, type GraphRemoval } from './model/graph-cache.js';
export { ModelTokenizer } from './model/tokenizer.js';
export type { ModelInfo } from './model/types.js';

// Errors and small helpers.
export { faultStack, Refusal } from './refusal.js';
export { jsonErrorPosition } from './json-error.js';
export { findPackageRoot, packageVersion } from './package-root.js';
