// The trace file format (JSON Lines), as zod schemas: one header line, step lines, optional knob
// lines, one closing summary line. The engine writes it, the engine's reader and the renderer
// validate with the same schemas. Documented in docs/trace-format.md; bump TRACE_SCHEMA_VERSION on
// any change a reader of the old version would misread.

import { z } from 'zod';
import { AttentionWindowSchema, ConfidenceSignalSchema, KnobsSchema, RunConfigSchema, WeightPrecisionSchema, type ConfidenceSignal } from './config.js';
import { DEEPENING_STOP_REASONS } from './events.js';
import type {
  BudgetSplit,
  BudgetTransfer,
  DepthHistogram,
  GateCheck,
  RequestStep,
  RunMetrics,
  StepEvent,
  StepTimings,
  TreeNode,
} from './events.js';

export const TRACE_FORMAT = 'echo-studio-trace';
/**
 * 2: step lines say which confidence signal their `confidences` are in (`confidence`); a version 1
 * reader would take path-margin confidences for path probabilities. Version 1 files (no signal:
 * path-prob) still read.
 */
export const TRACE_SCHEMA_VERSION = 3;
/**
 * 3: a gate check may be `waived` (failed, but the request was not truncated); a version 2 reader
 * would count it as a cut. Versions 1 and 2 (no waived checks) still read.
 */
export const READABLE_TRACE_VERSIONS: readonly number[] = [1, 2, 3];

const int = () => z.number().int();
const count = () => z.number().int().min(0);
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex SHA-256');

// ---- header ----

export const ModelFileSchema = z.object({
  /** File name inside the model folder. */
  name: z.string().min(1),
  bytes: count(),
  sha256: sha256Hex,
});

/** A model folder and the content hashes that identify it (config.json and weights). */
export const ModelRefSchema = z.object({
  dir: z.string(),
  files: z.array(ModelFileSchema).min(1),
  /** Weight precision the run loaded the model with (recorded for both models; absent in older traces = float32). */
  precision: WeightPrecisionSchema.optional(),
  /** The attention window the run gave the model (`--draft-window`, or its own sliding window); absent = the whole past. */
  window: AttentionWindowSchema.optional(),
  /** For the draft: what drafted, a small language model or an EAGLE-3 head; absent = a model (traces before heads). */
  kind: z.enum(['model', 'eagle3-head']).optional(),
  /**
   * For the target: its end-of-sequence ids. Nothing is drafted below a drafted one (an accepted
   * one ends the request); absent in traces from before that rule, whose trees may hold such nodes.
   */
  ends: z.array(z.number().int().nonnegative()).optional(),
});
export type ModelRef = z.infer<typeof ModelRefSchema>;

export const HardwareSchema = z.object({
  cpuModel: z.string(),
  cores: count(),
  memoryBytes: count(),
  platform: z.string(),
  arch: z.string(),
  /** Runtime version, e.g. Node's. */
  runtime: z.string(),
  /** Execution provider the models ran on, e.g. 'cpu' or 'cuda'. */
  provider: z.string(),
});
export type Hardware = z.infer<typeof HardwareSchema>;

export const TraceHeaderSchema = z.object({
  type: z.literal('header'),
  format: z.literal(TRACE_FORMAT),
  schemaVersion: z.number().int().refine((v) => READABLE_TRACE_VERSIONS.includes(v), 'unsupported trace schema version'),
  /** ISO 8601 time the run started. */
  createdAt: z.string(),
  /** The writing application and its version. */
  writer: z.string(),
  config: RunConfigSchema,
  models: z.object({ draft: ModelRefSchema, target: ModelRefSchema }),
  hardware: HardwareSchema,
  /** The calibration profile the run used, verbatim, when it used one. */
  profile: z.record(z.string(), z.unknown()).optional(),
  /** Step lines carry every draft expansion's top-k (what-if re-scoring); larger files. */
  recordCandidates: z.boolean(),
});
export type TraceHeader = z.infer<typeof TraceHeaderSchema>;

// ---- steps (also the studio's frames: src/shared/messages.ts uses these schemas) ----

// Log-probabilities of impossible tokens are -Infinity: structured clone (Electron ports) keeps
// it, JSON (WebSocket, trace files) turns it into null. Accept both forms on the way in.
const logValue = z
  .unknown()
  .refine((v) => v === null || v === -Infinity || (typeof v === 'number' && Number.isFinite(v)), 'must be a number, -Infinity or null')
  .transform((v) => (v === null ? -Infinity : (v as number)));

export const GrantKindSchema = z.enum(['root', 'base', 'depth', 'width']);

export const TreeNodeSchema = z.object({
  id: count(),
  parent: int().min(-1),
  depth: int().min(-1),
  token: count(),
  text: z.string().optional(),
  logq: logValue,
  pathScore: logValue,
  grant: GrantKindSchema,
  paidBy: z.string().optional(),
  verified: z.boolean(),
});

export const GateCheckSchema = z.object({
  depth: count(),
  confidence: z.number(),
  tau: z.number(),
  pass: z.boolean(),
  waived: z.boolean().optional(),
});

/**
 * What-if data (recorded only with recordCandidates): one drafted-and-forwarded node's top-k
 * continuation under the draft model, so a re-score can rebuild the tree another schedule would
 * have drafted from the same prefix without running the draft model.
 */
export const ExpansionSchema = z.object({
  /** Id of the expanded node in the request's `nodes` (0 = the root). */
  node: count(),
  /** The draft's top-k next tokens after this node, best first, with their log q. */
  tokens: z.array(count()),
  logq: z.array(z.number()),
  /** The target's greedy token after this node, where recorded (greedy runs do not need it). */
  targetArgmax: count().optional(),
});
export type Expansion = z.infer<typeof ExpansionSchema>;

export const RequestStepSchema = z.object({
  requestId: z.string().min(1),
  nodes: z.array(TreeNodeSchema).min(1),
  gates: z.array(GateCheckSchema),
  stop: z.object({ reason: z.enum(DEEPENING_STOP_REASONS), depth: count() }).optional(),
  drainWeight: z.number().min(0).max(1).optional(),
  confidences: z.array(z.number()),
  accepted: z.array(count()),
  bonusToken: count(),
  emitted: z.array(count()),
  emittedText: z.string().optional(),
  finished: z.enum(['eos', 'length']).optional(),
  /** Every node the draft expanded this step, for what-if re-scoring (header.recordCandidates). */
  expansions: z.array(ExpansionSchema).optional(),
});
export type TraceRequestStep = z.infer<typeof RequestStepSchema>;

export const StepTimingsSchema = z.object({
  draftMs: z.number().min(0),
  packMs: z.number().min(0),
  verifyMs: z.number().min(0),
  commitMs: z.number().min(0),
  totalMs: z.number().min(0),
  prefillMs: z.number().min(0).optional(),
  modelMs: z.number().min(0).optional(),
});

export const BudgetSplitSchema = z.object({
  roots: count(),
  base: count(),
  depth: count(),
  width: count(),
  unused: count(),
});

export const StepLineSchema = z.object({
  type: z.literal('step'),
  step: count(),
  t: z.number().min(0),
  kmax: count(),
  verifiedTokens: count(),
  requests: z.array(RequestStepSchema),
  timings: StepTimingsSchema,
  budget: BudgetSplitSchema,
  transfers: z.array(z.object({ from: z.string(), to: z.string(), tokens: count() })),
  paddingWaste: z.number().min(0).max(1),
  draftRows: z.array(count()).optional(),
  draftRequests: z.array(count()).optional(),
  confidence: ConfidenceSignalSchema.optional(),
  past: count().optional(),
  waiting: count().optional(),
});
export type TraceStep = z.infer<typeof StepLineSchema>;
/** The confidence signal of a step's `confidences` and gate checks: version 1 lines name none, and were path-prob. */
export function stepConfidenceSignal(step: { confidence?: ConfidenceSignal }): ConfidenceSignal {
  return step.confidence ?? 'path-prob';
}

/** A step event as the engine emits it and the studio receives it: the trace's step line. */
export const StepEventSchema = StepLineSchema;

// ---- knob changes (studio edits between steps) ----

export const KnobsLineSchema = z.object({
  type: z.literal('knobs'),
  /** The first step the new knobs applied to. */
  step: count(),
  knobs: KnobsSchema,
});
export type TraceKnobs = z.infer<typeof KnobsLineSchema>;

// ---- summary ----

export const DepthHistogramSchema = z.object({
  depth: count(),
  edges: z.array(z.number()),
  accepted: z.array(count()),
  rejected: z.array(count()),
  unverified: z.array(count()).optional(),
  auc: z.number().min(0).max(1).nullable(),
});

export const RunMetricsSchema = z.object({
  policy: z.string(),
  steps: count(),
  requests: count(),
  generatedTokens: count(),
  wallMs: z.number().min(0),
  throughput: z.number().min(0),
  decodeThroughput: z.number().min(0).optional(),
  stepTime: z.object({ draftMs: z.number(), verifyMs: z.number(), prefillMs: z.number(), otherMs: z.number() }).optional(),
  meanAcceptedTokens: z.number().min(0),
  meanAcceptanceLength: z.number().min(0),
  draftUtilisation: z.number().min(0),
  verifiedTokensPerStep: z.number().min(0),
  acceptancePerPosition: z.array(z.number().min(0).max(1)),
  paddingWaste: z.number().min(0).max(1),
  tpotP50Ms: z.number().min(0),
  tpotP99Ms: z.number().min(0),
  speedupVsAr: z.number().optional(),
});

export const SummaryLineSchema = z.object({
  type: z.literal('summary'),
  /** ISO 8601 time the run ended. */
  endedAt: z.string(),
  /** finished: every request retired; stopped: the user stopped it; error: the run failed. */
  reason: z.enum(['finished', 'stopped', 'error']),
  message: z.string().optional(),
  metrics: RunMetricsSchema,
  histograms: z.array(DepthHistogramSchema),
});
export type TraceSummary = z.infer<typeof SummaryLineSchema>;

/** Any line after the header. */
export const BodyLineSchema = z.discriminatedUnion('type', [StepLineSchema, KnobsLineSchema, SummaryLineSchema]);

// The schemas must describe the engine's own types: these fail to compile if the two drift.
type Assignable<From extends To, To> = From;
/** true when A and B have exactly the same keys (catches a field added to one side only). */
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
type Check<T extends true> = T;
export type _StepMatchesEvent = Assignable<TraceStep, StepEvent>;
export type _EventMatchesStep = Assignable<StepEvent, Omit<TraceStep, 'requests'> & { requests: RequestStep[] }>;
export type _RequestMatches = Assignable<RequestStep, Omit<TraceRequestStep, 'expansions'>>;
export type _MetricsMatch = Assignable<z.infer<typeof RunMetricsSchema>, RunMetrics>;
export type _MetricsMatchBack = Assignable<RunMetrics, z.infer<typeof RunMetricsSchema>>;
export type _HistogramMatches = Assignable<z.infer<typeof DepthHistogramSchema>, DepthHistogram>;
export type _SameKeys = [
  Check<SameKeys<TraceStep, StepEvent>>,
  Check<SameKeys<Omit<TraceRequestStep, 'expansions'>, RequestStep>>,
  Check<SameKeys<TraceStep['timings'], StepTimings>>,
  Check<SameKeys<TraceStep['budget'], BudgetSplit>>,
  Check<SameKeys<TraceStep['transfers'][number], BudgetTransfer>>,
  Check<SameKeys<TraceRequestStep['nodes'][number], TreeNode>>,
  Check<SameKeys<TraceRequestStep['gates'][number], GateCheck>>,
  Check<SameKeys<z.infer<typeof RunMetricsSchema>, RunMetrics>>,
  Check<SameKeys<z.infer<typeof DepthHistogramSchema>, DepthHistogram>>,
];
