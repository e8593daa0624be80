// Calibrated settings handed to serving engines, for when a pair outgrows one machine: the flags
// SGLang's EAGLE-3 mode (with its ECHO threshold) takes and the speculative config vLLM takes,
// each with what that engine cannot express of the calibration. Pure: the caller prints them.
import type { TreeShape } from '../shared/config';
import { HIGH_LOAD_SHAPE, LOW_LOAD_SHAPE } from './policy/budget';

/** What of a calibration profile the hand-off reads. */
export interface ServingProfile {
  /** τ_d at the sweet spots (depth → τ). */
  taus: Readonly<Record<string, number>>;
  /** τ_d at every calibrated depth (what dense gating would use). */
  denseTaus?: Readonly<Record<string, number>>;
  confidence: string;
}

export interface ServingHandOff {
  /** Which load the base shape is for: batch 1, or a batch of many. */
  load: 'low' | 'high';
  shape: TreeShape;
  /** The one threshold SGLang takes, and the rule that chose it from the τ_d. */
  threshold: { tau: number; depth: number; rule: string };
  sglang: string[];
  vllm: { method: 'eagle3'; model: string; num_speculative_tokens: number };
  /** What each engine cannot express of the calibration. */
  notes: { sglang: string[]; vllm: string[] };
}

/**
 * The one τ SGLang's ECHO threshold takes: the smallest sweet-spot τ_d (ties: the shallowest
 * depth). Applied at every gate, a threshold above some τ_d would cut confidences the calibration
 * found worth verifying there; the smallest cuts nothing a per-depth gate would keep, and at its
 * own depth it is exact.
 */
export function singleThreshold(taus: Readonly<Record<string, number>>): { tau: number; depth: number } {
  const entries = Object.entries(taus).map(([d, tau]) => ({ depth: Number(d), tau }));
  if (entries.length === 0) throw new Error('the profile has no sweet spot: there is no threshold to hand on');
  return entries.reduce((best, e) => (e.tau < best.tau || (e.tau === best.tau && e.depth < best.depth) ? e : best));
}

export const THRESHOLD_RULE = 'the smallest sweet-spot τ_d: applied at every gate, it never cuts a confidence a per-depth gate would keep';

/**
 * The hand-off for one load: the paper's base shapes (batch 1: depth 8, top-k 10, 60 draft tokens;
 * many: 3 / 3 / 5), or a shape given. SGLang counts the verified root among its draft tokens, so
 * --speculative-num-draft-tokens is the shape's tokens + 1.
 */
export function servingHandOff(profile: ServingProfile, options: { load: 'low' | 'high'; draftModel: string; shape?: TreeShape }): ServingHandOff {
  const shape = options.shape ?? (options.load === 'low' ? LOW_LOAD_SHAPE : HIGH_LOAD_SHAPE);
  const threshold = { ...singleThreshold(profile.taus), rule: THRESHOLD_RULE };
  const perDepth = Object.entries(profile.taus)
    .map(([d, t]) => `d${d}:${t}`)
    .join(' ');
  const sglang = [
    '--speculative-algorithm EAGLE3',
    `--speculative-draft-model-path ${options.draftModel}`,
    `--speculative-eagle-topk ${shape.topk}`,
    `--speculative-num-steps ${shape.depth}`,
    `--speculative-num-draft-tokens ${shape.tokens + 1}`,
    `--speculative-echo-threshold ${threshold.tau}`,
  ];
  const dense = profile.denseTaus ? Object.keys(profile.denseTaus).length : 0;
  return {
    load: options.load,
    shape,
    threshold,
    sglang,
    vllm: { method: 'eagle3', model: options.draftModel, num_speculative_tokens: shape.depth },
    notes: {
      sglang: [
        `one threshold for every gate: the per-depth τ_d (${perDepth}) collapse to ${threshold.tau}, the one at depth ${threshold.depth}`,
        `the gates sit where SGLang puts them, not only at the calibrated sweet spots (sparse gates: depths ${Object.keys(profile.taus).join(', ')})`,
        `the threshold is read in the engine's own confidence; these τ were calibrated on ${profile.confidence}`,
      ],
      vllm: [
        'no confidence gate at all: no τ_d, no sparse gates, no truncate-and-widen',
        `a fixed chain of ${shape.depth} draft tokens per request, no per-request tree nor a budget shared across the batch (K_max)`,
        ...(dense > 0 ? [`none of the ${dense} calibrated per-depth thresholds carries over`] : []),
      ],
    },
  };
}

/** The hand-off as text: a command line for SGLang, a JSON line for vLLM, and the notes. */
export function formatServingHandOff(h: ServingHandOff): string {
  return [
    `${h.load === 'low' ? 'low load (batch 1)' : 'high load (many requests)'}: depth ${h.shape.depth}, top-k ${h.shape.topk}, ${h.shape.tokens} draft tokens`,
    `  SGLang: python -m sglang.launch_server --model-path TARGET ${h.sglang.join(' ')}`,
    `    threshold rule: ${h.threshold.rule}`,
    ...h.notes.sglang.map((n) => `    cannot express: ${n}`),
    `  vLLM: --speculative-config '${JSON.stringify(h.vllm)}'`,
    ...h.notes.vllm.map((n) => `    cannot express: ${n}`),
  ].join('\n');
}
