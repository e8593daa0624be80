// What-if for greedy runs: re-score every recorded step under other settings (K_max, τ_d, τ,
// depth and width limits) without running the models.
//
// Why it can be exact: with temperature 0 the output is the target's greedy continuation whatever
// the policy, so the recorded output from a step on *is* the target's argmax path from that
// step's prefix; greedy verification accepts exactly the longest prefix of it present in the
// verified tree. The tree another schedule would build comes from the draft's top-k at each node
// it expands, which the trace recorded (expansions) wherever this run expanded the same node.
// Where a re-score needs an expansion the run did not make, or a token past the recorded output,
// the step (or request-step) is reported as undecided, with the reason, never guessed.
//
// Re-scoring is per step, from each recorded step's own prefix and batch: it answers "how would
// this step have gone with these settings?". Wall time is not re-simulated.

import type { WhatIfSettings } from '../../shared/config.js';
import type { RequestStep, RunMetrics, StepEvent } from '../../shared/events.js';
import type { Expansion, TraceStep } from '../../shared/trace-schema.js';
import { parseProfile, profileGates } from '../calibrate/profile.js';
import { driveStep, newStepContext, type Layer } from '../policy/drive.js';
import { RunMetricsAccumulator } from '../metrics/run-metrics.js';
import { requestFutures, type RequestFuture } from '../metrics/greedy-futures.js';
import { createPolicy, type PolicyOptions, type SpeculationPolicy, type StepContext, type StepRequest } from '../policy/index.js';
import { verifyGreedy } from '../verify/greedy.js';
import { packSuperTree, type PackedRequest } from '../verify/pack.js';
import type { TraceContents } from './parse.js';
import { Refusal } from '../refusal.js';

/** Settings to re-score under (declared with the run config); anything absent keeps the recorded run's value. */
export type { WhatIfSettings };

export interface WhatIfRequestStep {
  requestId: string;
  /** False when the outcome depends on a target token past the recorded output. */
  decided: boolean;
  reason?: string;
  verifiedDraftNodes: number;
  /** Layers of the tree the schedule verified (0: root only). */
  verifiedDepth: number;
  acceptedLength?: number;
  emittedLength?: number;
}

export interface WhatIfStep {
  step: number;
  /** False when the schedule needed a draft expansion the recording does not have. */
  decided: boolean;
  reason?: string;
  kmax: number;
  verifiedTokens?: number;
  requests: WhatIfRequestStep[];
}

export interface WhatIfMetrics {
  /** Over decided request-steps. */
  meanAcceptedTokens: number;
  meanAcceptanceLength: number;
  draftUtilisation: number;
  acceptancePerPosition: number[];
  /** Over decided steps. */
  verifiedTokensPerStep: number;
}

export interface WhatIfResult {
  policy: string;
  settings: WhatIfSettings;
  steps: WhatIfStep[];
  decidedSteps: number;
  decidedRequestSteps: number;
  undecidedRequestSteps: number;
  metrics: WhatIfMetrics;
}

/** Token path root → node (root excluded) as a map key. */
function pathKey(parents: ArrayLike<number>, tokens: ArrayLike<number>, node: number): string {
  const path: number[] = [];
  for (let n = node; n > 0; n = parents[n]) path.push(tokens[n]);
  return path.reverse().join(',');
}

class UndecidedStep extends Error {}

function rescoreStep(
  policy: SpeculationPolicy,
  step: TraceStep,
  kmax: number,
  maxNewTokens: number,
  futures: Map<string, RequestFuture>,
  ends: ReadonlySet<number> | undefined,
): { result: WhatIfStep; event: StepEvent | null } {
  const recorded = step.requests.map((r) => {
    if (r.expansions === undefined) throw new Refusal(`step ${step.step} has no recorded expansions for ${r.requestId}`);
    const byPath = new Map<string, Expansion>();
    const parents = r.nodes.map((n) => n.parent);
    const tokens = r.nodes.map((n) => n.token);
    for (const e of r.expansions) byPath.set(pathKey(parents, tokens, e.node), e);
    return byPath;
  });
  const ctx = newStepContext(
    step.step,
    kmax,
    step.requests.map((r) => ({ id: r.requestId, root: r.nodes[0].token, remaining: maxNewTokens - futures.get(r.requestId)!.outputBefore })),
    // The recorded step's past prices it as the run priced it (a re-score that emits other tokens
    // reaches other pasts; the recorded one is the nearest known).
    { past: step.past, ends, waiting: step.waiting },
  );
  try {
    driveStep(policy, ctx, expandFromRecording(policy.candidatesPerNode, recorded));
  } catch (e) {
    if (!(e instanceof UndecidedStep)) throw e;
    return { result: { step: step.step, decided: false, reason: e.message, kmax, requests: [] }, event: null };
  }
  const superTree = packSuperTree(
    ctx.requests.map((r) => r.tree),
    ctx.requests.map((r) => r.index),
  );
  const verified = ctx.requests.map((r, i) => verifyAgainstOutput(r, superTree.requests[i], futures.get(r.id)!, maxNewTokens));
  // The replayed policy learns from the step's verdicts as the live run did (ECHO's value model).
  if (verified.every((v) => v.result.decided)) policy.afterVerify?.(ctx, verified.map((v) => v.requestStep?.accepted ?? []));
  return {
    result: { step: step.step, decided: true, kmax, verifiedTokens: superTree.tokens, requests: verified.map((v) => v.result) },
    event: metricsEvent(step.step, kmax, superTree.tokens, verified.flatMap((v) => (v.requestStep ? [v.requestStep] : []))),
  };
}

/** The draft model's part in the driver, played by the expansions the run recorded. */
function expandFromRecording(k: number, recorded: Map<string, Expansion>[]): (layer: Layer, ctx: StepContext) => void {
  let row = 0;
  return ({ depth, frontiers }, ctx) => {
    frontiers.forEach((frontier, i) => {
      const tree = ctx.requests[i].tree;
      for (const node of frontier) {
        const key = pathKey(tree.parent, tree.token, node);
        const e = recorded[i].get(key);
        if (e === undefined) {
          throw new UndecidedStep(`${tree.requestId} would expand the node at path [${key}] (depth ${depth}), which the recording did not draft`);
        }
        if (e.tokens.length < k) {
          throw new UndecidedStep(`${tree.requestId}: the recording kept ${e.tokens.length} candidates per node, the policy needs ${k}`);
        }
        tree.setCandidates(node, row++, Int32Array.from(e.tokens.slice(0, k)), Float32Array.from(e.logq.slice(0, k)));
      }
    });
  };
}

/** A target token past the recorded output: greedy verification never accepts it. */
const UNKNOWN = -1;

/**
 * Greedy verification (verify/greedy.ts) with the recorded output as the target's argmax path: a
 * node d + 1 tokens below the root reads the output's token d + 1 positions on. Only the nodes on
 * the accepted path are read, and they lie on the recorded path, so the others' values never matter.
 */
function verifyAgainstOutput(
  r: StepRequest,
  packed: PackedRequest,
  future: RequestFuture,
  maxNewTokens: number,
): { result: WhatIfRequestStep; requestStep?: RequestStep } {
  const tree = r.tree;
  let verifiedDepth = 0;
  for (let n = 1; n < tree.size; n++) if (tree.verified[n]) verifiedDepth = Math.max(verifiedDepth, tree.depth[n] + 1);
  const base = { requestId: r.id, verifiedDraftNodes: tree.verifiedCount, verifiedDepth };
  const argmax = Array.from(packed.nodeOfRow, (node) => future.greedy[future.outputBefore + tree.depth[node] + 1] ?? UNKNOWN);
  const verdict = verifyGreedy({ ...packed, offset: 0 }, argmax);
  const accepted = verdict.accepted.length;
  const last = verdict.accepted.at(-1) ?? 0;
  if (verdict.bonus === UNKNOWN && tree.verifiedChildren(last).length > 0) {
    const known = future.greedy.length - future.outputBefore;
    return { result: { ...base, decided: false, reason: `${r.id}: the tree reaches past the recorded output (${known} tokens known from this step on)` } };
  }
  // Emission stops at EOS or the length cap exactly where the recorded output did.
  const cap = future.finishes ? future.outputLeft : maxNewTokens - future.outputBefore;
  const emittedLength = Math.min(accepted + 1, cap);
  const requestStep: RequestStep = {
    requestId: r.id,
    nodes: Array.from({ length: tree.size }, (_, id) => tree.nodeRecord(id)),
    gates: r.gates,
    confidences: r.confidences,
    accepted: verdict.accepted,
    bonusToken: verdict.bonus,
    emitted: Array.from({ length: emittedLength }, (_, p) => future.greedy[future.outputBefore + p] ?? UNKNOWN),
  };
  return { result: { ...base, decided: true, acceptedLength: accepted, emittedLength }, requestStep };
}

/**
 * A re-scored step as the run metrics read it: the decided request-steps only (the metrics are
 * over those), with the whole step's verified tokens. Wall time is not re-simulated.
 */
function metricsEvent(step: number, kmax: number, verifiedTokens: number, requests: RequestStep[]): StepEvent {
  return {
    type: 'step',
    step,
    t: 0,
    kmax,
    verifiedTokens,
    requests,
    timings: { draftMs: 0, packMs: 0, verifyMs: 0, commitMs: 0, totalMs: 0 },
    budget: { roots: 0, base: 0, depth: 0, width: 0, unused: 0 },
    transfers: [],
    paddingWaste: 0,
  };
}

/** Re-score a recorded greedy run (recorded with recordCandidates) under other settings. */
export function rescoreTrace(trace: TraceContents, settings: WhatIfSettings = {}): WhatIfResult {
  const { config } = trace.header;
  if (config.temperature !== 0) {
    throw new Refusal(`what-if re-scoring needs a greedy run (temperature 0); this trace ran at temperature ${config.temperature}`);
  }
  if (!trace.header.recordCandidates) {
    throw new Refusal('this trace was recorded without candidate expansions (recordCandidates); it cannot be re-scored');
  }
  // A run whose τ_d came from a profile (a file or its warm-up) has none in its config: they, and
  // the signal they are in, are in the header's copy of that profile.
  const profile = trace.header.profile && config.taus === undefined ? parseProfile(trace.header.profile, 'the trace header') : undefined;
  // Traces from before the draft price have no draftCost: their layers were never priced.
  const options: PolicyOptions = { ...config, ...(profile ? profileGates(profile) : {}), draftCost: config.draftCost ?? 0, ...settings };
  const policy = createPolicy(config.policy, options);
  const futures = requestFutures(trace.steps);
  // Re-scored as the engine drafts now: nothing below a drafted end-of-sequence token. A trace from
  // before that rule records none, and its policy is replayed as it ran.
  const targetEnds = trace.header.models.target.ends;
  const ends = targetEnds ? new Set(targetEnds) : undefined;
  const metrics = new RunMetricsAccumulator({ policy: config.policy });
  // Knob changes the run recorded apply at their step, unless the what-if sets that knob; each
  // step line already carries the K_max in force.
  const knobsAt = new Map(trace.knobs.map((k) => [k.step, k.knobs]));
  const steps = trace.steps.map((step, s) => {
    const knobs = knobsAt.get(step.step);
    if (knobs) {
      const fixed = { ...(settings.taus ? { taus: settings.taus } : {}), ...(settings.tau !== undefined ? { tau: settings.tau } : {}) };
      policy.setKnobs?.({ ...knobs, ...fixed });
    }
    const { result, event } = rescoreStep(policy, step, settings.kmax ?? step.kmax, config.maxNewTokens, futures[s], ends);
    if (event) metrics.addStep(event);
    return result;
  });
  return { policy: config.policy, settings, steps, ...summarise(steps, metrics.metrics()) };
}

function summarise(steps: WhatIfStep[], run: RunMetrics): Omit<WhatIfResult, 'policy' | 'settings' | 'steps'> {
  const decided = steps.filter((s) => s.decided);
  const requestSteps = decided.flatMap((s) => s.requests);
  const decidedRequestSteps = requestSteps.filter((r) => r.decided).length;
  return {
    decidedSteps: decided.length,
    decidedRequestSteps,
    undecidedRequestSteps: requestSteps.length - decidedRequestSteps,
    metrics: {
      meanAcceptedTokens: run.meanAcceptedTokens,
      meanAcceptanceLength: run.meanAcceptanceLength,
      draftUtilisation: run.draftUtilisation,
      acceptancePerPosition: run.acceptancePerPosition,
      verifiedTokensPerStep: run.verifiedTokensPerStep,
    },
  };
}
