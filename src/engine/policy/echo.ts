// `echo`: sparse confidence gating at the sweet-spot depths D_sig with per-depth thresholds τ_d,
// and the unified elastic budget scheduler (echo-scheduler.ts). The τ_d come from a calibration
// profile (src/engine/calibrate); `dense`, `fixed` and `ddd` are ablations on the same scheduler.
import { tauProblem, type Knobs, type TreeShape } from '../../shared/config.js';
import { DEFAULT_DRAFT_FRACTION } from '../cost/clock.js';
import { LOW_LOAD_SHAPE } from './budget.js';
import { ElasticScheduler, type ElasticRules } from './echo-scheduler.js';
import type { PolicyOptions } from './types.js';
import { Refusal } from '../refusal.js';
import { emptyChildCounts } from '../calibrate/child-acceptance.js';

/**
 * Thresholds used when no profile and no τ_d are given: the root layer and the base shape's
 * last layer, the two sweet spots the paper finds on every model, at the paper's typical values
 * (LLaMA-3.1-8B d0 0.2 … d8 0.5). The run command calibrates instead when it can.
 */
export function fallbackTaus(shape: TreeShape): Record<string, number> {
  return shape.depth > 1 ? { '0': 0.2, [String(shape.depth - 1)]: 0.5 } : { '0': 0.2 };
}

/**
 * The base shape when none is given: the same at every load, EAGLE-3's 8 / 10 / 60 (the shape
 * `static` and `eagle2` default to). What a request may spend is its share of K_max, so the
 * budget, not the shape, sizes the trees: at batch 8 under a K_max of 222 a share is 26 tokens,
 * at batch 64 it is 2. (The paper's 3 / 3 / 5 for high load left most of a large K_max idle.)
 */
export function echoBaseShape(options: PolicyOptions): TreeShape {
  return options.shape ?? LOW_LOAD_SHAPE;
}

/** Confident requests may go this many layers past the base depth unless told otherwise. */
export const DEFAULT_EXTRA_DEPTH = 3;

export function echoLimits(options: PolicyOptions, shape: TreeShape): { maxDepth: number; maxWidth: number } {
  const maxDepth = options.maxDepth ?? shape.depth + DEFAULT_EXTRA_DEPTH;
  if (maxDepth < shape.depth) {
    throw new Refusal(`max depth ${maxDepth} is below the base shape's depth ${shape.depth}`);
  }
  return { maxDepth, maxWidth: options.maxWidth ?? shape.topk };
}

/**
 * What one draft forward costs when nothing says otherwise, as a share of the target's one-token
 * forward: the modelled clock's EAGLE-style head (one decoder layer and the LM head).
 */
export const DEFAULT_DRAFT_COST = DEFAULT_DRAFT_FRACTION;

/**
 * The rules echo, dense and fixed take from their options alike: the verification price, the
 * signal, what a node is worth (a calibration's measured acceptance, when at hand) and the draft
 * price (with that acceptance, when the draft cost is not 0).
 */
export function gatedRules(options: PolicyOptions): Pick<ElasticRules, 'cost' | 'confidence' | 'draftPrice' | 'acceptance' | 'childAcceptance'> {
  const forward = options.draftCost ?? DEFAULT_DRAFT_COST;
  // With a calibration at hand, nodes are valued by the measured conditional acceptance, started
  // from the warm-up's samples when the calibration kept them and learnt online either way.
  const children = options.childAcceptance ?? (options.acceptance ? emptyChildCounts() : undefined);
  return {
    ...(children ? { childAcceptance: children } : {}),
    ...(options.verifyCost ? { cost: options.verifyCost } : {}),
    ...(options.confidence ? { confidence: options.confidence } : {}),
    ...(options.acceptance ? { acceptance: options.acceptance } : {}),
    ...(options.acceptance && forward > 0 ? { draftPrice: { forward, acceptance: options.acceptance } } : {}),
  };
}

export function tauMap(taus: Readonly<Record<string, number>>): Map<number, number> {
  const map = new Map<number, number>();
  for (const [key, tau] of Object.entries(taus)) {
    const depth = Number(key);
    if (!Number.isInteger(depth) || depth < 0) throw new Refusal(`τ key "${key}" is not a depth (0, 1, 2, …)`);
    const problem = tauProblem(tau, `τ at depth ${depth}`);
    if (problem !== null) throw new Refusal(problem);
    map.set(depth, tau);
  }
  return map;
}

export class EchoPolicy extends ElasticScheduler {
  constructor(options: PolicyOptions) {
    const shape = echoBaseShape(options);
    const limits = echoLimits(options, shape);
    super('echo', {
      shape,
      ...limits,
      gate: { signal: 'best-path', taus: tauMap(options.taus ?? fallbackTaus(shape)) },
      reallocate: true,
      priceCuts: options.cuts !== 'bare',
      widen: true,
      ...gatedRules(options),
    });
  }

  /** τ_d moved in the studio apply from the next step. */
  setKnobs(knobs: Knobs): void {
    if (knobs.taus !== undefined) this.rules.gate = { signal: 'best-path', taus: tauMap(knobs.taus) };
  }
}
