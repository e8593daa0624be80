// Run configuration: one schema for the CLI, the studio and the trace header, validated wherever
// it enters (flags, messages, files).
import { z } from 'zod';

export const POLICY_NAMES = [
  'ar',
  'chain',
  'static',
  'eagle2',
  'ddd',
  'dense',
  'fixed',
  'echo',
] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/**
 * What a policy may be called: the built-in names and any a program registers beside them
 * (engine/policy/index.ts registerPolicy). A sweep entry reads `@` and `#` after the name, so
 * names keep to a plain alphabet. Whether the name is registered is checked where the registry is
 * known: the command line when it parses --policy, the engine before it loads anything.
 */
export const PolicyNameSchema = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'a policy name is lower-case letters, digits and dashes');

/** The policies that gate with τ_d (and so read a profile, a confidence signal, a verification cost). */
export const GATED_POLICIES: readonly PolicyName[] = ['echo', 'dense', 'fixed'];
export const isGatedPolicy = (policy: string): boolean => (GATED_POLICIES as readonly string[]).includes(policy);

/**
 * Weights of a model's linear layers and head: as on disk (float32), or 8-bit or 4-bit blocks
 * (weight-only quantisation; embeddings, norms and attention stay float32). A draft's precision
 * never changes what a lossless run outputs; a quantised target's does: the run is then lossless
 * with respect to that quantised target, which is what it records.
 */
export const WeightPrecisionSchema = z.enum(['float32', 'int8', 'int4']);
export type WeightPrecision = z.infer<typeof WeightPrecisionSchema>;
export const WEIGHT_PRECISIONS = WeightPrecisionSchema.options;

/** The draft's precision unless told otherwise: int8 where it was measured to pay (CPU), float32 with CUDA. */
export function defaultDraftPrecision(provider: 'cpu' | 'cuda' | undefined): WeightPrecision {
  return provider === 'cuda' ? 'float32' : 'int8';
}

/**
 * What ECHO's gates and scheduler read as a path's confidence (docs/echo.md, "Confidence signals"):
 * - `path-prob` (the paper's): Σ log q along the path, c_{i,d} = exp(max_j S_{i,d,j});
 * - `path-margin`: the same with each q renormalised over its parent's two best candidates, how
 *   clearly the draft preferred every step to its runner-up. A small draft spreads mass over a long
 *   tail, which lowers q unevenly across contexts; the margin ignores the tail.
 * Calibration measures both and keeps the one that separates accepted from rejected tokens clearly
 * better (path-prob unless the margin's mean AUC is more than 0.01 higher), unless told which.
 */
export const ConfidenceSignalSchema = z.enum(['path-prob', 'path-margin']);
export type ConfidenceSignal = z.infer<typeof ConfidenceSignalSchema>;

/** A measured forward-time curve: milliseconds against packed rows. */
export const TimedPointsSchema = z.array(z.object({ tokens: z.number().int().min(1), ms: z.number().positive() })).min(1);

/**
 * The same forwards timed at longer pasts (`profile-hw --context 64,128,192`), shortest first: a
 * step is priced and timed at its own longest past, between the two contexts around it
 * (cost/clock.ts contextCurves). One shape wherever curves travel: a price, a profile file, the
 * studio's clock.
 */
export function longerCurvesSchema<Points extends z.ZodType>(points: Points) {
  return z.array(z.object({ context: z.number().int().min(1), target: points, draft: points, oneRequest: oneRequestCurvesSchema(points).optional() }));
}

/**
 * The same forwards with every row in one request (`profile-hw` times them beside the spread
 * ones, at each context): a step of one request is read off them. Spread over many requests, a
 * curve says little of one request's tree: on the bundled target one request's forward took
 * 7.7-8.0 ms at 7-8 rows where the spread curve read 7.0-7.4, and matched it at 12 and 16.
 */
export function oneRequestCurvesSchema<Points extends z.ZodType>(points: Points) {
  return z.object({ target: points, draft: points });
}

/**
 * Forward times a price reads as measured (`profile-hw`'s curves): the target's and the draft's
 * milliseconds against packed rows, each size's rows spread over up to `spread` requests. Where a
 * CPU's forward grows from the first token, a two-part fit (flat to a knee, then linear) calls
 * tokens free that are not: on the bundled pair one thread verifies 16 tokens of one request in
 * about twice one token's time, where the fit's knee says the same time.
 */
export const PriceCurvesSchema = z.object({
  target: TimedPointsSchema,
  draft: TimedPointsSchema,
  spread: z.number().int().min(1).optional(),
  /** Committed rows per request when `target` and `draft` were timed (absent: one context, read at every past). */
  context: z.number().int().min(0).optional(),
  /** The same forwards timed at longer pasts (longerCurvesSchema). */
  longer: longerCurvesSchema(TimedPointsSchema).optional(),
  /** The same forwards with every row in one request, at `context` (oneRequestCurvesSchema; absent: read off the spread curves). */
  oneRequest: oneRequestCurvesSchema(TimedPointsSchema).optional(),
  /** What a step's first draft forwards cost beyond the draft curve's warm time, in ms, in order (profile-hw times them after a target forward). */
  draftAfterTargetMs: z.array(z.number().min(0)).optional(),
});
export type PriceCurves = z.infer<typeof PriceCurvesSchema>;

/** A base tree shape: max depth, top-k children per node, verified draft tokens per request. */
/** The most a draft forward may cost, in target one-token forwards (a bound on typos, not on hardware). */
export const MAX_DRAFT_COST = 10;

export const TreeShapeSchema = z.object({
  depth: z.number().int().min(1).max(64),
  topk: z.number().int().min(1).max(64),
  tokens: z.number().int().min(1).max(1024),
});
export type TreeShape = z.infer<typeof TreeShapeSchema>;

/**
 * Which committed rows a query sees besides its tree ancestors: a query at position p sees row k iff
 * k < sink or p − k < recent (docs/model-runtime.md, "Attention windows").
 */
export const AttentionWindowSchema = z.object({
  sink: z.number().int().min(0, 'the sink is 0 or more rows'),
  recent: z.number().int().min(1, 'the recent window is at least 1 row'),
});
export type AttentionWindow = z.infer<typeof AttentionWindowSchema>;

/** "SINK:RECENT" (whole numbers) → the window, unchecked against the schema; null when not of that form. */
export function parseAttentionWindow(text: string): AttentionWindow | null {
  const match = /^(\d+):(\d+)$/.exec(text);
  return match ? { sink: Number(match[1]), recent: Number(match[2]) } : null;
}

/** "SINK:RECENT" → the window when the schema accepts it (recent ≥ 1); else null. */
export function parseValidAttentionWindow(text: string): AttentionWindow | null {
  const window = parseAttentionWindow(text);
  return window !== null && AttentionWindowSchema.safeParse(window).success ? window : null;
}

/** The window as "SINK:RECENT", as the flags and sweep entries write it. */
export function formatAttentionWindow(window: AttentionWindow): string {
  return `${window.sink}:${window.recent}`;
}

/** A threshold τ: it is compared with a probability, so it lies in [0, 1]. */
export const TauSchema = z.number().min(0).max(1);

/** τ's range rule, for every place that takes a τ: null when `tau` is one, else the one line naming what was given. */
export function tauProblem(tau: number, what = 'τ'): string | null {
  return TauSchema.safeParse(tau).success ? null : `${what} is ${tau}; thresholds are probabilities in [0, 1]`;
}

/**
 * K_max's rule, for every place that sets a K_max or a batch: each request a step verifies costs at
 * least its root token, so K_max is at least the requests (the batch size; `what` names them).
 * Null when it holds, else the one line naming both values.
 */
export function kmaxProblem(kmax: number, requests: number, what = 'the batch size'): string | null {
  return kmax < requests ? `K_max (${kmax}) is below ${what} (${requests}): every request needs at least its root token verified` : null;
}

/**
 * The one τ_d grammar of the command line (run, sweep, trace what-if) and the studio's run form:
 * DEPTH:TAU pairs separated by commas or spaces (DEPTH=TAU reads alike), each τ in [0, 1], e.g.
 * "0:0.2, 5:0.35"; "none" is no gates. The thresholds keyed by depth, or the part that is not a pair
 * (with `repeats`, the depth, when the part names a depth an earlier part already gave).
 */
export function parseTauList(text: string): { taus: Record<string, number> } | { bad: string; repeats?: string } {
  const taus: Record<string, number> = {};
  const trimmed = text.trim();
  if (trimmed === 'none') return { taus };
  // A pair may space out its colon ("0 : 0.2"); pairs are apart by commas or spaces.
  const parts = trimmed.replace(/\s*([:=])\s*/g, '$1').split(/[\s,]+/);
  for (const part of parts) {
    const m = /^(\d+)[:=]([0-9.eE+-]+)$/.exec(part);
    const tau = m ? Number(m[2]) : NaN;
    if (!m || tauProblem(tau) !== null) return { bad: part };
    const depth = String(Number(m[1]));
    // One depth given twice is a typo, not a choice: neither τ would be the one meant.
    if (depth in taus) return { bad: part, repeats: depth };
    taus[depth] = tau;
  }
  return { taus };
}

/**
 * Every setting of a run, each declared once here: the run config, the knobs the studio turns
 * mid-run, the policies' options and the command line's flags are all cut from these fields.
 */
export const RUN_FIELDS = {
  /** Model folders; absent = the bundled demo pair. */
  draftDir: z.string().optional(),
  targetDir: z.string().optional(),
  /** Exactly one of domain (bundled prompt set) or promptsFile. */
  domain: z.string().optional(),
  promptsFile: z.string().optional(),
  policy: PolicyNameSchema,
  /** Requests in flight at once (continuous batching). */
  batch: z.number().int().min(1).max(1024),
  /** Global verification budget: Σ_i (1 + K_i) ≤ kmax. */
  kmax: z.number().int().min(1).max(65536),
  /** Requests to run in total. */
  requests: z.number().int().min(1),
  maxNewTokens: z.number().int().min(1).max(65536),
  temperature: z.number().min(0).max(10),
  seed: z.number().int(),
  /** Chain length for `chain`. */
  chainLength: z.number().int().min(1).max(64).optional(),
  /** Base tree shape for tree policies; defaults depend on load (see docs/conventions.md). */
  shape: TreeShapeSchema.optional(),
  /** ECHO: per-depth thresholds τ_d keyed by depth (sweet spots only). */
  taus: z.record(z.string().regex(/^\d+$/), TauSchema).optional(),
  /** `fixed`: one τ for every gated depth. */
  tau: TauSchema.optional(),
  /** ECHO: deepest depth a confident request may reach. */
  maxDepth: z.number().int().min(1).max(64).optional(),
  /** ECHO: most children per node under width expansion. */
  maxWidth: z.number().int().min(1).max(64).optional(),
  /** `ddd`: stop when log Σ_beam exp(S) < this. */
  dddThreshold: z.number().optional(),
  /**
   * echo / dense / fixed: the verification cost (profile-hw's T_ver fit: knee in tokens, γ per
   * token past it as a share of a one-token forward; draftRow, one drafted row's cost in the same
   * unit; or, with `curves`, the forward times profile-hw measured, read as they are). With it a
   * token is granted only when its expected acceptance pays for its time, and a layer is drafted
   * only when a sure token would; without it the scheduler fills K_max.
   */
  verifyCost: z
    .object({
      knee: z.number().int().min(0),
      gamma: z.number().min(0).max(100),
      draftRow: z.number().min(0).max(100).optional(),
      curves: PriceCurvesSchema.optional(),
    })
    .optional(),
  /**
   * echo / dense / fixed: one draft forward's cost as a share of the target's one-token forward
   * (profile-hw prints it). With a calibration's measured acceptance (a profile or the warm-up),
   * a layer is drafted only when it can pay for its forward; 0 turns that off. Default 0.05.
   */
  draftCost: z.number().min(0).max(MAX_DRAFT_COST).optional(),
  /** Path to a calibration profile JSON. */
  profile: z.string().optional(),
  /**
   * The draft sees only its request's first `sink` rows and the `recent` rows before each drafted
   * token (attention sinks and a recent window): drafting reads a bounded past per request.
   * Absent: the draft's whole past. The target is never windowed.
   */
  draftWindow: AttentionWindowSchema.optional(),
  /**
   * What drafts: 'model' (a small language model) or 'head' (an EAGLE-3 head reading the target's
   * features). Absent: the bundled draft model, or whatever the draft folder holds. With no folders
   * given, 'head' picks the bundled demo head.
   */
  draftKind: z.enum(['model', 'head']).optional(),
  /**
   * echo / dense / fixed: the confidence signal. Default: the profile's; without a profile, the
   * warm-up's pick (the signal that separates best); with `taus` and no signal, `path-prob`.
   */
  confidence: ConfidenceSignalSchema.optional(),
  /**
   * echo / dense / fixed: when a failed gate truncates. `priced` (absent): only when what the cut
   * frees buys more than the request's layer (the batch's marginal node is worth less); `bare`:
   * at every failed gate, the paper's rule alone.
   */
  cuts: z.enum(['priced', 'bare']).optional(),
  /**
   * The target's weights: float32 (absent; as on disk, outputs those of plain decoding in float32)
   * or int8 / int4 weight-only blocks for a target too large for this machine in float32. Every
   * policy's output then equals plain decoding of the same quantised target.
   */
  targetPrecision: WeightPrecisionSchema.optional(),
};

export const RunConfigSchema = z
  .object(RUN_FIELDS)
  .superRefine((c, ctx) => {
    const kmax = kmaxProblem(c.kmax, c.batch);
    if (kmax !== null) ctx.addIssue({ code: 'custom', path: ['kmax'], message: kmax });
    if (c.domain !== undefined && c.promptsFile !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['domain'], message: 'give either a domain or a prompts file, not both' });
    }
    if ((c.draftDir === undefined) !== (c.targetDir === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['draftDir'], message: 'give both --draft and --target, or neither for the bundled pair' });
    }
  });
export type RunConfig = z.infer<typeof RunConfigSchema>;

/** Knobs the studio may change between steps of a running run: the config's own fields, each optional. */
export const KnobsSchema = z.object(RUN_FIELDS).pick({ kmax: true, taus: true, tau: true, batch: true }).partial();
export type Knobs = z.infer<typeof KnobsSchema>;

/** The settings a speculation policy is built from (`PolicyOptions` adds what calibration resolves). */
export type PolicySettings = Pick<
  RunConfig,
  'batch' | 'kmax' | 'chainLength' | 'shape' | 'taus' | 'tau' | 'maxDepth' | 'maxWidth' | 'dddThreshold' | 'confidence' | 'cuts' | 'verifyCost' | 'draftCost'
>;

/** What `trace what-if` may re-score a recorded run under: policy settings, each absent = the run's. */
export type WhatIfSettings = Partial<Pick<PolicySettings, 'kmax' | 'taus' | 'tau' | 'maxDepth' | 'maxWidth' | 'shape' | 'chainLength' | 'dddThreshold' | 'draftCost'>>;
