// The ECHO unified elastic budget scheduler (paper §3.3, docs/echo.md), shared by `echo`,
// `dense`, `fixed` and `ddd`. The whole batch is one Super-Tree under the cap
// Σ_i (1 + K_i) ≤ K_max, built depth by depth:
//
//   budget     every request starts with a base share (its base shape, cut to an even share of
//              K_max); whatever the shares leave of K_max is free in a shared pool.
//   gate       at a gated depth d, after layer d is drafted: pass iff c_{i,d} > τ_d. A request
//              that fails is *truncated at d*: layer d is not granted, it stops deepening, and
//              the unspent rest of its share goes to the pool (released budget).
//   priority 1 (global depth extension) the requests still deepening take layer d in order of
//              confidence, highest first: base nodes from their own share, and past their base
//              tree one node per layer paid from the pool (released budget first, so the grant
//              records whose release paid it), up to the max depth, while the pool lasts.
//   priority 2 (opportunistic width expansion) only when nothing can deepen: the pool widens
//              truncated requests at their truncation depth with their best remaining candidates,
//              highest path score first across the batch, at most maxWidth children per node.
//
// "Confidence" and "path score" are read in the rules' signal (`path-prob`, the paper's, or
// `path-margin`; see ConfidenceSignal).
//
// Under low load the pool is large, so a truncated request's release comes back to it as width;
// under high load the shares fill K_max and a release is what lets confident requests deepen.
//
// draft price (optional) every layer costs one draft forward for the whole batch. Before drafting
//              layer d the scheduler asks whether it can pay for that forward: each request still
//              deepening can add at most the chance that its layer d − 1 is accepted, as the
//              calibration measured it at that layer's confidence. If not, nobody drafts layer d
//              and the requests widen layer d − 1 instead (priority 2), as a truncation would.
import type { ConfidenceSignal, TreeShape } from '../../shared/config';
import type { DeepeningStopReason, GateCheck, GrantKind } from '../../shared/events';
import { acceptanceAt, type AcceptanceTable } from '../calibrate/acceptance';
import { layerConfidence, nodeScore } from '../draft/confidence';
import { ROOT, stepScore, type DraftTree } from '../tree';
import { draftAllowance, fairShares, scaleShape, usefulLayers } from './budget';
import type { SpeculationPolicy, StepContext, StepRequest, VerifyCost } from './types';
import { Refusal } from '../refusal';

/** What a gate compares with its threshold. */
export type GateRule =
  /** ECHO: c_{i,d} = exp(max_j S_{i,d,j}) against τ_d, at the depths that have a τ (D_sig); S in the rules' signal. */
  | { signal: 'best-path'; taus: ReadonlyMap<number, number> }
  /** DDD: Σ over the layer's beam (its top-k by path score) of exp(S) against exp(logThreshold), every depth. */
  | { signal: 'beam-mass'; logThreshold: number };

export interface ElasticRules {
  /** Base tree shape: layers, children per node, draft tokens per request. */
  shape: TreeShape;
  /** Deepest number of layers a request may reach (≥ shape.depth). */
  maxDepth: number;
  /** Most children per node under width expansion. */
  maxWidth: number;
  gate: GateRule;
  /** Released budget may pay other requests' depth extension (ECHO); off for `ddd`. */
  reallocate: boolean;
  /** Priority 2 widens truncated requests (ECHO); off for `ddd`. */
  widen: boolean;
  /**
   * Optional price of verification (the T_ver fit of `profile-hw`): past `knee` packed tokens each
   * more token costs `gamma` of a one-token forward. With it, a node is granted only if its path
   * confidence, taken as its chance to be accepted, raises the step's expected output by more
   * than it raises the step's time; without it, the scheduler fills K_max.
   */
  cost?: VerifyCost;
  /** What path scores, gates and priorities read (default `path-prob`). */
  confidence?: ConfidenceSignal;
  /** Optional price of a draft forward: without it, every layer the budget allows is drafted. */
  draftPrice?: DraftPrice;
}

export interface DraftPrice {
  /** One draft forward (a layer, for the whole batch), as a share of the target's one-token forward. */
  forward: number;
  /** Measured acceptance by depth and layer confidence, in the rules' signal (the profile's). */
  acceptance: AcceptanceTable;
}

export type StopReason = DeepeningStopReason;

/** Per request, what the scheduler decided this step (also readable by tests and the studio). */
export interface RequestSchedule {
  /** Draft tokens of the base share (base shape cut to the fair share of K_max). */
  share: number;
  /** Base nodes per depth that the share buys. */
  quota: number[];
  stop: StopReason | null;
  /**
   * The layer the request widens instead of deepening: a failed gate's depth, or the last layer
   * drafted when the next did not pay its draft forward; -1 when neither.
   */
  truncatedAt: number;
}

interface Budget {
  /** null: free budget no request released (K_max beyond the shares). */
  from: string | null;
  tokens: number;
}

interface PlanState extends RequestSchedule {
  shareLeft: number;
  /**
   * Layers this request may draft: the max depth, and no layer it could not emit (accepting
   * layers 0 … L − 1 emits L tokens plus the bonus). Width within those layers stays useful: it
   * raises the chance that the last tokens are accepted.
   */
  depthCap: number;
  /** Nodes expanded for the layer being drafted. */
  expanded: number[];
  /** Nodes expanded for the layer it widens (see truncatedAt): width grows from their candidates. */
  truncationParents: number[];
}

interface Candidate {
  parent: number;
  rank: number;
  score: number;
}

/**
 * Base nodes per depth for a share: one node per layer first (depth before width), then the
 * remainder on the shallowest layers, at most topk per layer (the beam width).
 */
export function baseQuota(shape: TreeShape, share: number, maxDepth: number): number[] {
  if (share <= 0) return [];
  const scaled = scaleShape(shape, share);
  const layers = Math.min(scaled.depth, share, maxDepth);
  const quota = new Array<number>(layers).fill(1);
  let extra = share - layers;
  for (let d = 0; d < layers && extra > 0; d++) {
    const add = Math.min(extra, scaled.topk - quota[d]);
    quota[d] += add;
    extra -= add;
  }
  return quota;
}

export class ElasticScheduler implements SpeculationPolicy {
  readonly candidatesPerNode: number;
  readonly confidence: ConfidenceSignal;
  private plans: PlanState[] = [];
  private pool: Budget[] = [];
  /** This step so far: tokens granted for verification (roots included) and their expected output. */
  private verifiedSoFar = 0;
  private expectedOutput = 0;
  /** Draft forwards run so far this step, in target one-token forwards (with a draft price). */
  private draftSpent = 0;

  constructor(
    readonly name: string,
    readonly rules: ElasticRules,
  ) {
    if (rules.maxDepth < 1) throw new Refusal(`${name}: max depth must be at least 1, got ${rules.maxDepth}`);
    if (rules.maxWidth < 1) throw new Refusal(`${name}: max width must be at least 1, got ${rules.maxWidth}`);
    this.confidence = rules.confidence ?? 'path-prob';
    // The margin compares every candidate with the parent's runner-up, so it needs one.
    this.candidatesPerNode = Math.max(rules.shape.topk, rules.maxWidth, this.confidence === 'path-margin' ? 2 : 1);
  }

  /** This step's decisions per request, by batch index. */
  schedules(): readonly RequestSchedule[] {
    return this.plans;
  }

  /** Budget left in the pool (not yet granted to any node). */
  poolTokens(): number {
    return this.pool.reduce((sum, b) => sum + b.tokens, 0);
  }

  begin(ctx: StepContext): void {
    // With reallocation, the tokens of K_max that do not split evenly stay in the pool: Priority 1
    // then hands them to the most confident requests instead of the first ones in the batch (at
    // high load, with fewer draft tokens than requests, that remainder is the whole draft budget).
    const fair = fairShares(ctx.kmax, ctx.requests.length, !this.rules.reallocate);
    const { shape, maxDepth } = this.rules;
    this.pool = [];
    this.verifiedSoFar = ctx.requests.length;
    this.expectedOutput = ctx.requests.length; // each root emits at least its bonus token
    this.draftSpent = this.rules.draftPrice?.forward ?? 0; // the root layer is always drafted
    let free = ctx.kmax - ctx.requests.length;
    this.plans = ctx.requests.map((r, i) => {
      const depthCap = Math.min(maxDepth, usefulLayers(r.remaining));
      const quota = baseQuota(shape, draftAllowance(shape.tokens, fair[i]), depthCap);
      const share = quota.reduce((a, b) => a + b, 0);
      free -= share;
      return { share, quota, stop: null, truncatedAt: -1, shareLeft: share, depthCap, expanded: [], truncationParents: [] };
    });
    if (free > 0) this.pool.push({ from: null, tokens: free });
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    // When not even a node sure to be accepted would pay for drafting and verifying it, this
    // layer could only cost time: nobody drafts it.
    const worthDrafting = this.worthDrafting();
    const paysItsForward = this.layerPaysItsForward(depth, ctx);
    for (const [i, plan] of this.plans.entries()) {
      if (plan.stop === null) {
        if (depth >= plan.depthCap) this.stop(plan, ctx.requests[i], 'max-depth', depth);
        else if (!worthDrafting) this.stop(plan, ctx.requests[i], 'not-worth-its-cost', depth);
        else if (!paysItsForward) this.widenInstead(plan, ctx.requests[i], 'not-worth-its-cost', depth, depth - 1);
      }
      plan.expanded = [];
    }
    // A request past its base tree lives on the pool; draft it only if the pool, or what this
    // depth's gates may release into it, can pay for one more layer.
    const gated = this.gateAt(depth) !== undefined;
    let reachable = this.poolTokens();
    if (gated && this.rules.reallocate) for (const p of this.plans) if (p.stop === null) reachable += p.shareLeft;
    const frontiers = ctx.requests.map((r, i) => {
      const plan = this.plans[i];
      if (plan.stop !== null) return [];
      const need = this.wanted(plan, depth);
      const pastBase = depth >= plan.quota.length;
      if (need === 0 || (pastBase && plan.shareLeft === 0 && reachable === 0)) return this.stop(plan, r, 'no-budget', depth);
      if (depth === 0) {
        plan.expanded = [ROOT];
      } else {
        // The best `need` parents hold the best `need` children; at a gate, the whole beam, so a
        // truncation has candidates to widen with. The beam is at most topk wide.
        const parents = grantedAt(r.tree, depth - 1, this.confidence);
        const beam = Math.min(parents.length, this.rules.shape.topk);
        plan.expanded = parents.slice(0, gated ? beam : Math.min(beam, need));
        if (plan.expanded.length === 0) return this.stop(plan, r, 'no-candidates', depth);
      }
      return plan.expanded;
    });
    if (depth > 0 && this.rules.draftPrice && frontiers.some((f) => f.length > 0)) this.draftSpent += this.rules.draftPrice.forward;
    return frontiers;
  }

  grow(depth: number, ctx: StepContext): void {
    const drafted = ctx.requests.filter((r) => this.plans[r.index].expanded.length > 0);
    // Gates first, so what a truncated request releases at depth d can already pay for depth d.
    const deepening: { r: StepRequest; confidence: number; candidates: Candidate[] }[] = [];
    for (const r of drafted) {
      const plan = this.plans[r.index];
      const candidates = layerCandidates(r.tree, plan.expanded, this.rules.shape.topk, this.confidence);
      if (candidates.length === 0) {
        this.stop(plan, r, 'no-candidates', depth);
        continue;
      }
      const confidence = Math.exp(candidates[0].score);
      const gate = this.checkGate(depth, candidates);
      if (gate) {
        (r.gates as GateCheck[]).push(gate);
        if (!gate.pass) {
          this.widenInstead(plan, r, 'truncated', depth, depth);
          continue;
        }
      }
      deepening.push({ r, confidence, candidates });
    }
    // Priority 1: highest confidence first while the budget lasts.
    deepening.sort((a, b) => b.confidence - a.confidence || a.r.index - b.r.index);
    for (const { r, candidates } of deepening) {
      const plan = this.plans[r.index];
      const want = Math.min(this.wanted(plan, depth), candidates.length);
      let grantedHere = 0;
      let tooCostly = false;
      for (const c of candidates.slice(0, want)) {
        if (!this.paysForItself(c.score)) {
          tooCostly = true;
          break;
        }
        let kind: GrantKind = 'base';
        let paidBy: string | undefined;
        if (plan.shareLeft > 0) {
          plan.shareLeft--;
          if (depth >= plan.quota.length) kind = 'depth';
        } else {
          const payer = this.takeFromPool();
          if (payer === undefined) break;
          kind = 'depth';
          if (payer !== null && payer !== r.id) {
            paidBy = payer;
            recordTransfer(ctx, payer, r.id);
          }
        }
        r.tree.addChild(c.parent, c.rank, kind, paidBy);
        this.count(c.score);
        grantedHere++;
      }
      if (grantedHere === 0) this.stop(plan, r, tooCostly ? 'not-worth-its-cost' : 'no-budget', depth);
    }
  }

  select(ctx: StepContext): void {
    if (this.rules.widen) this.widen(ctx);
    for (const r of ctx.requests) {
      for (let id = 1; id < r.tree.size; id++) r.tree.verify(id);
    }
  }

  /**
   * Priority 2: the pool widens truncated requests (and those the draft price stopped) at the
   * layer they stopped at, best path score first.
   */
  private widen(ctx: StepContext): void {
    const offers: { r: StepRequest; c: Candidate }[] = [];
    for (const r of ctx.requests) {
      const plan = this.plans[r.index];
      if (plan.truncatedAt < 0) continue;
      for (const c of layerCandidates(r.tree, plan.truncationParents, this.rules.maxWidth, this.confidence)) offers.push({ r, c });
    }
    offers.sort((a, b) => b.c.score - a.c.score || a.r.index - b.r.index || a.c.parent - b.c.parent || a.c.rank - b.c.rank);
    for (const { r, c } of offers) {
      const plan = this.plans[r.index];
      // Offers come best first: once one does not pay for itself, none after it does.
      if (!this.paysForItself(c.score)) return;
      if (this.takeFromPool() === undefined) return;
      r.tree.addChild(c.parent, c.rank, 'width');
      this.count(c.score);
    }
  }

  /**
   * Under a verification cost: does one more node, accepted with probability p, raise expected
   * output per unit of step time, also paying `extraCost` (in one-token forwards)? Below the knee
   * verifying a token costs nothing extra. Throughput O/T rises iff
   * (O + p) / O > (T(K + 1) + extra) / T(K), with T(K) = 1 + γ·max(0, K − knee) plus, under a
   * draft price, the draft forwards run so far (stepTime).
   */
  private pays(p: number, extraCost = 0): boolean {
    if (!this.rules.cost) return true;
    const k = this.verifiedSoFar;
    return (this.expectedOutput + p) / this.expectedOutput > (this.stepTime(k + 1) + extraCost) / this.stepTime(k);
  }

  /** Step time so far with k tokens verified, in target one-token forwards: verification and draft forwards. */
  private stepTime(k: number): number {
    const cost = this.rules.cost;
    return 1 + (cost ? cost.gamma * Math.max(0, k - cost.knee) : 0) + this.draftSpent;
  }

  /**
   * Under a draft price: does drafting layer `depth` pay for its forward? A request can gain from
   * it at most the chance that its layer depth − 1 is accepted (the measured rate at that layer's
   * confidence), and only as many requests as there are tokens left can be granted a node there.
   * The root layer is always drafted.
   */
  private layerPaysItsForward(depth: number, ctx: StepContext): boolean {
    const price = this.rules.draftPrice;
    if (!price || depth === 0) return true;
    const chances: number[] = [];
    let tokens = this.poolTokens();
    for (const [i, plan] of this.plans.entries()) {
      if (plan.stop !== null || depth >= plan.depthCap) continue;
      tokens += plan.shareLeft;
      chances.push(acceptanceAt(price.acceptance, depth - 1, layerConfidence(ctx.requests[i].tree, depth - 1, this.confidence)));
    }
    // Nothing to decide here: the budget (or the depth cap) stops them anyway.
    if (chances.length === 0 || tokens === 0) return true;
    chances.sort((a, b) => b - a);
    let gain = 0;
    for (const chance of chances.slice(0, tokens)) gain += chance;
    const time = this.stepTime(this.verifiedSoFar);
    return (this.expectedOutput + gain) / this.expectedOutput > (time + price.forward) / time;
  }

  /** A node of this path score pays for its verification. */
  private paysForItself(pathScore: number): boolean {
    return this.pays(Math.exp(pathScore));
  }

  /** A node sure to be accepted would pay for its draft row and its verification. */
  private worthDrafting(): boolean {
    return this.pays(1, this.rules.cost?.draftRow ?? 0);
  }

  private count(pathScore: number): void {
    this.verifiedSoFar++;
    this.expectedOutput += Math.exp(pathScore);
  }

  /**
   * Nodes this request would take at `depth`: its base quota, else one node of extension. Only
   * asked below its depth cap (frontier stops it there first).
   */
  private wanted(plan: PlanState, depth: number): number {
    return depth < plan.quota.length ? plan.quota[depth] : 1;
  }

  private gateAt(depth: number): number | undefined {
    const gate = this.rules.gate;
    return gate.signal === 'best-path' ? gate.taus.get(depth) : Math.exp(gate.logThreshold);
  }

  private checkGate(depth: number, candidates: Candidate[]): GateCheck | null {
    const tau = this.gateAt(depth);
    if (tau === undefined) return null;
    let confidence: number;
    if (this.rules.gate.signal === 'best-path') {
      confidence = Math.exp(candidates[0].score);
    } else {
      confidence = 0;
      for (const c of candidates.slice(0, this.rules.shape.topk)) confidence += Math.exp(c.score);
    }
    return { depth, confidence, tau, pass: confidence > tau };
  }

  /** One token from the pool: released budget first (oldest release first), then free budget. */
  private takeFromPool(): string | null | undefined {
    const released = this.pool.find((b) => b.from !== null && b.tokens > 0);
    const budget = released ?? this.pool.find((b) => b.tokens > 0);
    if (!budget) return undefined;
    budget.tokens--;
    return budget.from;
  }

  /**
   * Stops deepening at layer `depth` and marks layer `widenAt` for width (priority 2), from the
   * parents expanded for it.
   */
  private widenInstead(plan: PlanState, r: StepRequest, reason: StopReason, depth: number, widenAt: number): void {
    plan.truncatedAt = widenAt;
    plan.truncationParents = plan.expanded;
    this.stop(plan, r, reason, depth);
  }

  /** Stops deepening the request: `depth` is the first layer it does not deepen into. */
  private stop(plan: PlanState, r: StepRequest, reason: StopReason, depth: number): never[] {
    if (plan.stop === null) {
      plan.stop = reason;
      r.stop = { reason, depth };
      if (plan.shareLeft > 0 && this.rules.reallocate) this.pool.push({ from: r.id, tokens: plan.shareLeft });
      plan.shareLeft = 0;
    }
    plan.expanded = [];
    return [];
  }
}

/** Granted nodes at a depth, best path score first. */
function grantedAt(tree: DraftTree, depth: number, signal: ConfidenceSignal): number[] {
  return tree
    .nodesAtDepth(depth)
    .slice()
    .sort((a, b) => nodeScore(tree, b, signal) - nodeScore(tree, a, signal) || a - b);
}

/** Candidates of the expanded nodes not yet in the tree, at most `perNode` ranks each, best first. */
function layerCandidates(tree: DraftTree, expanded: readonly number[], perNode: number, signal: ConfidenceSignal): Candidate[] {
  const out: Candidate[] = [];
  for (const parent of expanded) {
    const cands = tree.candidates[parent];
    if (!cands) continue;
    const n = Math.min(perNode, cands.tokens.length);
    const parentScore = nodeScore(tree, parent, signal);
    for (let rank = 0; rank < n; rank++) {
      if (cands.childId[rank] !== -1) continue;
      out.push({ parent, rank, score: parentScore + stepScore(cands.logq, rank, signal) });
    }
  }
  return out.sort((a, b) => b.score - a.score || a.parent - b.parent || a.rank - b.rank);
}

function recordTransfer(ctx: StepContext, from: string, to: string): void {
  const existing = ctx.transfers.find((t) => t.from === from && t.to === to);
  if (existing) existing.tokens++;
  else ctx.transfers.push({ from, to, tokens: 1 });
}
