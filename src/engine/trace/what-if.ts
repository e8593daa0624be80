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

import type { TreeShape } from '../../shared/config.js';
import type { Expansion, TraceStep } from '../../shared/trace-schema.js';
import { parseProfile, profileGates } from '../calibrate/profile.js';
import { recordLayerConfidences } from '../draft/confidence.js';
import { createPolicy, type PolicyOptions, type SpeculationPolicy, type StepContext, type StepRequest } from '../policy/index.js';
import { MAX_DRAFT_DEPTH } from '../step.js';
import { DraftTree } from '../tree.js';
import type { TraceContents } from './parse.js';

/** Settings to re-score under; anything absent keeps the recorded run's value. */
export interface WhatIfSettings {
  kmax?: number;
  taus?: Record<string, number>;
  tau?: number;
  maxDepth?: number;
  maxWidth?: number;
  shape?: TreeShape;
  chainLength?: number;
  dddThreshold?: number;
  /** echo / dense / fixed: the draft price per layer (0: none); default the run's. */
  draftCost?: number;
}

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

/** Per request-step: what the recorded output says the target would have produced from there. */
interface RequestFuture {
  /**
   * The target's greedy tokens for the request as far as the trace knows them (shared by all its
   * steps): every step's emitted tokens, except that the last step contributes its accepted
   * tokens + bonus, which can run past the output's end (EOS, length cap).
   */
  greedy: number[];
  /** Tokens the request emitted before this step: where this step's greedy path starts in `greedy`. */
  outputBefore: number;
  /** Tokens it emitted from this step to its end in the trace. */
  outputLeft: number;
  /** The trace shows the request finishing: outputLeft is its true remaining output. */
  finishes: boolean;
}

function requestFutures(steps: readonly TraceStep[]): Map<string, RequestFuture>[] {
  const perRequest = new Map<string, { greedy: number[]; emitted: number; finishes: boolean }>();
  for (const step of steps) {
    for (const r of step.requests) {
      let req = perRequest.get(r.requestId);
      if (req === undefined) perRequest.set(r.requestId, (req = { greedy: [], emitted: 0, finishes: false }));
      // Drop the previous step's extra tokens past its emitted ones (only a final step has any).
      req.greedy.length = req.emitted;
      const verdict = [...r.accepted.map((id) => r.nodes[id].token), r.bonusToken];
      for (const token of verdict) req.greedy.push(token);
      req.emitted += r.emitted.length;
      if (r.finished) req.finishes = true;
    }
  }
  const produced = new Map<string, number>();
  return steps.map((step) => {
    const futures = new Map<string, RequestFuture>();
    for (const r of step.requests) {
      const req = perRequest.get(r.requestId)!;
      const before = produced.get(r.requestId) ?? 0;
      futures.set(r.requestId, { greedy: req.greedy, outputBefore: before, outputLeft: req.emitted - before, finishes: req.finishes });
      produced.set(r.requestId, before + r.emitted.length);
    }
    return futures;
  });
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
): WhatIfStep {
  const recorded = step.requests.map((r) => {
    if (r.expansions === undefined) throw new Error(`step ${step.step} has no recorded expansions for ${r.requestId}`);
    const byPath = new Map<string, Expansion>();
    const parents = r.nodes.map((n) => n.parent);
    const tokens = r.nodes.map((n) => n.token);
    for (const e of r.expansions) byPath.set(pathKey(parents, tokens, e.node), e);
    return byPath;
  });
  const requests: StepRequest[] = step.requests.map((r, index) => ({
    id: r.requestId,
    index,
    tree: new DraftTree(r.requestId, r.nodes[0].token),
    confidences: [],
    gates: [],
    remaining: maxNewTokens - futures.get(r.requestId)!.outputBefore,
  }));
  const ctx: StepContext = { step: step.step, kmax, requests, transfers: [] };
  try {
    policy.begin(ctx);
    if (policy.candidatesPerNode > 0) draftFromRecording(policy, ctx, recorded);
    policy.select(ctx);
  } catch (e) {
    if (!(e instanceof UndecidedStep)) throw e;
    return { step: step.step, decided: false, reason: e.message, kmax, requests: [] };
  }
  let verifiedTokens = 0;
  for (const r of requests) verifiedTokens += 1 + r.tree.verifiedCount;
  if (verifiedTokens > kmax) throw new Error(`policy "${policy.name}" broke the cap at step ${step.step}: Σ(1+K_i) = ${verifiedTokens} > K_max = ${kmax}`);
  return {
    step: step.step,
    decided: true,
    kmax,
    verifiedTokens,
    requests: requests.map((r) => verifyAgainstOutput(r, futures.get(r.id)!, maxNewTokens)),
  };
}

/** The engine's draft loop, with the draft model replaced by the recorded expansions. */
function draftFromRecording(policy: SpeculationPolicy, ctx: StepContext, recorded: Map<string, Expansion>[]): void {
  const k = policy.candidatesPerNode;
  for (let depth = 0; depth < MAX_DRAFT_DEPTH; depth++) {
    const frontiers = policy.frontier(depth, ctx);
    let expanded = 0;
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
        tree.setCandidates(node, expanded++, Int32Array.from(e.tokens.slice(0, k)), Float32Array.from(e.logq.slice(0, k)));
      }
    });
    if (expanded === 0) return;
    policy.grow(depth, ctx);
    recordLayerConfidences(ctx.requests, depth, policy.confidence);
  }
}

/** Greedy verification with the recorded output as the target's argmax path. */
function verifyAgainstOutput(r: StepRequest, future: RequestFuture, maxNewTokens: number): WhatIfRequestStep {
  const tree = r.tree;
  let verifiedDepth = 0;
  for (let n = 1; n < tree.size; n++) if (tree.verified[n]) verifiedDepth = Math.max(verifiedDepth, tree.depth[n] + 1);
  const base = { requestId: r.id, verifiedDraftNodes: tree.verifiedCount, verifiedDepth };
  let node = 0;
  let accepted = 0;
  for (;;) {
    const children = tree.verifiedChildren(node);
    if (children.length === 0) break;
    const position = future.outputBefore + accepted;
    if (position >= future.greedy.length) {
      const known = future.greedy.length - future.outputBefore;
      return { ...base, decided: false, reason: `${r.id}: the tree reaches past the recorded output (${known} tokens known from this step on)` };
    }
    const next = children.find((c) => tree.token[c] === future.greedy[position]);
    if (next === undefined) break;
    accepted++;
    node = next;
  }
  // Emission stops at EOS or the length cap exactly where the recorded output did.
  const cap = future.finishes ? future.outputLeft : maxNewTokens - future.outputBefore;
  return { ...base, decided: true, acceptedLength: accepted, emittedLength: Math.min(accepted + 1, cap) };
}

/** Re-score a recorded greedy run (recorded with recordCandidates) under other settings. */
export function rescoreTrace(trace: TraceContents, settings: WhatIfSettings = {}): WhatIfResult {
  const { config } = trace.header;
  if (config.temperature !== 0) {
    throw new Error(`what-if re-scoring needs a greedy run (temperature 0); this trace ran at temperature ${config.temperature}`);
  }
  if (!trace.header.recordCandidates) {
    throw new Error('this trace was recorded without candidate expansions (recordCandidates); it cannot be re-scored');
  }
  // A run whose τ_d came from a profile (a file or its warm-up) has none in its config: they, and
  // the signal they are in, are in the header's copy of that profile.
  const profile = trace.header.profile && config.taus === undefined ? parseProfile(trace.header.profile, 'the trace header') : undefined;
  // Traces from before the draft price have no draftCost: their layers were never priced.
  const options: PolicyOptions = { ...config, ...(profile ? profileGates(profile) : {}), draftCost: config.draftCost ?? 0, ...settings };
  const policy = createPolicy(config.policy, options);
  const futures = requestFutures(trace.steps);
  // Knob changes the run recorded apply at their step, unless the what-if sets that knob; each
  // step line already carries the K_max in force.
  const knobsAt = new Map(trace.knobs.map((k) => [k.step, k.knobs]));
  const steps = trace.steps.map((step, s) => {
    const knobs = knobsAt.get(step.step);
    if (knobs) {
      const fixed = { ...(settings.taus ? { taus: settings.taus } : {}), ...(settings.tau !== undefined ? { tau: settings.tau } : {}) };
      policy.setKnobs?.({ ...knobs, ...fixed });
    }
    return rescoreStep(policy, step, settings.kmax ?? step.kmax, config.maxNewTokens, futures[s]);
  });
  return { policy: config.policy, settings, steps, ...summarise(steps) };
}

function summarise(steps: WhatIfStep[]): Omit<WhatIfResult, 'policy' | 'settings' | 'steps'> {
  let decidedSteps = 0;
  let verifiedTokens = 0;
  let decided = 0;
  let undecided = 0;
  let accepted = 0;
  let emitted = 0;
  let verifiedDraft = 0;
  const reached: number[] = [];
  let positions = 0;
  for (const s of steps) {
    if (!s.decided) continue;
    decidedSteps++;
    verifiedTokens += s.verifiedTokens!;
    for (const r of s.requests) {
      if (!r.decided) {
        undecided++;
        continue;
      }
      decided++;
      accepted += r.acceptedLength!;
      emitted += r.emittedLength!;
      verifiedDraft += r.verifiedDraftNodes;
      for (let p = 0; p < r.acceptedLength!; p++) reached[p] = (reached[p] ?? 0) + 1;
      positions = Math.max(positions, r.verifiedDepth, r.acceptedLength!);
    }
  }
  const perRequestStep = (x: number) => (decided > 0 ? x / decided : 0);
  return {
    decidedSteps,
    decidedRequestSteps: decided,
    undecidedRequestSteps: undecided,
    metrics: {
      meanAcceptedTokens: perRequestStep(accepted),
      meanAcceptanceLength: perRequestStep(emitted),
      draftUtilisation: verifiedDraft > 0 ? accepted / verifiedDraft : 0,
      acceptancePerPosition: Array.from({ length: positions }, (_, p) => perRequestStep(reached[p] ?? 0)),
      verifiedTokensPerStep: decidedSteps > 0 ? verifiedTokens / decidedSteps : 0,
    },
  };
}
