// The speculation policy interface. The engine drafts depth by depth and asks the policy, at
// each depth, which nodes to expand and which of their candidates enter the tree; at the end of
// drafting it asks which drafted nodes the target verifies. The engine then checks the global
// cap Σ_i (1 + K_i) ≤ K_max and throws if a policy broke it. See docs/engine.md.
import type { ConfidenceSignal, Knobs, PolicySettings } from '../../shared/config.js';
import type { BudgetTransfer, DeepeningStop, GateCheck } from '../../shared/events.js';
import type { DraftTree } from '../tree.js';
import type { AcceptanceTable } from '../calibrate/acceptance.js';
import type { ChildCounts } from '../calibrate/child-acceptance.js';

/** One request in flight, as a policy sees it during a step. */
export interface StepRequest {
  readonly id: string;
  /** Position in this step's batch, 0-based (stable while the request stays in flight). */
  readonly index: number;
  readonly tree: DraftTree;
  /** Layer confidence c_{i,d} = exp(max_j S_{i,d,j}) under the policy's signal, filled by the engine after each depth. */
  readonly confidences: number[];
  /** Gate checks the policy made this step, in depth order (ECHO). */
  readonly gates: GateCheck[];
  /** Set by a policy that stops deepening the request (the elastic scheduler): why, and where. */
  stop?: DeepeningStop;
  /**
   * Set by a policy that weighs requests' tokens against each other (the elastic scheduler once no
   * request waits): what a token of this request is worth, the slowest request's being 1.
   */
  drainWeight?: number;
  /** Tokens the request may still emit; more than `remaining − 1` accepted tokens is waste. */
  readonly remaining: number;
  /**
   * Accepted tokens the draft has not seen yet: its root layer forwards them before the root
   * (catch-up rows). Grows by every token emitted while the request is not drafted. Absent: none.
   */
  readonly draftBehind?: number;
  /**
   * Prompt rows the draft reads before it can first draft the request (its deferred prefill, one
   * forward, paid once). Absent: none, the draft has run for it already.
   */
  readonly draftPrefill?: number;
}

export interface StepContext {
  readonly step: number;
  readonly kmax: number;
  readonly requests: readonly StepRequest[];
  /** Budget moved between requests this step (ECHO); the policy appends, the event reports it. */
  readonly transfers: BudgetTransfer[];
  /**
   * The longest committed past among the step's requests, in rows: every forward of the step
   * gathers each request's past up to it, so its time grows with it. Absent where unknown.
   */
  readonly past?: number;
  /**
   * Token ids that end a request (its end-of-sequence ids): a drafted node holding one is never
   * expanded, since nothing after it could be emitted. Absent: every node may be.
   */
  readonly ends?: ReadonlySet<number>;
  /**
   * Requests of the workload not yet in flight. While some wait, a request that ends frees its
   * slot for one of them; once none do, the run ends with its slowest request. Absent: unknown.
   */
  readonly waiting?: number;
}

export interface SpeculationPolicy {
  readonly name: string;
  /**
   * Candidates the drafter keeps for every forwarded node (its top-k by draft log-prob). At
   * least the widest a node ever grows, so width can be added later without another forward.
   * 0 means the policy never drafts (`ar`): the engine then never runs the draft model.
   */
  readonly candidatesPerNode: number;
  /** The signal the step's layer confidences are reported in (default `path-prob`). */
  readonly confidence?: ConfidenceSignal;
  /** A new step starts: every tree holds only its root. */
  begin(ctx: StepContext): void;
  /**
   * Before drafting layer `depth`: per request (by index), the nodes at depth − 1 whose
   * children to draft (at depth 0, the root). An empty list means the request stops deepening
   * this depth; when every list is empty, drafting ends.
   */
  frontier(depth: number, ctx: StepContext): ReadonlyArray<readonly number[]>;
  /**
   * After the draft forward of layer `depth`: every node returned by `frontier` now has
   * candidates; add children to the trees (`tree.addChild` / `tree.addTopChildren`).
   */
  grow(depth: number, ctx: StepContext): void;
  /** After drafting: mark the nodes to verify (`tree.verify`), parents before children. */
  select(ctx: StepContext): void;
  /**
   * After verification, while the step's trees still stand: the node ids the target accepted per
   * request (by index), root excluded. A policy that learns from outcomes reads them here.
   */
  afterVerify?(ctx: StepContext, accepted: ReadonlyArray<readonly number[]>): void;
  /** Knobs changed between steps (the engine applies K_max and batch itself). */
  setKnobs?(knobs: Knobs): void;
}

/**
 * A T_ver fit as the ECHO scheduler prices verification (`profile-hw` prints one): the run
 * config's `verifyCost`, declared with it in src/shared/config.ts.
 */
export type VerifyCost = NonNullable<PolicySettings['verifyCost']>;

/**
 * Options a policy is built from: the run's settings (PolicySettings, declared with the run config
 * in src/shared/config.ts), τ_d as any resolution gives them, and what calibration measured.
 */
export interface PolicyOptions extends Omit<PolicySettings, 'taus'> {
  /** τ_d at the sweet spots D_sig, keyed by depth. */
  taus?: Readonly<Record<string, number>>;
  /** `dense`: τ_d for every depth (a calibration profile has one per depth it saw). */
  denseTaus?: Readonly<Record<string, number>>;
  /**
   * echo / dense / fixed: measured acceptance by depth and layer confidence (a calibration
   * profile's), in their signal. With it they draft a layer only if it can pay for its forward.
   */
  acceptance?: AcceptanceTable;
  /**
   * echo / dense / fixed: the warm-up's samples of how often a node is accepted once its parent
   * is, by rank and its own confidence (a calibration profile's); the run keeps adding to them.
   */
  childAcceptance?: ChildCounts;
}
