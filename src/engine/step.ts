// One speculative step over the requests in flight, top to bottom:
//   draft & gate → select → pack → verify → commit
// Each phase is one call; the step returns the event that describes everything it did. Drafting
// and selection follow the policy protocol in policy/drive.ts, with the draft model expanding.
import type { BudgetSplit, FinishReason, RequestStep, StepEvent, TreeNode } from '../shared/events.js';
import { draftTreesAsync, newStepContext, selectVerified, type Layer } from './policy/drive.js';
import { draftLayer, type DraftSlot } from './draft/drafter.js';
import { isDraftHead, type ForwardResult, type ModelSession } from './model/types.js';
import { prefill } from './prefill.js';
import type { SpeculationPolicy, StepContext } from './policy/types.js';
import type { Rng } from './rng.js';
import { commitDraft, commitTarget, emitTokens, type Emission } from './verify/commit.js';
import { commitHead, type VerifiedFeatures } from './verify/commit-head.js';
import { verifyGreedy, type Verdict } from './verify/greedy.js';
import { packSuperTree, type SuperTree } from './verify/pack.js';
import { verifySampled } from './verify/sampling.js';

/** A request in flight, between steps. */
export interface InFlight {
  readonly id: string;
  readonly targetSlot: number;
  /** -1 when the policy never drafts. */
  readonly draftSlot: number;
  /** The last emitted token: the target has not seen it yet. */
  root: number;
  /**
   * Tokens the draft has not seen yet, the root last. An EAGLE-3 head has the target's features of
   * the token before each of them queued (head-session.ts).
   */
  draftPending: number[];
  /**
   * The prompt before its last token while the draft has not prefilled it: the first step that
   * drafts the request prefills it then, so a request never drafted never costs the draft its prompt.
   */
  draftPrefix: readonly number[] | null;
  readonly output: number[];
  readonly maxNewTokens: number;
  readonly rng: Rng;
  finished?: FinishReason;
}

export interface StepEngine {
  readonly target: ModelSession;
  /** Null when the policy never drafts. */
  readonly draft: ModelSession | null;
  readonly policy: SpeculationPolicy;
  readonly eos: ReadonlySet<number>;
  readonly temperature: number;
  /** Token text for emittedText and each tree node's text; absent = no text in events. */
  readonly decode?: (ids: number[]) => string;
}

/** Each decoder's text per token id, decoded once: a batch's trees repeat the same few thousand tokens. */
const tokenTextCaches = new WeakMap<(ids: number[]) => string, Map<number, string>>();

function tokenTextOf(decode: (ids: number[]) => string): (token: number) => string {
  let cache = tokenTextCaches.get(decode);
  if (!cache) tokenTextCaches.set(decode, (cache = new Map()));
  const texts = cache;
  return (token) => {
    let text = texts.get(token);
    if (text === undefined) texts.set(token, (text = decode([token])));
    return text;
  };
}

interface StepState {
  ctx: StepContext;
  drafts: DraftSlot[];
  modelMs: number;
  /** Wall time of the draft's deferred prefill in this step (reported as prefill, not drafting). */
  prefillMs: number;
  /** Rows of each draft forward, catch-up tokens included, and the requests they belong to: what a modelled clock prices. */
  draftRows: number[];
  draftRequests: number[];
  /** The verification forward's features of the rows it returned them for, when the draft is an EAGLE-3 head. */
  features: VerifiedFeatures | null;
}

/** Where a step stands in its run. */
export interface StepAt {
  index: number;
  kmax: number;
  /** When the run's clock started (performance.now()), for the event's time. */
  runStart: number;
  /** Requests of the workload not yet in flight (StepContext.waiting). */
  waiting: number;
}

export async function speculativeStep(engine: StepEngine, batch: readonly InFlight[], at: StepAt): Promise<StepEvent> {
  const { index: stepIndex, kmax, runStart } = at;
  const start = performance.now();
  const state = beginStep(engine, batch, at);
  await draftTreesAsync(engine.policy, state.ctx, (layer) => draftWithModel(engine, batch, state, layer));
  const drafted = performance.now();
  selectVerified(engine.policy, state.ctx);
  const superTree = packSuperTree(
    state.ctx.requests.map((r) => r.tree),
    batch.map((r) => r.targetSlot),
  );
  const packed = performance.now();
  const { verdicts, paddingWaste } = await verifySuperTree(engine, superTree, batch, state);
  const verified = performance.now();
  engine.policy.afterVerify?.(state.ctx, verdicts.map((v) => v.accepted));
  const emissions = commitStep(engine, batch, state, superTree, verdicts);
  const committed = performance.now();
  const event = stepEvent(engine, state, superTree, verdicts, emissions, {
    stepIndex,
    kmax,
    paddingWaste,
    timings: {
      draftMs: drafted - start - state.prefillMs,
      packMs: packed - drafted,
      verifyMs: verified - packed,
      commitMs: committed - verified,
      totalMs: 0,
      modelMs: state.modelMs,
      ...(state.prefillMs > 0 ? { prefillMs: state.prefillMs } : {}),
    },
  });
  // Building the event is the engine's work too: the step's total includes it.
  const end = performance.now();
  event.timings.totalMs = end - start;
  event.t = end - runStart;
  return event;
}

function beginStep(engine: StepEngine, batch: readonly InFlight[], { index, kmax, waiting }: StepAt): StepState {
  const ctx = newStepContext(
    index,
    kmax,
    batch.map((r) => ({
      id: r.id,
      root: r.root,
      remaining: r.maxNewTokens - r.output.length,
      draftBehind: Math.max(0, r.draftPending.length - 1),
      draftPrefill: r.draftPrefix?.length ?? 0,
    })),
    { past: Math.max(0, ...batch.map((r) => engine.target.committedLength(r.targetSlot))), ends: engine.eos, waiting },
  );
  const drafts = batch.map((r, i) => ({
    tree: ctx.requests[i].tree,
    slot: r.draftSlot,
    pending: r.draftPending,
    scratchRows: 0,
  }));
  return { ctx, drafts, modelMs: 0, prefillMs: 0, draftRows: [], draftRequests: [], features: null };
}

/** One layer of the step's trees through the draft model (policy/drive.ts runs the policy around it). */
async function draftWithModel(engine: StepEngine, batch: readonly InFlight[], state: StepState, layer: Layer): Promise<void> {
  const { draft, policy } = engine;
  if (draft === null) throw new Error(`policy "${policy.name}" drafts, but no draft model was given`);
  if (layer.depth === 0) await prefillDraftOnFirstUse(draft, batch, layer.frontiers, state);
  const stats = await draftLayer(draft, state.drafts, layer.frontiers, layer.depth, policy.candidatesPerNode);
  if (stats === null) return;
  state.modelMs += stats.runMs;
  state.draftRows.push(stats.tokens);
  state.draftRequests.push(stats.requests);
}

/** Prefills the draft for the requests it drafts for the first time (InFlight.draftPrefix). */
async function prefillDraftOnFirstUse(
  draft: ModelSession,
  batch: readonly InFlight[],
  rootFrontiers: ReadonlyArray<readonly number[]>,
  state: StepState,
): Promise<void> {
  const first = batch.filter((r, i) => r.draftPrefix !== null && rootFrontiers[i].length > 0);
  if (first.length === 0) return;
  const start = performance.now();
  state.modelMs += await prefill(draft, first.map((r) => ({ slot: r.draftSlot, prefix: r.draftPrefix! })));
  for (const r of first) r.draftPrefix = null;
  state.prefillMs += performance.now() - start;
}

async function verifySuperTree(
  engine: StepEngine,
  superTree: SuperTree,
  batch: readonly InFlight[],
  state: StepState,
): Promise<{ verdicts: Verdict[]; paddingWaste: number }> {
  const rows = Array.from({ length: superTree.tokens }, (_, i) => i);
  const verdicts: Verdict[] = [];
  // An EAGLE-3 head reads the target's features of the accepted rows next step. Greedy verification
  // accepts only rows whose path agrees with the target's argmax, which the forward itself can tell:
  // it returns those rows' features alone. Sampled verification cannot be foreseen: every row's.
  const head = isDraftHead(engine.draft);
  if (engine.temperature === 0) {
    const featureRows = head ? { featureRows: rows, featureParents: packedParents(superTree) } : {};
    const result = await engine.target.forward(superTree.entries, { argmaxRows: rows, ...featureRows });
    state.modelMs += result.runMs;
    state.features = verifiedFeatures(result, superTree.tokens);
    const argmax = result.argmax;
    if (!argmax) throw new Error('the target model returned no argmax output');
    for (const packed of superTree.requests) verdicts.push(verifyGreedy(packed, argmax));
    return { verdicts, paddingWaste: result.paddingWaste };
  }
  const result = await engine.target.forward(superTree.entries, { logitsRows: rows, ...(head ? { featureRows: rows } : {}) });
  state.modelMs += result.runMs;
  state.features = verifiedFeatures(result, superTree.tokens);
  const logits = result.logits;
  if (!logits) throw new Error('the target model returned no logits');
  const vocab = engine.target.info.vocabSize;
  const scratch = new Float64Array(vocab);
  for (let i = 0; i < batch.length; i++) {
    verdicts.push(verifySampled(superTree.requests[i], logits, vocab, engine.temperature, batch[i].rng, scratch));
  }
  return { verdicts, paddingWaste: result.paddingWaste };
}

/** Each packed row's parent row (-1 for a request's root): the super-tree's rows are all its rows. */
function packedParents(superTree: SuperTree): number[] {
  const parents: number[] = [];
  for (const [i, entry] of superTree.entries.entries()) {
    const offset = superTree.requests[i].offset;
    for (let j = 0; j < entry.parents.length; j++) parents.push(entry.parents[j] === -1 ? -1 : offset + entry.parents[j]);
  }
  return parents;
}

function verifiedFeatures(result: ForwardResult, rows: number): VerifiedFeatures | null {
  if (result.features === undefined) return null;
  const rowIndex = new Int32Array(rows).fill(-1);
  const kept = result.featureKept ?? Int32Array.from({ length: rows }, (_, i) => i);
  for (let k = 0; k < kept.length; k++) rowIndex[kept[k]] = k;
  return { data: result.features, rowIndex };
}

/** Appends the emitted tokens and compacts both models' KV; finished requests are left to retire. */
function commitStep(
  engine: StepEngine,
  batch: readonly InFlight[],
  state: StepState,
  superTree: SuperTree,
  verdicts: readonly Verdict[],
): Emission[] {
  const emissions: Emission[] = [];
  for (let i = 0; i < batch.length; i++) {
    const r = batch[i];
    const tree = state.ctx.requests[i].tree;
    const emission = emitTokens(tree, verdicts[i], r.maxNewTokens - r.output.length, engine.eos);
    emissions.push(emission);
    for (const token of emission.tokens) r.output.push(token);
    if (emission.finished) {
      r.finished = emission.finished;
      continue; // the runner frees both slots
    }
    commitTarget(engine.target, r.targetSlot, superTree.requests[i], verdicts[i]);
    if (isDraftHead(engine.draft)) {
      if (state.features === null) throw new Error('the target returned no features for the EAGLE-3 head');
      r.draftPending = commitHead(engine.draft, r.draftSlot, tree, r.draftPending, verdicts[i], superTree.requests[i], state.features);
    } else if (engine.draft !== null) {
      r.draftPending = commitDraft(engine.draft, r.draftSlot, tree, r.draftPending, verdicts[i]);
    }
    r.root = verdicts[i].bonus;
  }
  return emissions;
}

function stepEvent(
  engine: StepEngine,
  state: StepState,
  superTree: SuperTree,
  verdicts: readonly Verdict[],
  emissions: readonly Emission[],
  meta: { stepIndex: number; kmax: number; paddingWaste: number; timings: StepEvent['timings'] },
): StepEvent {
  const budget: BudgetSplit = { roots: 0, base: 0, depth: 0, width: 0, unused: 0 };
  const textOf = engine.decode ? tokenTextOf(engine.decode) : null;
  const requests: RequestStep[] = state.ctx.requests.map((r, i) => {
    const tree = r.tree;
    const nodes: TreeNode[] = new Array(tree.size);
    for (let id = 0; id < tree.size; id++) {
      const node = tree.nodeRecord(id);
      if (textOf) node.text = textOf(node.token);
      const paidBy = tree.paidBy[id];
      if (paidBy !== undefined) node.paidBy = paidBy;
      nodes[id] = node;
      if (!tree.verified[id]) continue;
      const grant = tree.grant[id];
      if (grant === 'root') budget.roots++;
      else budget[grant]++;
    }
    const emission = emissions[i];
    const step: RequestStep = {
      requestId: r.id,
      nodes,
      gates: r.gates,
      confidences: r.confidences,
      accepted: verdicts[i].accepted,
      bonusToken: verdicts[i].bonus,
      emitted: emission.tokens,
    };
    if (r.stop) step.stop = r.stop;
    if (r.drainWeight !== undefined) step.drainWeight = r.drainWeight;
    if (engine.decode) step.emittedText = engine.decode(emission.tokens);
    if (emission.finished) step.finished = emission.finished;
    return step;
  });
  budget.unused = meta.kmax - superTree.tokens;
  const event: StepEvent = {
    type: 'step',
    step: meta.stepIndex,
    t: 0,
    kmax: meta.kmax,
    verifiedTokens: superTree.tokens,
    requests,
    timings: meta.timings,
    budget,
    transfers: state.ctx.transfers,
    paddingWaste: meta.paddingWaste,
    confidence: engine.policy.confidence ?? 'path-prob',
  };
  if (state.ctx.past !== undefined) event.past = state.ctx.past;
  if (state.ctx.waiting !== undefined) event.waiting = state.ctx.waiting;
  if (state.draftRows.length > 0) {
    event.draftRows = state.draftRows;
    event.draftRequests = state.draftRequests;
  }
  return event;
}
