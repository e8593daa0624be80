// The one message contract between the UI and the engine host. Every transport (Electron IPC and
// the engine MessagePort, the web host's WebSocket, the engine host's parent channel) carries these
// plain JSON objects {type, ...} and validates them with these schemas where they enter.
import { z } from 'zod';
import { ConfidenceSignalSchema, KnobsSchema, longerCurvesSchema, oneRequestCurvesSchema, PolicyNameSchema, RunConfigSchema, TimedPointsSchema, WeightPrecisionSchema } from './config.js';
import { DepthHistogramSchema, RunMetricsSchema, StepEventSchema } from './trace-schema.js';

/** Largest message any transport accepts, in bytes of JSON. Frames of big trees stay far below. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Frames per second the engine host sends at most; step events in between are batched. */
export const MAX_FRAMES_PER_SECOND = 30;

// Step events, histograms and metrics travel with the schemas of the trace file's lines
// (src/shared/trace-schema.ts): one description of a step, whether live or replayed.
export { DepthHistogramSchema, RunMetricsSchema, StepEventSchema };

// ---------------------------------------------------------------------------------------------
// Requests: UI → engine host.

export const TRACE_EXPORT_FORMATS = ['jsonl', 'parquet', 'perfetto', 'csv'] as const;
export type TraceExportFormat = (typeof TRACE_EXPORT_FORMATS)[number];

/**
 * The web host's HTTP routes for a browser's trace files, which a browser cannot name by path on
 * the server: POST the file's bytes to upload it (answered with the path to send in trace.open),
 * GET ?format= to download an export of what the studio shows.
 */
export const TRACE_UPLOAD_ROUTE = '/trace/upload';
export const TRACE_DOWNLOAD_ROUTE = '/trace/download';
/** Export formats a browser can download: one file each (Parquet writes one per table). */
export const DOWNLOAD_FORMATS = ['jsonl', 'perfetto', 'csv'] as const satisfies readonly TraceExportFormat[];
export type DownloadFormat = (typeof DOWNLOAD_FORMATS)[number];
/** The name a downloaded export gets on the user's disk. */
export const DOWNLOAD_NAMES: Record<DownloadFormat, string> = {
  jsonl: 'echo-trace.jsonl',
  perfetto: 'echo-trace.perfetto.json',
  csv: 'echo-trace.csv',
};
/** The web host's answer to an accepted upload. */
export interface TraceUploadAnswer {
  /** Where the web host keeps it: the path to open with trace.open. */
  path: string;
  /** The file's name as uploaded, made safe to print. */
  name: string;
  steps: number;
}

const nonEmptyPath = z.string().min(1, 'a path is required').max(4096);

/**
 * Every request, listed once: its type, the preload bridge's method for it (`run.start` →
 * `runStart({config})`) and its fields. The union the hosts validate (RequestSchema), the types
 * (REQUEST_TYPES) and the bridge's methods (REQUEST_METHODS) are cut from this table.
 */
const REQUESTS = {
  hello: { method: 'hello', fields: {} },
  'run.start': { method: 'runStart', fields: { config: RunConfigSchema } },
  'run.pause': { method: 'runPause', fields: {} },
  'run.resume': { method: 'runResume', fields: {} },
  'run.step': { method: 'runStep', fields: {} },
  'run.stop': { method: 'runStop', fields: {} },
  'knobs.set': { method: 'knobsSet', fields: { knobs: KnobsSchema } },
  'model.open': { method: 'modelOpen', fields: { dir: nonEmptyPath } },
  'trace.open': { method: 'traceOpen', fields: { path: nonEmptyPath } },
  /** An existing file is replaced only with `overwrite` (the desktop app's save dialog asked already). */
  'trace.export': { method: 'traceExport', fields: { path: nonEmptyPath, format: z.enum(TRACE_EXPORT_FORMATS), overwrite: z.boolean().optional() } },
  'trace.seek': { method: 'traceSeek', fields: { step: z.number().int().min(0) } },
  /** Stop opening, replaying or seeking a trace: a trace still being indexed is not opened; a replay stops where it is. */
  'trace.cancel': { method: 'traceCancel', fields: {} },
  /** Time the target's forward on this machine and suggest K_max for `batch` (profile-hw's knee); the bundled target unless named. */
  'hw.knee': { method: 'hwKnee', fields: { batch: z.number().int().min(1).max(4096), targetDir: nonEmptyPath.optional() } },
  /** Read a hardware profile (`profile-hw --out` or `--json`) for the studio's clock; answered with a 'clock.profile' event. */
  'clock.profile': { method: 'clockProfile', fields: { path: nonEmptyPath } },
  /** Read a report folder that `echo-studio reproduce` wrote; answered with a 'report' event. */
  'report.open': { method: 'reportOpen', fields: { dir: nonEmptyPath } },
  /**
   * Run the quick study (`reproduce --quick`) into a new folder under the studio's data folder, on
   * the bundled pair unless both folders are named; the optional fields make it smaller still.
   */
  'report.quick': {
    method: 'reportQuick',
    fields: {
      draftDir: nonEmptyPath.optional(),
      targetDir: nonEmptyPath.optional(),
      domains: z.array(z.string().regex(/^[\w-]+$/, 'a domain is a bundled prompt set name')).min(1).max(8).optional(),
      batches: z.array(z.number().int().min(1).max(256)).min(1).max(8).optional(),
      requests: z.number().int().min(1).max(64).optional(),
      maxNewTokens: z.number().int().min(1).max(256).optional(),
    },
  },
  'report.cancel': { method: 'reportCancel', fields: {} },
} as const satisfies Record<string, { method: string; fields: z.ZodRawShape }>;

type RequestTable = typeof REQUESTS;
export type RequestType = keyof RequestTable;
type Fields<S extends z.ZodRawShape> = keyof S extends never ? unknown : z.infer<z.ZodObject<S>>;
export type EngineRequest = { [T in RequestType]: { type: T } & Fields<RequestTable[T]['fields']> }[RequestType];
export type RequestOf<T extends RequestType> = Extract<EngineRequest, { type: T }>;

export const REQUEST_TYPES = Object.keys(REQUESTS) as RequestType[];

/** The preload bridge's method for each request, named after the message type. */
export const REQUEST_METHODS = Object.fromEntries(REQUEST_TYPES.map((type) => [type, REQUESTS[type].method])) as { [T in RequestType]: RequestTable[T]['method'] };

const requestObjects = REQUEST_TYPES.map((type) => z.object({ type: z.literal(type), ...REQUESTS[type].fields }));
export const RequestSchema = z.discriminatedUnion('type', requestObjects as [(typeof requestObjects)[number], ...(typeof requestObjects)[number][]]) as unknown as z.ZodType<EngineRequest>;

/**
 * The requests an observer link may send: those that change nothing and read no file. Everything
 * else (runs, knobs, opening, seeking or exporting traces, timings, reports) steers the studio
 * that everyone watching shares, or reaches the server's files.
 */
export const OBSERVER_REQUESTS: ReadonlySet<RequestType> = new Set<RequestType>(['hello']);

// ---------------------------------------------------------------------------------------------
// Events: engine host → UI.

/** A measured forward curve: its time at each packed token count. */
export const RUN_STATES = ['idle', 'loading', 'running', 'paused', 'finished', 'error'] as const;
export type RunState = (typeof RUN_STATES)[number];

export const BundledModelSchema = z.object({
  /** Folder name under assets/models. */
  name: z.string(),
  /** Absolute folder path on the engine host's machine. */
  dir: z.string(),
  /** Parameter count from the weights' headers, when readable. */
  parameters: z.number().int().min(0).optional(),
});
export type BundledModel = z.infer<typeof BundledModelSchema>;

/** One depth of the calibration behind a run's τ_d: what it measured and what it decided. */
export const CalibrationDepthSchema = z.object({
  depth: z.number().int().min(0),
  accepted: z.number().int().min(0),
  rejected: z.number().int().min(0),
  /** Null with too few samples in a class to measure. */
  auc: z.number().min(0).max(1).nullable(),
  /** The τ whose truncations passed the significance test; null when none did (or too few samples). */
  tau: z.number().min(0).max(1).nullable(),
  sweetSpot: z.boolean(),
});
export type CalibrationDepth = z.infer<typeof CalibrationDepthSchema>;

/** Where a run's τ_d came from and, for a calibration, its reasons per depth. */
export const CalibrationSummarySchema = z.object({
  source: z.enum(['flags', 'profile', 'warm-up', 'ungated']),
  confidence: ConfidenceSignalSchema,
  /** The AUC a depth had to pass to be a sweet spot (depth 0 and the last depth: above chance). */
  delta: z.number().optional(),
  /** The level a τ's truncations had to be significant at (1: no test). */
  significance: z.number().optional(),
  targetDepth: z.number().int().min(0).optional(),
  depths: z.array(CalibrationDepthSchema),
});
export type CalibrationSummary = z.infer<typeof CalibrationSummarySchema>;

/**
 * The knobs the engine runs with now: sent when a run starts stepping, after every knobs.set
 * (with `refused` when the engine refused it, the values then being the unchanged ones), and to a
 * client that says hello during a run. The studio's form shows these, never its own guesses.
 */
export const EngineKnobsEventSchema = z.object({
  type: z.literal('knobs'),
  policy: PolicyNameSchema,
  batch: z.number().int().min(1),
  kmax: z.number().int().min(1),
  /** τ per gated depth (echo, dense, fixed); empty: no gates. */
  taus: z.record(z.string().regex(/^\d+$/), z.number().min(0).max(1)),
  /** fixed: its one τ. */
  tau: z.number().min(0).max(1).optional(),
  confidence: ConfidenceSignalSchema.optional(),
  calibration: CalibrationSummarySchema.optional(),
  /**
   * How far the batch may go on the loaded pair: the most KV slots its memory plan allows on the
   * engine's machine, and why not one more (one line). Raising the batch past the slots loaded
   * reallocates the KV caches between steps (progress task 'slots').
   */
  batchLimit: z.object({ max: z.number().int().min(1), beyond: z.string() }).optional(),
  /** Why the last knobs.set was refused. */
  refused: z.string().optional(),
});
export type EngineKnobsEvent = z.infer<typeof EngineKnobsEventSchema>;

/** One claim of a reproduction report, with its verdict computed from the study's data. */
export const ReportClaimSchema = z.object({
  id: z.string(),
  claim: z.string(),
  source: z.string(),
  clock: z.string(),
  measured: z.string(),
  /** The noise the measurement is read against (for ratios, the A/A band). */
  uncertainty: z.string(),
  paper: z.string(),
  /** holds, does not hold, or not measurable here. */
  verdict: z.string(),
  because: z.string(),
});
export type ReportClaim = z.infer<typeof ReportClaimSchema>;

/** How a report was made: the command, the machine, the date, the settings. */
export const ReportMetaSchema = z.object({
  command: z.string(),
  date: z.string(),
  versions: z.record(z.string(), z.string()),
  machine: z.object({ cpu: z.string(), cores: z.number(), memoryGiB: z.number(), platform: z.string(), threads: z.number().optional() }),
  seeds: z.object({ run: z.number(), bootstrap: z.number() }),
  pair: z.object({ draft: z.string(), target: z.string() }),
  clock: z.string(),
  quick: z.boolean(),
  seconds: z.number(),
  settings: z.record(z.string(), z.union([z.string(), z.number()])),
});
export type ReportMeta = z.infer<typeof ReportMetaSchema>;

/** One of a report's CSV tables, as text cells. */
export const ReportTableSchema = z.object({ name: z.string(), header: z.array(z.string()), rows: z.array(z.array(z.string())) });
export type ReportTable = z.infer<typeof ReportTableSchema>;

export const ReportEventSchema = z.object({
  type: z.literal('report'),
  /** The report folder, as the engine host resolved it. */
  dir: z.string(),
  meta: ReportMetaSchema,
  claims: z.array(ReportClaimSchema),
  tables: z.array(ReportTableSchema),
  /** The self-contained report page, when the folder has one. */
  html: z.string().optional(),
});
export type ReportEvent = z.infer<typeof ReportEventSchema>;

export const EventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('status'),
    version: z.string(),
    bundledModels: z.array(BundledModelSchema),
    /** onnxruntime execution provider the engine uses ('cpu', 'cuda', …). */
    provider: z.string(),
    /** Weight precision runs load the draft with (the target's is the run config's targetPrecision, float32 by default). */
    draftPrecision: WeightPrecisionSchema.optional(),
    /** The bundled prompt sets a run may name as its domain (assets/prompts). */
    domains: z.array(z.string()).optional(),
    /** The policies a run may name: the built-in ones and any the host's program registered. */
    policies: z.array(z.string()).optional(),
    runState: z.enum(RUN_STATES),
    /**
     * What this client may do, where the host says (the web host, per link): 'observe' is a
     * read-only observer link, which sees everything and may send only OBSERVER_REQUESTS.
     */
    access: z.enum(['control', 'observe']).optional(),
  }),
  z.object({
    type: z.literal('progress'),
    task: z.string(),
    done: z.number().min(0),
    total: z.number().min(0),
    message: z.string().optional(),
  }),
  z.object({
    type: z.literal('frame'),
    steps: z.array(StepEventSchema),
    histograms: z.array(DepthHistogramSchema).optional(),
    metrics: RunMetricsSchema.optional(),
  }),
  z.object({ type: z.literal('run.state'), state: z.enum(RUN_STATES) }),
  z.object({ type: z.literal('error'), message: z.string(), detail: z.string().optional() }),
  /** The answer to hw.knee: the knee of the target's forward time (tokens), its one-token forward, and K_max for the batch. */
  z.object({
    type: z.literal('hw.knee'),
    batch: z.number().int().min(1),
    knee: z.number().int().min(1),
    kmax: z.number().int().min(1),
    tArMs: z.number().min(0),
    target: z.string(),
  }),
  /** The answer to clock.profile: a hardware profile's measured forward curves, for the clock knob. */
  z.object({
    type: z.literal('clock.profile'),
    /** The file's name without .json: how the clock is labelled. */
    name: z.string().min(1),
    /** Where the curves were measured: the profile's CPU and provider. */
    measuredOn: z.string(),
    target: TimedPointsSchema,
    draft: TimedPointsSchema,
    /** The requests the profile spread its rows over (`profile-hw --slots`). */
    slots: z.number().int().min(1),
    /** Committed rows per request when timed, and the same curves at longer pasts (`profile-hw --context`). */
    context: z.number().int().min(0).optional(),
    longer: longerCurvesSchema(TimedPointsSchema).optional(),
    /** The same forwards with every row in one request (absent in older profiles). */
    oneRequest: oneRequestCurvesSchema(TimedPointsSchema).optional(),
    /** What a step's first draft forwards cost beyond their warm time, in order (absent in older profiles). */
    draftAfterTargetMs: z.array(z.number().min(0)).optional(),
  }),
  EngineKnobsEventSchema,
  ReportEventSchema,
]);
export type EngineEvent = z.infer<typeof EventSchema>;
export type EventType = EngineEvent['type'];
export type EventOf<T extends EventType> = Extract<EngineEvent, { type: T }>;
export type StatusEvent = EventOf<'status'>;
export type FrameEvent = EventOf<'frame'>;

// ---------------------------------------------------------------------------------------------
// Parsing at the boundaries.

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

function parseWith<T>(schema: z.ZodType<T>, input: unknown, what: string): ParseResult<T> {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const type = typeof input === 'object' && input !== null && 'type' in input ? String((input as { type: unknown }).type) : '?';
  return { ok: false, error: `invalid ${what} (type ${type}): ${describeIssues(result.error)}` };
}

export function parseRequest(input: unknown): ParseResult<EngineRequest> {
  return parseWith(RequestSchema, input, 'request');
}

export function parseEvent(input: unknown): ParseResult<EngineEvent> {
  return parseWith(EventSchema, input, 'event');
}

/** Serialises a message for a text transport; -Infinity log-probabilities become null. */
export function encodeMessage(message: EngineRequest | EngineEvent): string {
  return JSON.stringify(message);
}

/** Parses a text frame with the size cap applied before JSON.parse sees it. */
export function decodeText(text: string): ParseResult<unknown> {
  // Length in UTF-16 units is a lower bound on bytes; the transport caps raw bytes as well.
  if (text.length > MAX_MESSAGE_BYTES) {
    return { ok: false, error: `message of ${text.length} characters exceeds the ${MAX_MESSAGE_BYTES}-byte cap` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: `message is not JSON: ${(err as Error).message}` };
  }
}

// ---------------------------------------------------------------------------------------------
// The Electron preload bridge: one method per request, named in REQUESTS above.

type MethodName<T extends RequestType> = (typeof REQUEST_METHODS)[T];
type RequestPayload<T extends RequestType> = Omit<RequestOf<T>, 'type'>;

/** A request method takes the message's fields (none for bare requests). */
export type RequestMethods = {
  [T in RequestType as MethodName<T>]: keyof RequestPayload<T> extends never
    ? () => void
    : (payload: RequestPayload<T>) => void;
};

/** Where the desktop app's engine link stands, as the preload sees it. */
export type BridgeLinkState = 'connecting' | 'connected' | 'disconnected';

/** Native dialogs the main process opens on the renderer's behalf. */
export interface DialogMethods {
  /** Asks for a model folder; resolves to the folder, or null when cancelled. */
  chooseModelFolder(): Promise<string | null>;
  chooseTraceFile(): Promise<string | null>;
  chooseExportPath(format: TraceExportFormat): Promise<string | null>;
}

/** What the preload exposes on `window.echoStudio`. */
export interface PreloadBridge extends RequestMethods, DialogMethods {
  /** Subscribes to validated engine events; returns the unsubscribe function. */
  onEvent(listener: (event: EngineEvent) => void): () => void;
  /** Subscribes to the engine link's state; called at once with the current state. */
  onLinkState(listener: (state: BridgeLinkState, detail?: string) => void): () => void;
}

/** IPC channel names between the preload and Electron's main process. */
export const IPC_CHANNELS = {
  /** main → preload: a fresh MessagePort to the engine host (after start or restart). */
  enginePort: 'echo:engine-port',
  /** main → preload: the engine host exited; the payload says why. */
  engineGone: 'echo:engine-gone',
  /** main → preload: an engine event answering main's own request (menu actions). */
  engineEvent: 'echo:engine-event',
  chooseModelFolder: 'echo:choose-model-folder',
  chooseTraceFile: 'echo:choose-trace-file',
  chooseExportPath: 'echo:choose-export-path',
} as const;
