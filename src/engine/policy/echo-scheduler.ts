// The ECHO unified elastic budget scheduler (paper §3.3, docs/echo.md), shared by `echo`,
// `dense`, `fixed` and `ddd`. The whole batch is one Super-Tree under the cap
// Σ_i (1 + K_i) ≤ K_max. A step drafts first and grants after:
//
//   draft      depth by depth, one batched draft forward per layer. Each request expands only the
//              nodes whose children could still be granted (within its own share, or within the
//              batch's K_max − B best nodes so far), at most top-k of them per layer.
//   gate       at a gated depth d, after layer d is drafted: pass iff c_{i,d} > τ_d. A request
//              that fails is *truncated at d*: it stops deepening, none of its nodes at depth ≥ d
//              can be granted as depth, and what its share cannot spend above d is released.
//   value      every drafted node gets the chance it is accepted: its parent's, times the measured
//              chance the target takes it once it took the parent, by its rank and its own draft
//              confidence (calibrate/child-acceptance.ts: the warm-up's samples, then every
//              verified step's).
//   priority 1 (global depth extension) the drafted nodes of the whole batch are granted best
//              first by that value: a request's own share first (`base`), then the pool (budget
//              released by truncated requests first, which records who paid, then K_max beyond
//              the shares: `depth`). Truncated requests spend only their own share, above d.
//   priority 2 (opportunistic width expansion) after priority 1: what is left of the pool widens
//              truncated requests at their truncation depth, best value first across the batch,
//              at most maxWidth children per node (`width`).
//   price      on a clock past its knee, a node enters only when its value raises the step's
//              expected output by more than it raises the step's time (its verification, and
//              the draft forwards run so far); a layer is drafted only when what it could add
//              pays for its forward; the root layer only when a token could pay at all, so a
//              step where nothing pays decodes as `ar` does.
//   drain      once no request waits to join, the run ends with its slowest request: each
//              request's root (so its every node) is worth its steps left over the batch's most.
//
// Best first is what a static best-first tree (`static`, EAGLE-2's rerank) does per request; doing
// it over the whole batch, by measured acceptance, is what lets the budget flow to where it buys
// most, and the gates are what keep low-confidence depth from taking it.
import type { ConfidenceSignal, TreeShape } from '../../shared/config.js';
import type { DeepeningStopReason, GateCheck, GrantKind } from '../../shared/events.js';
import { acceptanceAt, type AcceptanceTable } from '../calibrate/acceptance.js';
import { ChildAcceptance, stepConfidence, type ChildCounts } from '../calibrate/child-acceptance.js';
import { nodeScore } from '../draft/confidence.js';
import { ROOT, stepScore, type Candidates, type DraftTree } from '../tree.js';
import { draftAllowance, fairShares, usefulLayers } from './budget.js';
import type { SpeculationPolicy, StepContext, StepRequest, VerifyCost } from './types.js';
import { stepPrice, type PriceAtPast, type StepPrice } from './step-price.js';
import { Refusal } from '../refusal.js';

/** What a gate compares with its threshold. */
export type GateRule =
  /** ECHO: c_{i,d} = exp(max_j S_{i,d,j}) against τ_d, at the depths that have a τ (D_sig); S in the rules' signal. */
  | { signal: 'best-path'; taus: ReadonlyMap<number, number> }
  /** DDD: Σ over the layer's beam (its top-k by path score) of exp(S) against exp(logThreshold), every depth. */
  | { signal: 'beam-mass'; logThreshold: number };

export interface ElasticRules {
  /** Base tree shape: its tokens cap a request's share, its top-k the children drafted per node. */
  shape: TreeShape;
  /** Deepest number of layers a request may reach (≥ shape.depth). */
  maxDepth: number;
  /** Most children per node under width expansion. */
  maxWidth: number;
  gate: GateRule;
  /** Released budget may pay other requests' depth extension, and tokens weigh by steps left once none wait (ECHO); off for `ddd`. */
  reallocate: boolean;
  /** Priority 2 widens truncated requests (ECHO); off for `ddd`. */
  widen: boolean;
  /**
   * A failed gate truncates only when what the cut frees buys more than the request's layer
   * (applyGates); off for `ddd` (its published rule) and in tests of the bare truncation rules.
   */
  priceCuts: boolean;
  /**
   * Price of verification (the T_ver fit of the clock in use): past `knee` packed tokens each
   * more token costs `gamma` of a one-token forward, and each drafted row `draftRow`; or the
   * measured forward times themselves (`curves`, step-price.ts). With it, a node is granted only
   * if its value raises the step's expected output by more than it raises the step's time;
   * without it, the scheduler fills K_max.
   */
  cost?: VerifyCost;
  /** What path scores, gates and priorities read (default `path-prob`). */
  confidence?: ConfidenceSignal;
  /** Price of a draft forward: without it, every layer the budget can reach is drafted. */
  draftPrice?: DraftPrice;
  /**
   * Measured acceptance by depth and layer confidence, in the rules' signal (a calibration's):
   * what a node is worth. Without it, its path confidence.
   */
  acceptance?: AcceptanceTable;
  /**
   * What a node is worth, given: how often a node is accepted once its parent is, by its rank and
   * its own confidence, from these samples (a calibration's warm-up) and from every step this
   * policy verifies. Without it, the layer's measured continuation above (or the path confidence).
   */
  childAcceptance?: ChildCounts;
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
  /** Draft tokens of the base share (the base shape's tokens cut to the fair share of K_max). */
  share: number;
  /** Draft nodes granted this step (verified), by any priority. */
  granted: number;
  stop: StopReason | null;
  /** The depth whose gate truncated the request (it widens there under priority 2); -1 when none. */
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
  /** Best score among the drafted nodes of each depth (index = depth). */
  bestScore: number[];
  /** Each node's value, by node id: the root's is the request's weight (drainWeights), as it always emits a token. */
  value: number[];
  /** Why granting stopped short of the drafted tree, when it did (priority 1). */
  grantStop: StopReason | null;
}

/** A step that drafted: its index, the requests that drafted and their drafted nodes' values. */
interface DraftedStep {
  step: number;
  requests: number;
  /** Best first. */
  values: Float64Array;
}

/** Steps that drafted whose node values judge whether the next root layer pays (rootLayerVerdict). */
export const DRAFTED_STEPS = 4;
/**
 * Steps without drafting after which the record is stale and the calibration's bound decides
 * again; each drafted step that verified no draft token doubles the wait, up to
 * MAX_REFRESH_STEPS, and one that verified some resets it.
 */
export const REFRESH_STEPS = 16;
export const MAX_REFRESH_STEPS = 8 * REFRESH_STEPS;
/** Requests a probe drafts (probeSet): a root layer judged by the calibration's bound alone. */
export const PROBE_REQUESTS = 4;
/** Steps at the batch's mean tokens per step that a request's own record is smoothed with (drainWeights). */
export const DRAIN_PRIOR_STEPS = 2;

/** The batch's best drafted nodes (reach): what the next layer must beat. */
interface Reach {
  /** The (K_max − B)-th best value: a node must beat it for a child of it to be granted. */
  bar: number;
  /** Per request: its own grantable nodes' values, best first. */
  own: Float64Array[];
  /** Σ of the best K_max − B values: the expected accepted draft tokens of the best tree. */
  expected: number;
  count: number;
  /** The best K_max − B values, best first. */
  best: Float64Array;
}

interface Offer {
  index: number;
  parent: number;
  rank: number;
  /** The node, when it was drafted into the tree; -1 for a candidate not yet in it. */
  id: number;
  value: number;
  depth: number;
}

/**
 * How the chance that a parent's top candidate is not taken splits among its runner-ups: the
 * r-th runner-up takes (1 − ρ)·ρ^(r − 1) of it, ρ = 0.35 (static's per-rank prior decay).
 */
export const RUNNER_UP_DECAY = 0.35;

export class ElasticScheduler implements SpeculationPolicy {
  readonly candidatesPerNode: number;
  readonly confidence: ConfidenceSignal;
  private plans: PlanState[] = [];
  private pool: Budget[] = [];
  /** K_max − B: the draft tokens the whole batch may verify. */
  private draftBudget = 0;
  /** This step so far: tokens granted for verification (roots included) and their expected output. */
  private verifiedSoFar = 0;
  private expectedOutput = 0;
  /** Draft forwards run so far this step, in target one-token forwards (under a price). */
  private draftSpent = 0;
  /** Grants still owed to a count of offers that pays as a whole though its first does not pay alone (pays). */
  private committed = 0;
  /** The measured conditional acceptance, learning from every verified step (rules.childAcceptance). */
  readonly children: ChildAcceptance | null;
  /** This step's takeChances, by a parent's candidates (cleared each step: the model learns between steps). */
  private chancesByParent = new WeakMap<Candidates, { chances: number[]; total: number }>();
  /** What verification and draft forwards cost (rules.cost, rules.draftPrice), by the step's past. */
  private readonly prices: PriceAtPast;
  /** This step's price: at its longest past. */
  private price: StepPrice;
  /** This step's verification price by tokens (NaN until read): a step reads it at every layer and grant, on a curve each read interpolates. */
  private verifyMemo = new Float64Array(0);
  /** Requests in this step: a measured curve prices a forward by them as well as by its rows. */
  private requestCount = 0;
  /** The drafted nodes' values of the last few steps that drafted, newest last (rootLayerVerdict). */
  private drafted: DraftedStep[] = [];
  /** Steps the record stays fresh (REFRESH_STEPS, backed off while drafted steps verify nothing). */
  private refreshAfter = REFRESH_STEPS;
  /** What n tokens of those steps are worth (recentlyDrafted), sorted once per record and request count. */
  private draftedWorth: { each: number; worth: (n: number) => number } | null = null;
  /** reach() until the values or the truncations change (grow, applyGates): a step reads it at every layer and again to grant. */
  private reachMemo: Reach | null = null;
  /** Σ of this step's roots' values: the output of a step that verifies only its roots. */
  private rootsWorth = 0;
  /** Per request in flight: the steps it took part in, the tokens it emitted in them (drainWeights) and the last step it was in. */
  private progress = new Map<string, { steps: number; emitted: number; step: number }>();

  constructor(
    readonly name: string,
    readonly rules: ElasticRules,
  ) {
    if (rules.maxDepth < 1) throw new Refusal(`${name}: max depth must be at least 1, got ${rules.maxDepth}`);
    if (rules.maxWidth < 1) throw new Refusal(`${name}: max width must be at least 1, got ${rules.maxWidth}`);
    this.confidence = rules.confidence ?? 'path-prob';
    this.children = rules.childAcceptance ? new ChildAcceptance(this.confidence, rules.childAcceptance) : null;
    this.prices = stepPrice(rules.cost, rules.draftPrice?.forward ?? 0);
    this.price = this.prices(undefined);
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
    this.chancesByParent = new WeakMap();
    // With reallocation, the tokens of K_max that do not split evenly stay in the pool: priority 1
    // then hands them to the best nodes of the batch instead of the first requests in it (at high
    // load, with fewer draft tokens than requests, that remainder is the whole draft budget).
    const fair = fairShares(ctx.kmax, ctx.requests.length, !this.rules.reallocate);
    this.pool = [];
    this.draftBudget = ctx.kmax - ctx.requests.length;
    this.verifiedSoFar = ctx.requests.length;
    const weights = this.drainWeights(ctx);
    this.rootsWorth = weights.reduce((a, b) => a + b, 0);
    this.expectedOutput = this.rootsWorth; // each root emits at least its bonus token
    this.draftSpent = 0;
    this.requestCount = ctx.requests.length;
    this.price = this.prices(ctx.past);
    this.verifyMemo = new Float64Array(ctx.kmax + 2).fill(NaN);
    this.reachMemo = null;
    let free = this.draftBudget;
    this.plans = ctx.requests.map((r, i) => {
      const depthCap = Math.min(this.rules.maxDepth, usefulLayers(r.remaining));
      const share = depthCap > 0 ? draftAllowance(this.rules.shape.tokens, fair[i]) : 0;
      free -= share;
      return { share, granted: 0, stop: null, truncatedAt: -1, shareLeft: share, depthCap, expanded: [], bestScore: [], value: [weights[i]], grantStop: null };
    });
    if (free > 0) this.pool.push({ from: null, tokens: free });
  }

  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    for (const plan of this.plans) plan.expanded = [];
    if (depth === 0) {
      // When not even the best the root layer could buy pays for it, this step decodes plainly.
      const verdict = this.rootLayerVerdict(ctx);
      const probed = verdict === 'probe' ? this.probeSet(ctx) : null;
      const frontiers = ctx.requests.map((r, i) => {
        const plan = this.plans[i];
        if (plan.depthCap <= 0) return this.stop(plan, r, 'max-depth', 0);
        if (verdict === 'plain') return this.stop(plan, r, 'not-worth-its-cost', 0);
        if (probed !== null && !probed.has(i)) return this.stop(plan, r, 'not-probed', 0);
        plan.expanded = [ROOT];
        return plan.expanded;
      });
      // Under a price the step's time counts the root layer's forward too: its grants are weighed
      // against the whole step.
      if (verdict !== 'plain' && this.priced) this.draftSpent += this.rootForward(ctx, (i) => this.plans[i].expanded.length > 0);
      return frontiers;
    }
    const reach = this.reach(ctx);
    this.expandReachable(depth, ctx, reach, this.breakEven(reach));
    const rows = this.plans.reduce((n, p) => n + p.expanded.length, 0);
    const drafting = this.plans.filter((p) => p.expanded.length > 0).length;
    if (rows > 0 && !this.layerPaysItsForward(ctx, reach, rows, drafting, depth)) {
      for (const [i, plan] of this.plans.entries()) if (plan.expanded.length > 0) this.stop(plan, ctx.requests[i], 'not-worth-its-cost', depth);
      return this.plans.map(() => []);
    }
    if (rows > 0) this.draftSpent += this.forwardCost(rows, drafting, depth);
    return this.plans.map((p) => p.expanded);
  }

  /**
   * Which nodes of layer depth − 1 are expanded (each is a row of the layer's draft forward): a
   * node only when a child of it could still be granted, that is beat the batch's (K_max − B)-th
   * best value or its request's share-th best. A child keeps at most the value model's ceiling of
   * its parent's value. The batch's parents are taken best first, and each one expanded is expected
   * to add its top-k children, each worth its value times the measured rate of its rank: that
   * raises the bar for the parents after it, so that a layer does not expand every node while
   * fewer than the budget's nodes are drafted (at batch 1 on the demo pair, ECHO drafted 9.6 rows
   * at depth 1 where static drafted 2). At a gate too: expanding the whole beam there (for width to widen with)
   * cost more drafting than the width bought (math, h100:70b, batch 64: 9× static's rows). The best
   * parent is always expanded at a gate, so the gate has a layer to read. Under a price, a node
   * whose children could not pay for their verification (`floor`) is not expanded at all: priced
   * by its measured curve at batch 1 on the demo pair, ECHO granted 6 tokens a step and drafted
   * rows for 15, a quarter of its step in drafting.
   */
  private expandReachable(depth: number, ctx: StepContext, reach: Reach, floor: number): void {
    const gated = this.gateAt(depth) !== undefined;
    const beam = this.rules.shape.topk;
    const ceiling = this.children ? this.children.ceiling() : 1;
    const expected = this.children ? this.children.expectedChances(beam) : [];
    const batchBest = new BestValues(this.draftBudget, reach.best);
    const ownBest = this.plans.map((plan, i) => new BestValues(plan.share, reach.own[i]));
    const parents: { index: number; id: number; value: number }[] = [];
    for (const [i, plan] of this.plans.entries()) {
      if (plan.stop !== null) continue;
      if (depth >= plan.depthCap) {
        this.stop(plan, ctx.requests[i], 'max-depth', depth);
        continue;
      }
      const tree = ctx.requests[i].tree;
      // A node holding an end-of-sequence token has no child worth drafting (the driver drops it),
      // so its expected children must not raise the bar for the parents after it.
      for (const id of tree.nodesAtDepth(depth - 1)) if (!ctx.ends?.has(tree.token[id])) parents.push({ index: i, id, value: plan.value[id] });
    }
    parents.sort((a, b) => b.value - a.value || a.index - b.index || a.id - b.id);
    // Requests with a parent whose children could not pay for themselves: stopped by the price.
    const unpaid = new Set<number>();
    for (const { index, id, value } of parents) {
      const plan = this.plans[index];
      if (plan.expanded.length >= beam) continue;
      const child = value * ceiling;
      if (!(child > floor)) {
        unpaid.add(index);
        continue;
      }
      if (!(gated && plan.expanded.length === 0) && !(child > batchBest.bar()) && !(child > ownBest[index].bar())) continue;
      plan.expanded.push(id);
      for (const chance of expected) {
        batchBest.add(value * chance);
        ownBest[index].add(value * chance);
      }
    }
    for (const [i, plan] of this.plans.entries()) {
      if (plan.stop === null && plan.expanded.length === 0) this.stop(plan, ctx.requests[i], unpaid.has(i) ? 'not-worth-its-cost' : 'no-budget', depth);
    }
  }

  grow(depth: number, ctx: StepContext): void {
    // With a value model every candidate's worth is known before it enters the tree (without one it
    // reads the layer's best score, known only after), and a beam-mass gate sums the layer's nodes.
    const bars = this.children && this.rules.gate.signal === 'best-path' ? this.candidateBars(depth, ctx, this.reach(ctx)) : null;
    this.reachMemo = null;
    const topk = this.rules.shape.topk;
    const layers: { r: StepRequest; added: number[] }[] = [];
    for (const r of ctx.requests) {
      const plan = this.plans[r.index];
      const parents = plan.expanded;
      if (parents.length === 0) continue;
      plan.expanded = [];
      const added: number[] = [];
      for (const parent of parents) {
        const cands = r.tree.candidates[parent];
        if (!cands) continue;
        for (let rank = 0; rank < Math.min(topk, cands.tokens.length); rank++) {
          // A candidate that could never be granted stays a candidate (width can still add it).
          const value = bars ? this.childValue(plan, r.tree, parent, rank, depth) : 0;
          if (bars && rank > 0 && value < bars[r.index]) continue;
          const id = r.tree.addChild(parent, rank);
          if (bars) plan.value[id] = value;
          added.push(id);
        }
      }
      if (added.length === 0) {
        this.stop(plan, r, 'no-candidates', depth);
        continue;
      }
      let best = -Infinity;
      for (const id of added) best = Math.max(best, nodeScore(r.tree, id, this.confidence));
      plan.bestScore[depth] = best;
      if (!bars) for (const parent of parents) this.valueChildren(plan, r.tree, parent, depth);
      layers.push({ r, added });
    }
    this.applyGates(depth, ctx, layers);
  }

  /**
   * Per request, the least a candidate of this layer must be worth to enter the tree: the batch's
   * (K_max − B)-th best value among the nodes drafted so far and every candidate of this layer,
   * or its own share-th best among its own, whichever is lower (−Infinity while fewer are at
   * hand). One below both is never granted by depth; it stays a candidate its parent can still be
   * widened with. At batch 4 on the demo pair every node ECHO verified was its parent's top
   * candidate, and the nine others of each expansion were only more nodes for every pass of the
   * step to walk.
   */
  private candidateBars(depth: number, ctx: StepContext, before: Reach): number[] {
    const topk = this.rules.shape.topk;
    // Every candidate's value, request after request (each request's a segment of one typed array):
    // replayed at batch 32, half of grow's time was these bars, most of it sorting boxed numbers.
    let candidates = 0;
    for (const [i, plan] of this.plans.entries()) {
      for (const parent of plan.expanded) candidates += Math.min(topk, ctx.requests[i].tree.candidates[parent]?.tokens.length ?? 0);
    }
    const layer = new Float64Array(candidates);
    let at = 0;
    const own = this.plans.map((plan, i) => {
      const tree = ctx.requests[i].tree;
      const start = at;
      for (const parent of plan.expanded) {
        const cands = tree.candidates[parent];
        if (!cands) continue;
        for (let rank = 0; rank < Math.min(topk, cands.tokens.length); rank++) layer[at++] = this.childValue(plan, tree, parent, rank, depth);
      }
      return nthBestWith(before.own[i].subarray(0, Math.max(0, plan.share)), layer.subarray(start, at), plan.share);
    });
    const batchBar = nthBestWith(before.best, layer, this.draftBudget);
    return own.map((bar) => Math.min(batchBar, bar));
  }

  /**
   * The gates at `depth`, if there is one: c_{i,d} > τ_d passes. A failed check truncates the
   * request only when the cut buys something. What a cut frees goes to the batch's marginal node:
   * the (K_max − B)-th best among the nodes drafted so far and the layers the requests that go on
   * deepening are still expected to add (each a chain below its best node, every layer keeping the
   * value model's chance for a top candidate, or all of it without a model). A request whose best
   * node at this layer is worth more than that keeps deepening, and its check is recorded as
   * waived. At batch 1 no other request can use what a cut frees, so nothing is cut: on the bundled
   * math prompts (h100:70b) the calibrated gates had cut 177 layers the target then accepted
   * against 29 it rejected, and echo ran at 0.93 × static.
   */
  private applyGates(depth: number, ctx: StepContext, layers: readonly { r: StepRequest; added: number[] }[]): void {
    const checks = layers.map(({ r, added }) => ({ r, added, gate: this.checkGate(depth, r.tree, added) }));
    if (this.rules.priceCuts && checks.some((c) => c.gate !== null && !c.gate.pass)) {
      const marginal = this.cutMarginal(ctx, depth, checks.filter((c) => c.gate === null || c.gate.pass).map((c) => c.r.index));
      for (const { r, added, gate } of checks) {
        if (gate === null || gate.pass) continue;
        const plan = this.plans[r.index];
        if (Math.max(...added.map((id) => plan.value[id])) > marginal) gate.waived = true;
      }
    }
    for (const { r, gate } of checks) {
      if (gate === null) continue;
      (r.gates as GateCheck[]).push(gate);
      if (!gate.pass && !gate.waived) {
        this.plans[r.index].truncatedAt = depth;
        this.reachMemo = null;
        this.stop(this.plans[r.index], r, 'truncated', depth);
      }
    }
  }

  /** The value a cut at `depth` would buy: see applyGates. `deepening`: the requests that go on. */
  private cutMarginal(ctx: StepContext, depth: number, deepening: readonly number[]): number {
    // Only the best K_max − B drafted values can set the (K_max − B)-th best: reach's.
    const reach = this.reach(ctx);
    const values = [...reach.best];
    let counted = 0;
    for (const [i, plan] of this.plans.entries()) {
      this.eachDrafted(plan, ctx.requests[i].tree, (_p, _r, _id, _v, d) => void (this.grantable(plan, d) && counted++));
    }
    const chance = this.children ? this.children.expectedChances(1)[0] : 1;
    for (const i of deepening) {
      const plan = this.plans[i];
      let value = 0;
      for (const id of ctx.requests[i].tree.nodesAtDepth(depth)) value = Math.max(value, plan.value[id]);
      for (let d = depth + 1; d < plan.depthCap && counted < 4 * this.draftBudget; d++, counted++) values.push((value *= chance));
    }
    values.sort((a, b) => b - a);
    return kthBest(values, this.draftBudget);
  }

  select(ctx: StepContext): void {
    // A step that drafted nothing decodes as `ar`: nothing to grant, widen or record, and no pass
    // over every request's plan for nothing (docs/echo.md, "What the scheduler costs on the wall").
    if (ctx.requests.every((r) => r.tree.size === 1)) return;
    this.grantByValue(ctx);
    if (this.rules.widen) this.widen(ctx);
    this.recordDrafted(ctx);
    for (const [i, plan] of this.plans.entries()) {
      const r = ctx.requests[i];
      let deepest = -1;
      for (let id = 1; id < r.tree.size; id++) {
        if (!r.tree.verified[id]) continue;
        plan.granted++;
        deepest = Math.max(deepest, r.tree.depth[id]);
      }
      // Drafted deeper than it was granted: the reason is the grant's, at the first layer it lacks.
      if (plan.grantStop !== null && plan.stop !== 'truncated' && r.stop && deepest + 1 < r.stop.depth) {
        plan.stop = plan.grantStop;
        r.stop = { reason: plan.grantStop, depth: deepest + 1 };
      }
    }
  }

  /**
   * Every verified node whose parent was accepted is a labelled sample of the value model; every
   * request's emitted tokens are its progress (drainWeights).
   */
  afterVerify(ctx: StepContext, accepted: ReadonlyArray<readonly number[]>): void {
    for (const r of ctx.requests) {
      let p = this.progress.get(r.id);
      if (!p) this.progress.set(r.id, (p = { steps: 0, emitted: 0, step: ctx.step }));
      p.steps++;
      p.emitted += Math.min(r.remaining, (accepted[r.index]?.length ?? 0) + 1);
      p.step = ctx.step;
      if (r.tree.size > 1) this.children?.observe(r.tree, accepted[r.index] ?? []);
    }
    // Requests that have left the batch are forgotten (updated in place: a plain step allocates nothing here).
    if (this.progress.size > ctx.requests.length) for (const [id, p] of this.progress) if (p.step !== ctx.step) this.progress.delete(id);
  }

  /**
   * What a token of each request is worth, relative to the others: 1 while requests wait to join
   * (a request that ends sooner frees its slot for one of them, so every token serves the run
   * alike). Once none wait, the run ends with the request that needs the most steps, and a token
   * of a request that will end well before it shortens nothing: each request's tokens weigh its
   * steps left (its remaining tokens over the tokens it has emitted per step, smoothed towards the
   * batch's mean by DRAIN_PRIOR_STEPS) over the most steps left in the batch. Moving budget
   * between requests so is reallocation: `ddd`, which keeps its published rule, weighs all alike.
   */
  private drainWeights(ctx: StepContext): number[] {
    if (ctx.waiting !== 0 || !this.rules.reallocate) return ctx.requests.map(() => 1);
    let steps = 0;
    let emitted = 0;
    for (const r of ctx.requests) {
      const p = this.progress.get(r.id);
      if (p) [steps, emitted] = [steps + p.steps, emitted + p.emitted];
    }
    const mean = steps > 0 ? emitted / steps : 1;
    const left = ctx.requests.map((r) => {
      const p = this.progress.get(r.id) ?? { steps: 0, emitted: 0 };
      return r.remaining / ((p.emitted + DRAIN_PRIOR_STEPS * mean) / (p.steps + DRAIN_PRIOR_STEPS));
    });
    const most = Math.max(...left);
    return ctx.requests.map((r, i) => (r.drainWeight = most > 0 ? left[i] / most : 1));
  }

  /**
   * Priority 1: every grantable drafted node of the batch, best value first. Values never rise
   * along a path and ties go to the shallower node, so a parent always comes before its children;
   * a node whose parent was not granted is skipped.
   */
  private grantByValue(ctx: StepContext): void {
    const nodes: Offer[] = [];
    const { bar } = this.reach(ctx);
    for (const [i, plan] of this.plans.entries()) {
      const tree = ctx.requests[i].tree;
      let spendable = 0;
      for (let id = 1; id < tree.size; id++) {
        if (!this.grantable(plan, tree.depth[id])) continue;
        // A truncated request keeps of its share only what its nodes above the cut would win
        // against the whole batch; the rest is released, for confident requests' depth.
        if (plan.truncatedAt < 0 || plan.value[id] > bar) spendable++;
        nodes.push({ index: i, parent: tree.parent[id], rank: tree.rank[id], id, value: plan.value[id], depth: tree.depth[id] });
      }
      // What the share cannot spend is released now, before anyone needs it.
      this.release(ctx.requests[i], plan, Math.max(0, plan.shareLeft - spendable));
    }
    nodes.sort(offerOrder);
    const deepest = this.plans.map(() => -1);
    this.committed = 0;
    for (const [at, node] of nodes.entries()) {
      const r = ctx.requests[node.index];
      const plan = this.plans[node.index];
      if (!r.tree.verified[node.parent]) continue;
      // Best first: once a node does not pay, with the ones after it, none after it does.
      if (!this.pays(nodes, at)) {
        for (const p of this.plans) p.grantStop ??= 'not-worth-its-cost';
        break;
      }
      let kind: GrantKind = 'base';
      let paidBy: string | undefined;
      if (plan.shareLeft > 0) {
        plan.shareLeft--;
      } else if (plan.truncatedAt >= 0 || node.depth <= deepest[node.index]) {
        // The pool pays for depth, and only a confident request's: width waits for priority 2.
        continue;
      } else {
        const payer = this.takeFromPool();
        if (payer === undefined) {
          plan.grantStop ??= 'no-budget';
          continue;
        }
        kind = 'depth';
        if (payer !== null && payer !== r.id) {
          paidBy = payer;
          recordTransfer(ctx, payer, r.id);
        }
      }
      r.tree.verify(node.id, kind, paidBy);
      this.count(node.value);
      deepest[node.index] = Math.max(deepest[node.index], node.depth);
    }
    // A truncated request's unspent share goes to the pool, for its own width or others'.
    for (const [i, plan] of this.plans.entries()) this.release(ctx.requests[i], plan, plan.shareLeft);
  }

  /** Can this node be granted under priority 1: above its request's truncation depth. */
  private grantable(plan: PlanState, depth: number): boolean {
    return plan.truncatedAt < 0 || depth < plan.truncatedAt;
  }

  /**
   * Priority 2: the pool widens truncated requests at the layer their gate cut, from their granted
   * nodes above it, best value first across the batch. Then, if the pool still holds budget, the
   * other requests' best drafted nodes that priority 1 left out (their share spent, and the pool
   * paying only for depth there).
   */
  private widen(ctx: StepContext): void {
    const offers: Offer[] = [];
    for (const [i, plan] of this.plans.entries()) {
      if (plan.truncatedAt < 0) continue;
      const tree = ctx.requests[i].tree;
      const depth = plan.truncatedAt;
      const parents = depth === 0 ? [ROOT] : tree.nodesAtDepth(depth - 1).filter((id) => tree.verified[id]);
      for (const parent of parents) {
        const cands = tree.candidates[parent];
        if (!cands) continue;
        for (let rank = 0; rank < Math.min(this.rules.maxWidth, cands.tokens.length); rank++) {
          const id = cands.childId[rank];
          if (id !== -1 && tree.verified[id]) continue;
          const value = id !== -1 ? plan.value[id] : this.childValue(plan, tree, parent, rank, depth);
          offers.push({ index: i, parent, rank, id, value, depth });
        }
      }
    }
    if (!this.grantWidth(ctx, offers)) return;
    // Below the knee a token left in the pool is given away: what remains widens the requests
    // that were not truncated too, best value first.
    const rest: Offer[] = [];
    for (const [i, plan] of this.plans.entries()) {
      if (plan.truncatedAt >= 0) continue;
      const tree = ctx.requests[i].tree;
      this.eachDrafted(plan, tree, (parent, rank, id, value, depth) => {
        if (id === -1 || !tree.verified[id]) rest.push({ index: i, parent, rank, id, value, depth });
      });
    }
    this.grantWidth(ctx, rest);
  }

  /** Grants offers from the pool, best value first, as width; false once the pool or the price stops it. */
  private grantWidth(ctx: StepContext, offers: Offer[]): boolean {
    offers.sort(offerOrder);
    this.committed = 0;
    for (const [at, offer] of offers.entries()) {
      const tree = ctx.requests[offer.index].tree;
      if (!tree.verified[offer.parent]) continue;
      // Offers come best first: once one does not pay, with the ones after it, none after it does.
      if (!this.pays(offers, at)) return false;
      if (this.takeFromPool() === undefined) return false;
      const id = offer.id !== -1 ? offer.id : tree.addChild(offer.parent, offer.rank);
      this.plans[offer.index].value[id] = offer.value;
      tree.verify(id, 'width');
      this.count(offer.value);
    }
    return true;
  }

  /**
   * Every candidate the draft gave this request's expanded nodes, whether grow let it into the tree
   * or left it a candidate (candidateBars): its parent, rank, node (-1 when not in the tree), value
   * and depth. What the step drafted, as the record, the width grants and the cut's count read it.
   */
  private eachDrafted(plan: PlanState, tree: DraftTree, visit: (parent: number, rank: number, id: number, value: number, depth: number) => void): void {
    const topk = this.rules.shape.topk;
    for (let parent = 0; parent < tree.size; parent++) {
      const cands = tree.candidates[parent];
      if (!cands) continue;
      const depth = tree.depth[parent] + 1;
      for (let rank = 0; rank < cands.childId.length; rank++) {
        const id = cands.childId[rank];
        if (id === -1 && rank >= topk) continue;
        visit(parent, rank, id, id !== -1 ? (plan.value[id] ?? 0) : this.childValue(plan, tree, parent, rank, depth), depth);
      }
    }
  }

  /** The values of a parent's drafted children (childValue). */
  private valueChildren(plan: PlanState, tree: DraftTree, parent: number, depth: number): void {
    const cands = tree.candidates[parent];
    if (!cands) return;
    for (let rank = 0; rank < cands.childId.length; rank++) {
      const id = cands.childId[rank];
      if (id !== -1) plan.value[id] = this.childValue(plan, tree, parent, rank, depth);
    }
  }

  /**
   * A node's value: the chance it is accepted. Its parent's, times the chance the target then
   * takes it. With the measured conditional acceptance (rules.childAcceptance), that chance is
   * read off the node's rank and its own confidence; only one of a parent's children can be
   * accepted, so where the estimates of its candidates sum past 1 they are scaled down to 1.
   * Without it, the earlier model: the layer's measured continuation for the top candidate (the
   * calibration's chance of reaching depth d at the layer's best confidence over that of reaching
   * d − 1), the rest shared by rank, each runner-up taking RUNNER_UP_DECAY of the one before; and
   * without a calibration at all, the draft's own probability (the path confidence).
   */
  private childValue(plan: PlanState, tree: DraftTree, parent: number, rank: number, depth: number): number {
    const cands = tree.candidates[parent]!;
    const parentValue = plan.value[parent] ?? 1;
    if (this.children) {
      const { chances, total } = this.takeChances(this.children, cands);
      return (parentValue * chances[rank]) / Math.max(1, total);
    }
    const table = this.rules.acceptance;
    let top: number;
    if (table) {
      const here = acceptanceAt(table, depth, Math.exp(plan.bestScore[depth] ?? 0));
      const above = depth === 0 ? 1 : acceptanceAt(table, depth - 1, Math.exp(plan.bestScore[depth - 1] ?? 0));
      top = Math.min(1, here / Math.max(above, 1e-9));
    } else {
      top = Math.exp(stepScore(cands.logq, 0, this.confidence));
    }
    if (rank === 0) return parentValue * top;
    if (!table) return parentValue * Math.exp(stepScore(cands.logq, rank, this.confidence));
    return parentValue * (1 - top) * (1 - RUNNER_UP_DECAY) * RUNNER_UP_DECAY ** (rank - 1);
  }

  /**
   * The value model's chance for each of a parent's candidates, and their sum: the same for every
   * child of that parent within a step (the model learns only after verification), so it is worked
   * out once per parent instead of once per child.
   */
  private takeChances(model: ChildAcceptance, cands: Candidates): { chances: number[]; total: number } {
    let known = this.chancesByParent.get(cands);
    if (!known) {
      const chances: number[] = [];
      let total = 0;
      for (let r = 0; r < cands.logq.length; r++) {
        chances.push(model.estimate(r, stepConfidence(cands.logq, r, this.confidence)));
        total += chances[r];
      }
      known = { chances, total };
      this.chancesByParent.set(cands, known);
    }
    return known;
  }

  /**
   * The drafted values a child must beat to be reachable: the batch's K_max − B best (the pool and
   * every share together) and their (K_max − B)-th, and per request its own. Also the expected
   * output of the batch's best nodes.
   */
  private reach(ctx: StepContext): Reach {
    if (this.reachMemo) return this.reachMemo;
    let total = 0;
    const own = this.plans.map((plan, i) => {
      const tree = ctx.requests[i].tree;
      const mine = new Float64Array(tree.size);
      let count = 0;
      for (let id = 1; id < tree.size; id++) if (this.grantable(plan, tree.depth[id])) mine[count++] = plan.value[id];
      total += count;
      return bestFirst(mine.subarray(0, count));
    });
    const all = new Float64Array(total);
    let at = 0;
    for (const mine of own) for (const v of mine) all[at++] = v;
    const sorted = bestFirst(all);
    const n = this.draftBudget;
    const bar = kthBest(sorted, n);
    const best = sorted.slice(0, n);
    let expected = 0;
    for (const v of best) expected += v;
    this.reachMemo = { bar, own, expected, count: best.length, best };
    return this.reachMemo;
  }

  /**
   * Does drafting this layer pay for its forward? Each request drafting it can add at most one
   * child of its best expanded node worth more than the rest: at most that node's value times the
   * highest chance the value model gives any child (a child is worth no more than its parent).
   * Those bounds join the batch's best nodes, and the gain is how much the best K_max − B of them
   * rise: a new node counts only for what it is worth above the one it displaces, and many
   * requests' nodes cannot each displace the same last one.
   */
  private layerPaysItsForward(ctx: StepContext, reach: Reach, rows: number, requests: number, depth: number): boolean {
    if (!this.priced) return true;
    const ceiling = this.children ? this.children.ceiling() : 1;
    const offers: number[] = [];
    for (const plan of this.plans) if (plan.expanded.length > 0) offers.push(plan.value[plan.expanded[0]] * ceiling);
    const merged = [...reach.best, ...offers].sort((a, b) => b - a).slice(0, this.draftBudget);
    const gain = merged.reduce((a, b) => a + b, 0) - reach.expected;
    const output = this.rootsWorth + reach.expected;
    const time = this.stepTime(ctx.requests.length + reach.count);
    return (output + gain) / output > (time + this.forwardCost(rows, requests, depth)) / time;
  }

  /**
   * Under a verification price, the least a node must be worth to pay for its verification once
   * the batch's best drafted nodes that pay are granted: the count of them that gives the most
   * expected output per unit of step time (bestCount), then the least worth per token that any
   * number of further tokens would need to raise it (on a convex price, the next one's). 0
   * without a price, below a fit's knee (where a token costs nothing) and when K_max binds first.
   */
  private breakEven(reach: Reach): number {
    if (!this.rules.cost) return 0;
    const k = this.requestCount;
    const n = this.bestCount((i) => reach.best[i], reach.best.length, k, this.rootsWorth);
    if (n >= this.draftBudget) return 0;
    let output = this.rootsWorth;
    for (let i = 0; i < n; i++) output += reach.best[i];
    const rate = output / this.stepTime(k + n);
    let floor = Infinity;
    for (let more = 1; n + more <= this.draftBudget; more++) floor = Math.min(floor, (rate * this.stepTime(k + n + more) - output) / more);
    return Math.max(0, floor);
  }

  /**
   * How many of `count` values (`value(i)`, best first) to add to a step verifying `k` tokens for an
   * expected output of `output`, at most what K_max leaves: the count with the most expected
   * output per unit of step time, the first such. On a convex price (the T_ver fit, a roofline)
   * that is where the next value first fails to pay for itself; a measured curve need not be
   * convex: one request's forward on the bundled target costs nearly as much at 8 rows as at 12,
   * and a step stopped at the first token that does not pay alone would stop short of the 4 after
   * it that pay together.
   */
  private bestCount(value: (i: number) => number, count: number, k: number, output: number): number {
    const room = Math.min(count, this.draftBudget + this.requestCount - k);
    let best = output / this.stepTime(k);
    let chosen = 0;
    for (let n = 1; n <= room; n++) {
      output += value(n - 1);
      const rate = output / this.stepTime(k + n);
      if (rate > best) [best, chosen] = [rate, n];
    }
    return chosen;
  }

  /**
   * The root layer's draft forward: a row for each drafting request's root, and one for each
   * accepted token its draft has not seen yet (`draftBehind`: a request left undrafted for s
   * steps owes the draft about s catch-up rows, so going back to drafting costs more the longer it
   * waited). It is the step's first draft forward: it also pays for the draft's weights, which the
   * target's forward has pushed out of the caches (StepPrice.afterTarget). A request the draft has
   * never run for must first have its prompt prefilled into the draft (`draftPrefill` rows, one
   * forward): that serves every step it drafts after, so this step pays the forward's share over
   * the steps those requests may still run (at most their remaining tokens), or all of it this
   * step (`prefillNow`: what a probe must be sure of before it prefills every request). Unpriced, a
   * probe of a fresh batch-32 wave prefilled the EAGLE-3 head for all 32 requests to learn that
   * drafting did not pay: 1.6 ms a step of 33 on the wall, where `ar` paid none.
   */
  private rootForward(ctx: StepContext, drafts: (i: number) => boolean, prefillNow = false): number {
    let rows = 0;
    let requests = 0;
    let prefillRows = 0;
    let prefilling = 0;
    let stepsLeft = 0;
    for (let i = 0; i < this.plans.length; i++) {
      if (!drafts(i)) continue;
      const r = ctx.requests[i];
      rows += 1 + (r.draftBehind ?? 0);
      requests++;
      if (!r.draftPrefill) continue;
      prefillRows += r.draftPrefill;
      prefilling++;
      stepsLeft += r.remaining;
    }
    if (requests === 0) return 0;
    const spread = prefillNow ? 1 : Math.max(1, stepsLeft / prefilling);
    const prefill = prefilling === 0 ? 0 : this.price.draft(prefillRows, prefilling) / spread;
    return this.forwardCost(rows, requests, 0) + prefill;
  }

  /** Under a verification or draft price: drafting and granting weigh what they cost. */
  private get priced(): boolean {
    return this.rules.draftPrice !== undefined || this.rules.cost !== undefined;
  }

  /**
   * Is the root layer worth drafting, and on whose word? What n tokens could buy: what the last
   * steps that drafted were worth (recentlyDrafted: 'draft' when they say it pays), or without such
   * a step lately the calibration's bound (bestRootTokens). The bound says what a root could be
   * worth, not what this batch's are: when it pays even with the drafts' unread prompts prefilled
   * in full this step, every request drafts ('draft'); when it pays only with that prefill spread
   * over the steps ahead, a few requests draft to refresh the record ('probe', probeSet). If no
   * number of tokens pays for the forward and their verification, the step decodes plainly
   * ('plain'). Unpriced, every step drafts.
   */
  private rootLayerVerdict(ctx: StepContext): 'plain' | 'draft' | 'probe' {
    if (!this.priced) return 'draft';
    const table = this.rules.acceptance ?? this.rules.draftPrice?.acceptance;
    const drafting = this.plans.filter((p) => p.depthCap > 0);
    const chain = Math.max(0, ...drafting.map((p) => p.depthCap));
    const record = this.recentlyDrafted(ctx.step, drafting.length);
    const worth = record ?? bestRootTokens(table?.[0]?.rates ?? [1], drafting.length, chain);
    const roots = ctx.requests.length;
    const time = this.stepTime(roots);
    const pays = (forward: number): boolean => {
      for (let n = 1; n <= this.draftBudget; n++) {
        if ((roots + worth(n)) / roots > (this.stepTime(roots + n) + forward + n * this.price.row) / time) return true;
      }
      return false;
    };
    const draws = (i: number): boolean => this.plans[i].depthCap > 0;
    const spread = this.rootForward(ctx, draws);
    if (!pays(spread)) return 'plain';
    if (record) return 'draft';
    // With no unread prompt the forward is the same either way: it already paid.
    const now = this.rootForward(ctx, draws, true);
    return now === spread || pays(now) ? 'draft' : 'probe';
  }

  /**
   * The requests a probe drafts: the PROBE_REQUESTS whose draft is nearest to caught up (fewest
   * prompt rows to prefill and accepted tokens to catch up on), the first in the batch on a tie.
   * The calibration's bound says what a root could be worth, not what this batch's are: a probe
   * of every request of a fresh batch-32 wave prefilled the EAGLE-3 head for all 32 prompts (130 ms
   * on the wall, four plain steps) to learn that drafting did not pay. The record a probe leaves is
   * per drafting request (recentlyDrafted), so a few requests refresh it for all.
   */
  private probeSet(ctx: StepContext): Set<number> {
    const owed = (i: number): number => (ctx.requests[i].draftPrefill ?? 0) + (ctx.requests[i].draftBehind ?? 0);
    const candidates = this.plans.flatMap((plan, i) => (plan.depthCap > 0 ? [i] : []));
    candidates.sort((a, b) => owed(a) - owed(b) || a - b);
    return new Set(candidates.slice(0, PROBE_REQUESTS));
  }

  /**
   * What n draft tokens were worth in the last steps that drafted (DRAFTED_STEPS of them, pooled
   * per drafting request and scaled to `requests`): the best n values the value model gave their
   * drafted nodes, the ones a grant reads. Null with no such step in the last `refreshAfter`
   * steps (REFRESH_STEPS, backed off while drafting verifies nothing): the calibration's bound
   * decides, and drafting refreshes the record. The calibration's bound alone
   * says what a root *could* be worth; at batch 64 on the demo pair it let a 64-row root layer be
   * drafted on three steps of five to verify about 5 tokens of it, where the forward needed 13
   * sure ones to pay, and ECHO ran at 0.96 × `ar` on the curves clock.
   */
  private recentlyDrafted(step: number, requests: number): ((n: number) => number) | null {
    const newest = this.drafted[this.drafted.length - 1];
    if (!newest || step - newest.step > this.refreshAfter || requests === 0) return null;
    const each = requests / this.drafted.reduce((n, d) => n + d.requests, 0);
    if (this.draftedWorth?.each !== each) {
      // n ≤ K_max − B tokens read at most the best (K_max − B) / each values.
      const needed = Math.ceil(this.draftBudget / each) + 1;
      this.draftedWorth = { each, worth: tokensWorth(mergeBestFirst(this.drafted.map((d) => d.values), needed), each) };
    }
    return this.draftedWorth.worth;
  }

  /** After a step that drafted: its drafted nodes' values, for rootLayerVerdict (which reads them only under a price). */
  private recordDrafted(ctx: StepContext): void {
    if (!this.priced) return;
    let requests = 0;
    const values: number[] = [];
    for (const [i, plan] of this.plans.entries()) {
      const tree = ctx.requests[i].tree;
      if (tree.size <= 1) continue;
      requests++;
      // Recorded as if every request weighed 1: rootLayerVerdict reads them against its roots alone.
      const weight = plan.value[ROOT];
      this.eachDrafted(plan, tree, (_p, _r, _id, value) => void values.push(value / weight));
    }
    if (requests === 0) return;
    // A drafted step whose grants were not expected to repay its draft forwards says drafting does
    // not pay here: the record stays the judge for twice as long. At batch 32 on the demo pair every
    // probe of a fresh wave prefilled the draft for all its requests and verified nothing; later
    // probes verified a token or two, which reset the wait while paying for nothing.
    this.refreshAfter = this.draftingPaid(ctx.requests.length) ? REFRESH_STEPS : Math.min(MAX_REFRESH_STEPS, 2 * this.refreshAfter);
    this.drafted.push({ step: ctx.step, requests, values: bestFirst(Float64Array.from(values)) });
    if (this.drafted.length > DRAFTED_STEPS) this.drafted.shift();
    this.draftedWorth = null;
  }

  /**
   * Did this step's drafting pay, as the value model saw it once granting was done: its expected
   * output per unit of step time (verification and draft forwards) above a plain step's, `roots`
   * tokens for `roots` tokens in one forward.
   */
  private draftingPaid(roots: number): boolean {
    return this.expectedOutput / this.stepTime(this.verifiedSoFar) > this.rootsWorth / this.price.verify(roots, this.requestCount);
  }

  /**
   * The step's draft forward `index` (the root layer's is 0, layer d's is d) of `rows` rows over
   * `requests` requests, in target one-token forwards (step-price.ts): the draft's weights still
   * cold from the target's forward included.
   */
  private forwardCost(rows: number, requests: number, index: number): number {
    return this.price.draft(rows, requests) + this.price.afterTarget(index);
  }

  /**
   * Under a verification cost: does the offer at `at` (of best-first offers) raise expected output
   * per unit of step time, alone or with the offers after it? Throughput O/T rises with one more
   * node accepted with probability p iff (O + p) / O > T(K + 1) / T(K), with T the verification
   * (1 + γ·max(0, K − knee) on a fit; below its knee a token costs nothing extra) plus the draft
   * forwards run so far (stepTime). Where one does not pay alone, the best count of it and the
   * offers after it (bestCount) may still pay on a curve that is not convex: those are granted
   * then, whatever each adds alone (`committed`).
   */
  private pays(offers: readonly { value: number }[], at: number): boolean {
    if (!this.rules.cost) return true;
    if (this.committed > 0) return true;
    const k = this.verifiedSoFar;
    const p = offers[at].value;
    if ((this.expectedOutput + p) / this.expectedOutput > this.stepTime(k + 1) / this.stepTime(k)) return true;
    this.committed = this.bestCount((i) => offers[at + i].value, offers.length - at, k, this.expectedOutput);
    return this.committed > 0;
  }

  /** Step time with k tokens verified, in target one-token forwards: verification and the draft forwards so far. */
  private stepTime(k: number): number {
    if (k >= this.verifyMemo.length) return this.price.verify(k, this.requestCount) + this.draftSpent;
    let verify = this.verifyMemo[k];
    if (Number.isNaN(verify)) verify = this.verifyMemo[k] = this.price.verify(k, this.requestCount);
    return verify + this.draftSpent;
  }

  private count(value: number): void {
    this.committed = Math.max(0, this.committed - 1);
    this.verifiedSoFar++;
    this.expectedOutput += value;
  }

  private gateAt(depth: number): number | undefined {
    const gate = this.rules.gate;
    return gate.signal === 'best-path' ? gate.taus.get(depth) : Math.exp(gate.logThreshold);
  }

  private checkGate(depth: number, tree: DraftTree, layer: readonly number[]): GateCheck | null {
    const tau = this.gateAt(depth);
    if (tau === undefined) return null;
    const scores = layer.map((id) => nodeScore(tree, id, this.confidence)).sort((a, b) => b - a);
    let confidence: number;
    if (this.rules.gate.signal === 'best-path') {
      confidence = Math.exp(scores[0]);
    } else {
      confidence = 0;
      for (const s of scores.slice(0, this.rules.shape.topk)) confidence += Math.exp(s);
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

  /** Moves `tokens` of the request's unspent share to the pool (lost without reallocation). */
  private release(r: StepRequest, plan: PlanState, tokens: number): void {
    if (tokens <= 0) return;
    plan.shareLeft -= tokens;
    if (this.rules.reallocate) this.pool.push({ from: r.id, tokens });
  }

  /** Stops deepening the request: `depth` is the first layer it does not deepen into. */
  private stop(plan: PlanState, r: StepRequest, reason: StopReason, depth: number): never[] {
    if (plan.stop === null) {
      plan.stop = reason;
      r.stop = { reason, depth };
    }
    plan.expanded = [];
    return [];
  }
}

/**
 * The n-th best of `best` (best first) and `extra` together (`extra` is sorted in place): Infinity
 * when n < 1, −Infinity while fewer than n.
 */
function nthBestWith(best: ArrayLike<number>, extra: Float64Array, n: number): number {
  if (n < 1) return Infinity;
  if (best.length + extra.length < n) return -Infinity;
  extra.sort();
  let value = -Infinity;
  for (let i = 0, j = extra.length - 1, k = 0; k < n; k++) {
    if (j < 0 || (i < best.length && best[i] >= extra[j])) value = best[i++];
    else value = extra[j--];
  }
  return value;
}

/**
 * A node with `n − 2` better ones can still have a child among the best n (itself and its
 * ancestors all rank above that child): it must beat the n-th best of `sorted` (best first).
 * -Infinity while fewer than n are drafted; Infinity when n < 2 leaves no room for a child.
 */
function kthBest(sorted: ArrayLike<number>, n: number): number {
  if (n < 2) return Infinity;
  return sorted.length >= n ? sorted[n - 1] : -Infinity;
}

/**
 * The most n draft tokens of a step can be expected to be worth, from the root layer's acceptance
 * by confidence bin (`rates`, bins of equal sample counts as a warm-up builds them): of `requests`
 * roots, about requests / bins fall in each bin, and each root is good for at most `chain` tokens
 * of its own value. So n tokens are worth the n best of those, best bins first. At batch 64 on the
 * demo pair, bounding every token by the best bin's rate instead (0.9 where the roots' mean is
 * about 0.5) drafted a 64-row root layer every step to verify 2.4 tokens of it, and ECHO ran at
 * 0.96 × `ar` on the curves clock.
 */
export function bestRootTokens(rates: readonly number[], requests: number, chain: number): (n: number) => number {
  return bestTokens(rates, (requests / Math.max(1, rates.length)) * Math.max(1, chain));
}

/** What the n best tokens are worth when each of `values` stands for `each` tokens of that value. */
function bestTokens(values: readonly number[], each: number): (n: number) => number {
  return tokensWorth(bestFirst(Float64Array.from(values)), each);
}

/** bestTokens of values already sorted best first. */
function tokensWorth(best: Float64Array, each: number): (n: number) => number {
  return (n) => {
    let left = n;
    let worth = 0;
    for (let i = 0; i < best.length && left > 0; i++) {
      const take = Math.min(left, each);
      worth += take * best[i];
      left -= take;
    }
    return worth;
  };
}

/** `values` sorted best first, in place: a typed array sorts numbers without a comparator call per pair. */
function bestFirst(values: Float64Array): Float64Array {
  return values.sort().reverse();
}

/** The best `limit` values of lists sorted best first, merged into one sorted best first. */
function mergeBestFirst(lists: readonly Float64Array[], limit: number): Float64Array {
  const merged = new Float64Array(Math.min(limit, lists.reduce((n, l) => n + l.length, 0)));
  const next = lists.map(() => 0);
  for (let at = 0; at < merged.length; at++) {
    let from = -1;
    for (let l = 0; l < lists.length; l++) {
      if (next[l] < lists[l].length && (from < 0 || lists[l][next[l]] > lists[from][next[from]])) from = l;
    }
    merged[at] = lists[from][next[from]++];
  }
  return merged;
}

/** The n best values seen (drafted, or expected of a layer being planned), and the bar kthBest reads off them. */
class BestValues {
  private readonly values: number[];

  constructor(
    private readonly n: number,
    sortedBestFirst: ArrayLike<number>,
  ) {
    this.values = [];
    for (let i = 0; i < Math.min(n, sortedBestFirst.length); i++) this.values.push(sortedBestFirst[i]);
  }

  add(value: number): void {
    if (this.n <= 0) return;
    let at = this.values.length;
    while (at > 0 && this.values[at - 1] < value) at--;
    if (at >= this.n) return;
    this.values.splice(at, 0, value);
    if (this.values.length > this.n) this.values.pop();
  }

  bar(): number {
    return kthBest(this.values, this.n);
  }
}

/** Best value first; ties to the shallower node (so a parent precedes its child), then batch order. */
function offerOrder(a: Offer, b: Offer): number {
  return b.value - a.value || a.depth - b.depth || a.index - b.index || a.parent - b.parent || a.rank - b.rank;
}

function recordTransfer(ctx: StepContext, from: string, to: string): void {
  const existing = ctx.transfers.find((t) => t.from === from && t.to === to);
  if (existing) existing.tokens++;
  else ctx.transfers.push({ from, to, tokens: 1 });
}
