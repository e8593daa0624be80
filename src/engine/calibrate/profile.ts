// The calibration profile: what `echo-studio calibrate` writes and `run --profile` reads. One
// JSON file per model pair and domain: per-depth AUC, histograms, thresholds and sample counts,
// and the τ_d maps the ECHO policies take. Validated with zod wherever it is read.
import { readFile, writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfidenceSignalSchema, WeightPrecisionSchema, type ConfidenceSignal, type WeightPrecision } from '../../shared/config.js';
import { acceptanceTable, type AcceptanceCurve, type AcceptanceTable } from './acceptance.js';
import { CONFIDENCE_EDGES, RANK_GROUPS, type ChildCounts } from './child-acceptance.js';
import { TAU_RULES, tausOf, type DepthCalibration, type TauRule } from './calibration.js';
import { jsonErrorPosition } from '../json-error.js';
import { Refusal } from '../refusal.js';

/**
 * 2: the profile names the confidence signal its AUCs and τ_d are in; a version 1 reader would take
 * path-margin τ_d for path-prob ones. Version 1 profiles (path-prob) still load.
 */
export const PROFILE_VERSION = 2;

const TauMapSchema = z.record(z.string().regex(/^\d+$/), z.number().min(0).max(1));

const DepthEntrySchema = z.object({
  depth: z.number().int().min(0),
  accepted: z.number().int().min(0),
  rejected: z.number().int().min(0),
  auc: z.number().min(0).max(1).nullable(),
  tau: z.number().min(0).max(1).nullable(),
  youdenJ: z.number().min(-1).max(1).nullable(),
  /** The acceptance rate τ was weighed against (see TauRule); absent in profiles from before the rule. */
  alternative: z.number().min(0).max(1).nullable().optional(),
  sweetSpot: z.boolean(),
  /** Acceptance rate by confidence in bins of equal sample counts (the draft price's curve); absent in older profiles. */
  acceptance: z
    .object({ edges: z.array(z.number()), rates: z.array(z.number().min(0).max(1)).min(1) })
    .refine((c) => c.edges.length === c.rates.length + 1 && c.edges.every((e, i) => i === 0 || e > c.edges[i - 1]), {
      message: 'needs one rate per bin between ascending edges',
    })
    .nullable()
    .optional(),
  histogram: z.object({
    edges: z.array(z.number()),
    accepted: z.array(z.number().int().min(0)),
    rejected: z.array(z.number().int().min(0)),
  }),
});

export const EchoProfileSchema = z
  .object({
    kind: z.literal('echo-profile'),
    version: z.union([z.literal(1), z.literal(PROFILE_VERSION)]),
    createdAt: z.string(),
    models: z.object({ draft: z.string(), target: z.string() }),
    /** The target's weights in the warm-up: its acceptances, so the τ_d, are of that target (profiles from before it was recorded: float32). */
    targetPrecision: WeightPrecisionSchema.default('float32'),
    /** Bundled domain name, or the prompts file calibrated on. */
    domain: z.string(),
    delta: z.number().min(0.5).max(1),
    /** How τ_d were chosen; profiles from before the choice used Youden's J (`separation`). */
    tauRule: z.enum(TAU_RULES as [TauRule, ...TauRule[]]).default('separation'),
    /** The level a τ's truncations had to be significant at; profiles from before the test: 1 (none). */
    significance: z.number().gt(0).max(1).default(1),
    /** The signal the AUCs, histograms and τ_d are in; profiles from before signals were path-prob. */
    confidence: ConfidenceSignalSchema.default('path-prob'),
    /** Every signal the calibration measured, with its mean AUC over the depths: why this one. */
    signals: z.array(z.object({ confidence: ConfidenceSignalSchema, meanAuc: z.number().min(0).max(1).nullable() })).optional(),
    /** Base tree depth the warm-up used; its last layer is the target depth. */
    targetDepth: z.number().int().min(0),
    samples: z.object({
      prompts: z.number().int().min(0),
      steps: z.number().int().min(0),
      requestSteps: z.number().int().min(0),
    }),
    depths: z.array(DepthEntrySchema),
    /**
     * The warm-up's samples of how often a node is accepted once its parent is, by rank group and
     * confidence bin (child-acceptance.ts): where the scheduler's value model starts. Absent in
     * profiles from before it; a run then starts from the rank prior and learns online.
     */
    children: z
      .object({ accepted: z.array(z.array(z.number().int().min(0))), seen: z.array(z.array(z.number().int().min(0))) })
      .refine((c) => c.seen.length === RANK_GROUPS && c.accepted.length === RANK_GROUPS && [...c.seen, ...c.accepted].every((row) => row.length === CONFIDENCE_EDGES.length), {
        message: `needs ${RANK_GROUPS} rank groups of ${CONFIDENCE_EDGES.length} confidence bins`,
      })
      .optional(),
    /** τ_d at the sweet spots D_sig: what `echo` and `fixed` gate with. */
    taus: TauMapSchema,
    /** τ_d at every depth that had enough samples: what `dense` gates with. */
    denseTaus: TauMapSchema,
  })
  .superRefine((p, ctx) => {
    if (Object.keys(p.taus).length === 0) {
      ctx.addIssue({ code: 'custom', path: ['taus'], message: 'the profile has no sweet spot: nothing to gate with' });
    }
  });
export type EchoProfile = z.infer<typeof EchoProfileSchema>;

export interface ProfileInputs {
  models: { draft: string; target: string };
  /** Default float32. */
  targetPrecision?: WeightPrecision;
  domain: string;
  delta: number;
  tauRule: TauRule;
  significance: number;
  confidence: ConfidenceSignal;
  signals?: EchoProfile['signals'];
  targetDepth: number;
  samples: EchoProfile['samples'];
  depths: readonly DepthCalibration[];
  /** Histogram per depth (same index as depths), from the metrics accumulator. */
  histograms: ReadonlyArray<{ edges: number[]; accepted: number[]; rejected: number[] }>;
  /** Acceptance curve per depth (same index as depths), from the raw samples; none: read from the histograms. */
  acceptance?: ReadonlyArray<AcceptanceCurve | null>;
  /** The warm-up's conditional acceptance samples by rank and confidence. */
  children?: ChildCounts;
  createdAt?: Date;
}

export function buildProfile(inputs: ProfileInputs): EchoProfile {
  const profile: EchoProfile = {
    kind: 'echo-profile',
    version: PROFILE_VERSION,
    createdAt: (inputs.createdAt ?? new Date()).toISOString(),
    models: inputs.models,
    targetPrecision: inputs.targetPrecision ?? 'float32',
    domain: inputs.domain,
    delta: inputs.delta,
    tauRule: inputs.tauRule,
    significance: inputs.significance,
    confidence: inputs.confidence,
    ...(inputs.signals ? { signals: inputs.signals } : {}),
    targetDepth: inputs.targetDepth,
    samples: inputs.samples,
    depths: inputs.depths.map((d, i) => ({
      depth: d.depth,
      accepted: d.accepted,
      rejected: d.rejected,
      auc: d.auc,
      tau: d.threshold ? d.threshold.tau : null,
      youdenJ: d.threshold ? d.threshold.j : null,
      alternative: d.threshold ? d.threshold.alternative : null,
      sweetSpot: d.sweetSpot,
      ...(inputs.acceptance ? { acceptance: inputs.acceptance[i] ?? null } : {}),
      histogram: inputs.histograms[i] ?? { edges: [], accepted: [], rejected: [] },
    })),
    ...(inputs.children ? { children: inputs.children } : {}),
    taus: tausOf(inputs.depths, 'sweet-spots'),
    denseTaus: tausOf(inputs.depths, 'all'),
  };
  return EchoProfileSchema.parse(profile);
}

/** Each measured signal's mean AUC, for a log line: "path-prob 0.632, path-margin 0.670". */
export function signalAucs(profile: Pick<EchoProfile, 'signals'>): string {
  return (profile.signals ?? []).map((s) => `${s.confidence} ${s.meanAuc === null ? 'n/a' : s.meanAuc.toFixed(3)}`).join(', ');
}

/** Parses a profile; the error names the file and the first bad field. */
export function parseProfile(json: unknown, source = 'profile'): EchoProfile {
  const result = EchoProfileSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
    throw new Refusal(`${source}: not a valid ECHO profile: ${where}: ${issue.message}`);
  }
  return result.data;
}

export async function loadProfile(path: string): Promise<EchoProfile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Refusal(`cannot read profile ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Refusal(`${path}: not JSON${jsonErrorPosition(err)}`);
  }
  return parseProfile(json, path);
}

export async function saveProfile(path: string, profile: EchoProfile): Promise<void> {
  await writeFile(path, `${JSON.stringify(EchoProfileSchema.parse(profile), null, 2)}\n`);
}

/** The ECHO knobs a profile supplies, in PolicyOptions terms. */
export function profileGates(profile: EchoProfile): {
  taus: Record<string, number>;
  denseTaus: Record<string, number>;
  confidence: ConfidenceSignal;
  /** None when the profile holds no samples to measure acceptance by (no draft price then). */
  acceptance?: AcceptanceTable;
  /** The warm-up's conditional acceptance samples, when the profile kept them. */
  childAcceptance?: ChildCounts;
} {
  const acceptance = acceptanceTable(profile.depths);
  return {
    ...(profile.children ? { childAcceptance: profile.children } : {}),
    taus: { ...profile.taus },
    denseTaus: { ...profile.denseTaus },
    confidence: profile.confidence,
    ...(acceptance.some((curve) => curve !== null) ? { acceptance } : {}),
  };
}
