// Where a run's verification budget went and what it bought, with two bounds on the same steps:
// an oracle gate (the most any gating of the run's drafted candidates can buy) and a random gate
// at the run's own keep rate (what gating buys without a signal). A pure computation over a
// greedy run's step events; with each forwarded node's candidate list (`expansions`, what
// `--record-candidates` records) it also sees the candidates a policy drafted and never put in
// its tree, which is where a gate's cuts are.
//
// The target's verdict on any drafted node, verified or not, comes from the run's own output
// (greedy-futures.ts): under temperature 0 the tokens a request emitted from a step on are the
// target's argmax path from that step's prefix, so a node is accepted by the target exactly when
// its token path from the root is a prefix of them. No second target forward is needed, and the
// run explained is the run measured. Near the end of a request's known output a verdict can be
// unknown (counted apart, never guessed).
//
// Definitions (docs/explain.md says the same in prose):
// - a *candidate* is a token the draft proposed at a node it forwarded (its top-k list); the tree
//   nodes are candidates a policy kept; *verified* ones went to the target.
// - the *reach* a* of a request-step is the length of the target's path through its candidates:
//   the accepted tokens had every candidate been verified. Actual accepted a ≤ a*.
// - a gate check at depth d *keeps* (passes) or *cuts* its layer; the layer's outcome is whether
//   the target accepts one of its candidates (a* > d). A false cut cuts a layer the target would
//   have accepted; a false keep keeps one it rejects.
// - oracle gate: per request-step, verify exactly the target-accepted candidates (a* of them, no
//   more than the request can still emit), under the step's K_max (deepest dropped first).
// - random gate: every gate check the run made passes with the run's keep rate r (its passes over
//   its checks), independently; expectations are exact, over the coin flips. A random cut at depth
//   d where the run kept keeps only the run's verified nodes above d; a random keep where the run
//   cut keeps the run's nodes and the cut layer's best candidate (the node a pass grants first),
//   and nothing deeper (the draft never drafted it). Released budget is left unused.
// - each bound's step time is the step priced on the clock in use with the bound's verified
//   tokens, drafting as it was; a bound's throughput is its emitted tokens over those times.
import { gateOutcome, type RequestStep, type StepEvent } from '../../shared/events.js';
import { requestFutures, type RequestFuture } from './greedy-futures.js';

/** One forwarded node's candidates, best first (a trace's `expansions`). */
export interface CandidateList {
  node: number;
  tokens: readonly number[];
  logq: readonly number[];
}

export interface ExplainRequestStep extends RequestStep {
  /** Every node the draft forwarded this step with its candidates; absent: only the tree's nodes are seen. */
  expansions?: readonly CandidateList[];
}

export interface ExplainStep extends StepEvent {
  requests: ExplainRequestStep[];
}

/** A step's time on the clock in use had it verified `verifiedTokens` tokens, drafting as it was. */
export type StepPricer = (event: StepEvent, verifiedTokens: number) => { totalMs: number; draftMs: number };

export interface ExplainOptions {
  /** The run's max new tokens: what a request that the run does not show finishing may still emit. */
  maxNewTokens?: number;
  /** The clock in use (default: wallPricer(0), the steps' own decode times). */
  price?: StepPricer;
  /** Confidence bin edges over [0, 1] (default CONFIDENCE_EDGES). */
  edges?: readonly number[];
}

/**
 * Bins of a candidate's path probability: finer where the budget mostly goes. A deep node's path
 * probability is a product of several draft probabilities, so most verified nodes lie below 0.1,
 * where even tenths would put them all in one bin.
 */
export const CONFIDENCE_EDGES: readonly number[] = [0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.4, 0.6, 0.8, 1];

/** What one way of choosing the verified nodes buys on the run's steps. */
export interface Bound {
  /** Accepted draft tokens (bonus excluded). */
  accepted: number;
  /** Tokens sent to the target, roots included: Σ_i (1 + K_i) over the steps. */
  verifiedTokens: number;
  emitted: number;
  /** The steps' time on the clock in use (decode only: prefill left out). */
  ms: number;
  /** Emitted tokens per second of that time. */
  throughput: number;
  /** Accepted per verified draft token. */
  acceptedPerVerified: number;
}

export interface DepthRow {
  depth: number;
  /** Candidates the draft proposed at this depth. */
  drafted: number;
  verified: number;
  /** Verified and accepted. */
  accepted: number;
  /** Candidates the target accepts, verified or not (what the oracle verifies). */
  targetAccepts: number;
}

export interface ConfidenceRow {
  /** Bin [lo, hi) of the candidate's path probability exp(S) (the last bin holds 1). */
  lo: number;
  hi: number;
  drafted: number;
  verified: number;
  accepted: number;
  targetAccepts: number;
}

export interface GateAccount {
  checks: number;
  /** Checks that kept the layer: passed, or failed with the cut waived. */
  passes: number;
  /** Failed checks whose cut was waived (counted in passes: the layer was kept). */
  waived: number;
  /** passes / checks: the random gate's rate. */
  keepRate: number;
  /** Layer decisions against the layer's outcome (unknown outcomes apart). */
  keptAccepted: number;
  falseKeeps: number;
  falseCuts: number;
  rightCuts: number;
  unknown: number;
  /** Target-accepted candidates at or below a cut that were never verified: accepted tokens the cuts lost (at least). */
  lostTokens: number;
  /** Verified nodes in kept gated layers that the target rejected. */
  keptRejectedNodes: number;
}

export interface BudgetExplanation {
  steps: number;
  requestSteps: number;
  /** Each forwarded node's candidates were seen (else only tree nodes: cut candidates are invisible). */
  candidatesSeen: boolean;
  /** Candidates whose verdict lies past the run's known output (left out of the counts below). */
  unknownVerdicts: number;
  drafted: number;
  verifiedDraft: number;
  acceptedDraft: number;
  /** Σ a*: accepted tokens had every drafted candidate been verified. */
  reach: number;
  byDepth: DepthRow[];
  byConfidence: ConfidenceRow[];
  /** Draft forwards (layers drafted for the batch) per step, and drafting's share of the steps' time. */
  draft: { forwards: number; forwardsPerStep: number; ms: number; share: number };
  /** Null for a policy that made no gate check. */
  gates: GateAccount | null;
  actual: Bound;
  oracle: Bound;
  /** Null without gate checks. */
  random: Bound | null;
  /** The actual verified nodes with drafting free: what the drafting cost takes. */
  freeDrafting: Bound;
  /**
   * The engine's own work per step on the wall, outside onnxruntime's run() (scheduling, packing,
   * bookkeeping): a step's total less its model time, averaged over the steps that prefilled
   * nothing (a prefill's own host share is not recorded apart). No modelled clock charges it.
   * Null when the steps did not record their model time.
   */
  hostMsPerStep: number | null;
}

/** The engine's own work per step, outside the models' run() calls (BudgetExplanation.hostMsPerStep). */
export function hostMsPerStep(steps: readonly Pick<StepEvent, 'timings'>[]): number | null {
  let ms = 0;
  let n = 0;
  for (const { timings } of steps) {
    if (timings.modelMs === undefined || (timings.prefillMs ?? 0) > 0) continue;
    ms += Math.max(0, timings.totalMs - timings.modelMs);
    n++;
  }
  return n > 0 ? ms / n : null;
}

/** Wall-clock pricing: the step's own decode time, verification moved by `msPerToken` per token. */
export function wallPricer(msPerToken: number): StepPricer {
  return (event, verifiedTokens) => ({
    totalMs: Math.max(0, event.timings.totalMs - (event.timings.prefillMs ?? 0) + msPerToken * (verifiedTokens - event.verifiedTokens)),
    draftMs: event.timings.draftMs,
  });
}

/** A modelled clock's pricing: the step as the clock times it, with the bound's verified tokens. */
export function clockPricer(clock: { stepMs(event: StepEvent): { totalMs: number; draftMs: number } }): StepPricer {
  return (event, verifiedTokens) => {
    const t = clock.stepMs({ ...event, verifiedTokens });
    return { totalMs: t.totalMs, draftMs: t.draftMs };
  };
}

/**
 * The verification forward's cost per packed token on this machine: the least-squares slope of
 * verify time against verified tokens over the steps given (a batch size's steps of every policy
 * span the token counts a bound moves between); 0 when they do not vary or the slope is negative.
 */
export function verifySlope(events: Iterable<Pick<StepEvent, 'verifiedTokens' | 'timings'>>): number {
  let n = 0;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let sxy = 0;
  for (const e of events) {
    const x = e.verifiedTokens;
    const y = e.timings.verifyMs;
    n++;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const varX = n * sxx - sx * sx;
  if (n < 2 || varX <= 0) return 0;
  return Math.max(0, (n * sxy - sx * sy) / varX);
}

/** A candidate as the explanation sees it. */
interface Seen {
  depth: number;
  verified: boolean;
  /** The target accepts it: true, false, or null past the known output. */
  verdict: boolean | null;
  confidence: number;
  /** Tree node id, or -1 for a candidate never put in the tree. */
  node: number;
  /** Tree id of the node it was proposed at. */
  parent: number;
}

interface RequestView {
  seen: Seen[];
  accepted: number;
  reach: number;
  /** Most tokens this step may emit. */
  cap: number;
  /** Target tokens known from this step on. */
  known: number;
}

function viewRequest(r: ExplainRequestStep, future: RequestFuture, maxNewTokens: number): RequestView {
  const path = future.greedy;
  const at = (depth: number): number | undefined => path[future.outputBefore + depth];
  // onPath[n]: node n's token path is a prefix of the target's (null: past what the run shows).
  const onPath: (boolean | null)[] = [true];
  const seen: Seen[] = [];
  const verdictBelow = (parentOnPath: boolean | null, depth: number, token: number): boolean | null => {
    if (parentOnPath === false) return false;
    const t = at(depth);
    if (parentOnPath === null || t === undefined) return null;
    return token === t;
  };
  for (let id = 1; id < r.nodes.length; id++) {
    const n = r.nodes[id];
    const verdict = verdictBelow(onPath[n.parent] ?? null, n.depth, n.token);
    onPath[id] = verdict;
    seen.push({ depth: n.depth, verified: n.verified, verdict, confidence: Math.exp(n.pathScore), node: id, parent: n.parent });
  }
  for (const e of r.expansions ?? []) {
    const parent = r.nodes[e.node];
    const children = new Set<number>();
    for (let id = 1; id < r.nodes.length; id++) if (r.nodes[id].parent === e.node) children.add(r.nodes[id].token);
    e.tokens.forEach((token, rank) => {
      if (children.has(token)) return;
      const depth = parent.depth + 1;
      seen.push({ depth, verified: false, verdict: verdictBelow(onPath[e.node] ?? null, depth, token), confidence: Math.exp(parent.pathScore + (e.logq[rank] ?? -Infinity)), node: -1, parent: e.node });
    });
  }
  let reach = 0;
  for (const s of seen) if (s.verdict === true) reach = Math.max(reach, s.depth + 1);
  const cap = future.finishes ? future.outputLeft : maxNewTokens - future.outputBefore;
  return { seen, accepted: r.accepted.length, reach, cap: Math.max(1, cap), known: path.length - future.outputBefore };
}

/** Accepted tokens of a parent-closed set of candidates: the target-accepted ones in it. */
function acceptedIn(nodes: readonly Seen[]): number {
  let n = 0;
  for (const s of nodes) if (s.verdict === true) n++;
  return n;
}

/** A random gate's outcomes for one request-step: probability, accepted, verified draft nodes. */
function randomOutcomes(r: ExplainRequestStep, view: RequestView, keepRate: number): { p: number; accepted: number; verified: number }[] {
  const checks = [...r.gates].sort((a, b) => a.depth - b.depth);
  const verified = view.seen.filter((s) => s.verified);
  const truncatedAt = (d: number) => {
    const kept = verified.filter((s) => s.depth < d);
    return { accepted: acceptedIn(kept), verified: kept.length };
  };
  const runCut = checks.findIndex((g) => gateOutcome(g) === 'truncate');
  const lastChecked = runCut >= 0 ? runCut : checks.length - 1;
  const out: { p: number; accepted: number; verified: number }[] = [];
  let pAllKept = 1;
  for (let j = 0; j <= lastChecked; j++) {
    const p = pAllKept * (1 - keepRate);
    // Cut at the same check as the run: the run's own outcome.
    if (j === runCut) out.push({ p, accepted: view.accepted, verified: verified.length });
    else out.push({ p, ...truncatedAt(checks[j].depth) });
    pAllKept *= keepRate;
  }
  if (runCut < 0) {
    out.push({ p: pAllKept, accepted: view.accepted, verified: verified.length });
  } else {
    // Kept where the run cut: the cut layer's best candidate joins the run's nodes (its parent verified).
    const d = checks[runCut].depth;
    const verifiedIds = new Set(verified.map((s) => s.node));
    const best = view.seen
      .filter((s) => s.depth === d && (s.parent === 0 || verifiedIds.has(s.parent)))
      .sort((a, b) => b.confidence - a.confidence)[0];
    const kept = best && !best.verified ? [...verified, best] : verified;
    out.push({ p: pAllKept, accepted: acceptedIn(kept), verified: kept.length });
  }
  return out;
}

class BoundSum {
  accepted = 0;
  verifiedTokens = 0;
  verifiedDraft = 0;
  emitted = 0;
  ms = 0;
  add(accepted: number, verifiedDraft: number, roots: number, emitted: number, ms: number): void {
    this.accepted += accepted;
    this.verifiedDraft += verifiedDraft;
    this.verifiedTokens += verifiedDraft + roots;
    this.emitted += emitted;
    this.ms += ms;
  }
  bound(): Bound {
    return {
      accepted: this.accepted,
      verifiedTokens: this.verifiedTokens,
      emitted: this.emitted,
      ms: this.ms,
      throughput: this.ms > 0 ? this.emitted / (this.ms / 1000) : 0,
      acceptedPerVerified: this.verifiedDraft > 0 ? this.accepted / this.verifiedDraft : 0,
    };
  }
}

/** Candidates counted by depth and by confidence bin (verdicts past the known output apart). */
class CandidateTally {
  private readonly depths: DepthRow[] = [];
  readonly byConfidence: ConfidenceRow[];
  drafted = 0;
  unknownVerdicts = 0;

  constructor(edges: readonly number[]) {
    this.byConfidence = edges.slice(1).map((hi, k) => ({ lo: edges[k], hi, drafted: 0, verified: 0, accepted: 0, targetAccepts: 0 }));
  }

  add(seen: readonly Seen[]): void {
    for (const c of seen) {
      if (c.verdict === null) {
        this.unknownVerdicts++;
        continue;
      }
      this.drafted++;
      for (const row of [this.depthRow(c.depth), this.binOf(c.confidence)]) {
        row.drafted++;
        if (c.verdict) row.targetAccepts++;
        if (c.verified) {
          row.verified++;
          if (c.verdict) row.accepted++;
        }
      }
    }
  }

  /** One row per depth from 0 to the deepest seen, empty ones included. */
  byDepth(): DepthRow[] {
    return Array.from(this.depths, (row, depth) => row ?? { depth, drafted: 0, verified: 0, accepted: 0, targetAccepts: 0 });
  }

  private depthRow(depth: number): DepthRow {
    return (this.depths[depth] ??= { depth, drafted: 0, verified: 0, accepted: 0, targetAccepts: 0 });
  }

  private binOf(c: number): ConfidenceRow {
    let k = 0;
    while (k < this.byConfidence.length - 1 && c >= this.byConfidence[k].hi) k++;
    return this.byConfidence[k];
  }
}

/** The run's gate checks against the target's verdict on the layers they kept or cut. */
class GateTally {
  checks = 0;
  passes = 0;
  waived = 0;
  readonly counts = { keptAccepted: 0, falseKeeps: 0, falseCuts: 0, rightCuts: 0, unknown: 0, lostTokens: 0, keptRejectedNodes: 0 };

  add(r: ExplainRequestStep, v: RequestView): void {
    const gates = this.counts;
    const cut = r.gates.find((g) => gateOutcome(g) === 'truncate');
    for (const g of r.gates) {
      this.checks++;
      const kept = gateOutcome(g) !== 'truncate';
      if (kept) this.passes++;
      if (g.waived) this.waived++;
      const outcome = v.reach > g.depth ? true : v.reach < g.depth || g.depth < v.known ? false : null;
      if (outcome === null) gates.unknown++;
      else if (kept) gates[outcome ? 'keptAccepted' : 'falseKeeps']++;
      else gates[outcome ? 'falseCuts' : 'rightCuts']++;
      if (kept) for (const c of v.seen) if (c.depth === g.depth && c.verified && c.verdict === false) gates.keptRejectedNodes++;
    }
    if (cut) for (const c of v.seen) if (c.depth >= cut.depth && !c.verified && c.verdict === true) gates.lostTokens++;
  }

  /** passes / checks: the random gate's rate (0 without checks). */
  keepRate(): number {
    return this.checks > 0 ? this.passes / this.checks : 0;
  }

  account(): GateAccount | null {
    return this.checks > 0 ? { checks: this.checks, passes: this.passes, waived: this.waived, keepRate: this.keepRate(), ...this.counts } : null;
  }
}

/** Oracle on one step: each request keeps its target-accepted candidates that it can still emit; then K_max. */
function addOracleStep(oracle: BoundSum, step: ExplainStep, requests: readonly RequestView[], price: StepPricer): void {
  const keep = requests.map((v) => Math.min(v.reach, v.cap - 1));
  let excess = keep.reduce((a, k) => a + 1 + k, 0) - step.kmax;
  while (excess > 0) {
    const deepest = keep.indexOf(Math.max(...keep));
    if (keep[deepest] === 0) break;
    keep[deepest]--;
    excess--;
  }
  const oracleAccepted = keep.reduce((a, k) => a + k, 0);
  const oracleEmitted = keep.reduce((a, k, i) => a + Math.min(k + 1, requests[i].cap), 0);
  oracle.add(oracleAccepted, oracleAccepted, step.requests.length, oracleEmitted, price(step, step.requests.length + oracleAccepted).totalMs);
}

/** The random gate at `keepRate` over every step: expectations over its coin flips. */
function randomBound(steps: readonly ExplainStep[], views: readonly RequestView[][], keepRate: number, price: StepPricer): Bound {
  const sum = new BoundSum();
  steps.forEach((step, s) => {
    let accepted = 0;
    let verified = 0;
    let emitted = 0;
    step.requests.forEach((r, i) => {
      const v = views[s][i];
      if (r.gates.length === 0) {
        const own = v.seen.filter((c) => c.verified).length;
        accepted += v.accepted;
        verified += own;
        emitted += r.emitted.length;
        return;
      }
      for (const o of randomOutcomes(r, v, keepRate)) {
        accepted += o.p * o.accepted;
        verified += o.p * o.verified;
        emitted += o.p * Math.min(o.accepted + 1, v.cap);
      }
    });
    sum.add(accepted, verified, step.requests.length, emitted, price(step, step.requests.length + verified).totalMs);
  });
  return sum.bound();
}

/** Explains a greedy run from its steps (all of them, in order: the target's path is read off the later ones). */
export function explainBudget(steps: readonly ExplainStep[], options: ExplainOptions = {}): BudgetExplanation {
  const price = options.price ?? wallPricer(0);
  const maxNewTokens = options.maxNewTokens ?? Number.POSITIVE_INFINITY;
  const futures = requestFutures(steps);
  const views = steps.map((step, s) => step.requests.map((r) => viewRequest(r, futures[s].get(r.requestId)!, maxNewTokens)));

  const candidates = new CandidateTally(options.edges ?? CONFIDENCE_EDGES);
  const gates = new GateTally();
  let reach = 0;
  let forwards = 0;
  const actual = new BoundSum();
  const oracle = new BoundSum();
  const free = new BoundSum();

  steps.forEach((step, s) => {
    const requests = views[s];
    const priced = price(step, step.verifiedTokens);
    const emitted = step.requests.reduce((sum, r) => sum + r.emitted.length, 0);
    const acceptedHere = step.requests.reduce((sum, r) => sum + r.accepted.length, 0);
    const verifiedDraft = step.verifiedTokens - step.requests.length;
    actual.add(acceptedHere, verifiedDraft, step.requests.length, emitted, priced.totalMs);
    free.add(acceptedHere, verifiedDraft, step.requests.length, emitted, Math.max(0, priced.totalMs - priced.draftMs));
    forwards += step.draftRows?.length ?? new Set(step.requests.flatMap((r) => r.nodes.filter((n) => n.depth >= 0).map((n) => n.depth))).size;
    addOracleStep(oracle, step, requests, price);
    step.requests.forEach((r, i) => {
      reach += requests[i].reach;
      candidates.add(requests[i].seen);
      gates.add(r, requests[i]);
    });
  });

  const draftMs = actual.ms - free.ms;
  return {
    steps: steps.length,
    requestSteps: steps.reduce((a, s) => a + s.requests.length, 0),
    candidatesSeen: steps.some((s) => s.requests.some((r) => r.expansions !== undefined)),
    unknownVerdicts: candidates.unknownVerdicts,
    drafted: candidates.drafted,
    verifiedDraft: actual.verifiedDraft,
    acceptedDraft: actual.accepted,
    reach,
    byDepth: candidates.byDepth(),
    byConfidence: candidates.byConfidence,
    draft: { forwards, forwardsPerStep: steps.length > 0 ? forwards / steps.length : 0, ms: draftMs, share: actual.ms > 0 ? draftMs / actual.ms : 0 },
    gates: gates.account(),
    actual: actual.bound(),
    oracle: oracle.bound(),
    random: gates.checks > 0 ? randomBound(steps, views, gates.keepRate(), price) : null,
    freeDrafting: free.bound(),
    hostMsPerStep: hostMsPerStep(steps),
  };
}
