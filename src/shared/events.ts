// The step event: everything needed to redraw one speculative step. The engine emits it, the
// trace file stores it one per line, the studio draws it. Conventions (docs/conventions.md):
// - depth 0 is the first drafted layer (the root's children); the root has depth -1;
// - the cap is Σ_i (1 + K_i) ≤ K_max, K_i = verified draft nodes of request i (roots counted);
// - path score S = S_parent + log q(token); layer confidence c_{i,d} = exp(max_j S_{i,d,j}),
//   with S in the step's confidence signal (path-prob: as above; path-margin: each q renormalised
//   over its parent's two best candidates).
import type { ConfidenceSignal } from './config.js';

/** How a tree node got its place in the Super-Tree. */
export type GrantKind =
  | 'root' // the request's root token (always verified, costs 1)
  | 'base' // the policy's base tree shape
  | 'depth' // ECHO priority 1: global depth extension
  | 'width'; // ECHO priority 2: opportunistic width expansion

export interface TreeNode {
  /** Index in the request's node list; the root is 0. */
  id: number;
  /** Parent node id; -1 for the root. */
  parent: number;
  /** -1 for the root, 0 for the first drafted layer. */
  depth: number;
  token: number;
  /** Token text, filled where the writer has a tokenizer. */
  text?: string;
  /** Draft log-probability of this token given its parent (0 for the root). */
  logq: number;
  /** Cumulative draft log-probability from the root (0 for the root). */
  pathScore: number;
  /** How the node got budget; only meaningful when verified. */
  grant: GrantKind;
  /** Request id whose released budget paid for this node (depth extension), when one did. */
  paidBy?: string;
  /** True when the node entered the Super-Tree (was sent to the target). */
  verified: boolean;
}

export interface GateCheck {
  depth: number;
  /** Layer confidence c_{i,d}. */
  confidence: number;
  tau: number;
  /** c_{i,d} > τ_d. */
  pass: boolean;
  /**
   * The check failed but the request was not truncated: its best node at this layer was worth
   * more than what the freed budget would buy (the batch's marginal node), so the cut would have
   * lost output. Absent when the check passed or cut.
   */
  waived?: boolean;
}

/** What a gate check did: passed, truncated the request, or failed with its cut waived. */
export type GateOutcome = 'pass' | 'truncate' | 'waived';
export const GATE_OUTCOMES: readonly GateOutcome[] = ['pass', 'truncate', 'waived'];

export function gateOutcome(gate: GateCheck): GateOutcome {
  return gate.pass ? 'pass' : gate.waived ? 'waived' : 'truncate';
}

export type FinishReason = 'eos' | 'length';

/**
 * Why an elastic policy (echo, dense, fixed, ddd) stopped deepening a request in a step: a failed
 * gate, its max depth (or the last layer it could emit), no budget left, no candidates, a price
 * (`--verify-cost`, or the draft price: the next layer would not pay for its draft forward), or a
 * probe of drafting on a few other requests (at depth 0, under a price, with no recent drafted step
 * to judge by).
 */
export const DEEPENING_STOP_REASONS = ['truncated', 'max-depth', 'no-budget', 'no-candidates', 'not-worth-its-cost', 'not-probed'] as const;
export type DeepeningStopReason = (typeof DEEPENING_STOP_REASONS)[number];

export interface DeepeningStop {
  reason: DeepeningStopReason;
  /** The first layer the request did not deepen into. */
  depth: number;
}

export interface RequestStep {
  requestId: string;
  /** Every drafted node (verified or not); node 0 is the root. */
  nodes: TreeNode[];
  /** Gate checks made this step, in depth order. */
  gates: GateCheck[];
  /** Why and where it stopped deepening (elastic policies only). */
  stop?: DeepeningStop;
  /**
   * What a token of this request was worth against the batch's others, the slowest request's being
   * 1: ECHO's weight once no request waits (its steps left over the most in the batch). Absent: 1.
   */
  drainWeight?: number;
  /** Layer confidence per drafted depth (index = depth). */
  confidences: number[];
  /** Ids of the accepted draft nodes along the path, root excluded, in depth order. */
  accepted: number[];
  /** The target's token after the last accepted node (greedy: argmax; sampled: a sample). */
  bonusToken: number;
  /** Tokens appended to the output this step: accepted tokens, then the bonus. */
  emitted: number[];
  /** Text of the emitted tokens, where the engine has a tokenizer. */
  emittedText?: string;
  /** Set on the step in which the request retired. */
  finished?: FinishReason;
}

export interface StepTimings {
  draftMs: number;
  packMs: number;
  verifyMs: number;
  commitMs: number;
  totalMs: number;
  /** Prefill of requests admitted just before this step (both models), included in totalMs. */
  prefillMs?: number;
  /** Time inside onnxruntime's run() for every forward of the step; totalMs − modelMs is the engine's own work. */
  modelMs?: number;
}

/** How K_max was spent this step, in verified tokens. Sums to kmax. */
export interface BudgetSplit {
  roots: number;
  base: number;
  depth: number;
  width: number;
  unused: number;
}

/** A transfer of budget from a truncated request to a confident one (ECHO). */
export interface BudgetTransfer {
  from: string;
  to: string;
  tokens: number;
}

export interface StepEvent {
  type: 'step';
  /** 0-based step index within the run. */
  step: number;
  /** Milliseconds since the run started, at the end of the step. */
  t: number;
  kmax: number;
  /** Σ_i (1 + K_i): tokens in the one packed target forward. */
  verifiedTokens: number;
  requests: RequestStep[];
  timings: StepTimings;
  budget: BudgetSplit;
  transfers: BudgetTransfer[];
  /** Fraction of attention rows that were padding in the packed target forward. */
  paddingWaste: number;
  /**
   * Rows packed into each draft forward of the step, in depth order: the first holds every drafted
   * request's catch-up tokens (accepted tokens the draft has not seen) besides its root. Absent in
   * older traces and for policies that do not draft.
   */
  draftRows?: number[];
  /**
   * Requests with rows in each draft forward, as `draftRows`: a separate draft's forward costs more
   * over 64 requests than over 14 for as many rows (attention reads each request's past). Absent
   * in older traces.
   */
  draftRequests?: number[];
  /** The signal of every request's `confidences` and gate checks (absent in older traces: path-prob). */
  confidence?: ConfidenceSignal;
  /**
   * The longest committed past among the step's requests, in rows: each forward of the step gathers
   * every request's past up to it, so a clock timed at several contexts reads the step there.
   * Absent in older traces.
   */
  past?: number;
  /**
   * Requests of the workload not yet in flight when the step began: once none wait, the run ends
   * with its slowest request, and ECHO weighs each request's tokens by how near it is to setting
   * that end. Absent in older traces.
   */
  waiting?: number;
}

/** Per-depth accepted/rejected layer-confidence histograms, binned in the engine. */
export interface DepthHistogram {
  depth: number;
  /** Bin edges, length bins+1, over [0, 1]. */
  edges: number[];
  accepted: number[];
  rejected: number[];
  /**
   * Layers none of whose nodes was verified (a gate cut them, or the budget left them out): no
   * outcome, so neither accepted nor rejected, and not in the AUC.
   * Absent in summaries written before it was counted (those counted such layers as rejected).
   */
  unverified?: number[];
  /** Mann–Whitney AUC of accepted vs rejected; null with too few samples. */
  auc: number | null;
}

export interface StepTimeSplit {
  draftMs: number;
  verifyMs: number;
  prefillMs: number;
  otherMs: number;
}

export interface RunMetrics {
  policy: string;
  steps: number;
  requests: number;
  generatedTokens: number;
  wallMs: number;
  /** Generated tokens per second (wall clock). */
  throughput: number;
  /**
   * Generated tokens per second of decoding: over the steps' own time, prefill of admitted
   * requests and time between steps left out (no policy can change them). Absent in older traces.
   */
  decodeThroughput?: number;
  /**
   * Where a step's wall time went, mean per step: drafting (every draft forward and the policy's
   * gating), verification (the target forward), prefill of requests admitted before it, and the
   * rest (packing, committing, the engine's bookkeeping). Absent in older traces.
   */
  stepTime?: StepTimeSplit;
  /** Mean accepted draft tokens per request-step, bonus excluded. */
  meanAcceptedTokens: number;
  /** Mean tokens emitted per request-step: accepted + bonus. */
  meanAcceptanceLength: number;
  /** Accepted / verified draft tokens. */
  draftUtilisation: number;
  /** Mean Σ_i (1 + K_i) per step. */
  verifiedTokensPerStep: number;
  /** Fraction of request-steps whose accepted length reached position p (index p = depth). */
  acceptancePerPosition: number[];
  paddingWaste: number;
  /** Per-request time per output token, milliseconds. */
  tpotP50Ms: number;
  tpotP99Ms: number;
  /** Wall-clock speedup over `ar` when both ran in the same process; otherwise absent. */
  speedupVsAr?: number;
}
