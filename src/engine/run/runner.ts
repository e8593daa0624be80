// The continuous batching loop: up to `batch` requests in flight; each step runs one
// speculative step over all of them; a finished request (EOS or its token limit) retires,
// frees its KV slots on both models, and waiting requests that have arrived take its place.
// Between steps the studio may pause, single-step, stop, or change K_max and the batch size.
import { kmaxProblem, type Knobs } from '../../shared/config.js';
import type { FinishReason, StepEvent } from '../../shared/events.js';
import { isDraftHead, type ModelSession } from '../model/types.js';
import type { SpeculationPolicy } from '../policy/types.js';
import { prefill } from '../prefill.js';
import { Rng } from '../rng.js';
import { MAX_DRAFT_DEPTH } from '../policy/drive.js';
import { speculativeStep, type InFlight, type StepEngine } from '../step.js';
import { Refusal } from '../refusal.js';

/** One request of a workload, already tokenised. */
export interface WorkItem {
  id: string;
  promptTokens: readonly number[];
  /** Milliseconds after the run starts at which the request arrives (default 0). */
  arrivalMs?: number;
}

export interface RequestResult {
  id: string;
  /** Position in the workload. */
  index: number;
  promptTokens: readonly number[];
  tokens: number[];
  finish: FinishReason;
  /** Run clock (ms) when the request arrived, was admitted, emitted its first token, finished. */
  arrivalMs: number;
  admittedMs: number;
  firstTokenMs: number;
  finishedMs: number;
  /** Speculative steps the request took part in. */
  steps: number;
}

/**
 * Scratch rows a slot keeps free beyond its prompt and output, for one step's tree: the target
 * holds the root and verified nodes (≤ K_max), the draft its pending tokens and forwarded nodes.
 */
export function scratchHeadroom(kmax: number): number {
  return Math.max(kmax, 256);
}

/** KV rows per slot for requests of up to `longestPrompt` tokens generating `maxNewTokens`. */
export function slotRows(longestPrompt: number, maxNewTokens: number, kmax: number): number {
  return longestPrompt + maxNewTokens + scratchHeadroom(kmax);
}

/**
 * How far the batch may grow on a loaded pair: the most KV slots its memory plan allows
 * (pair.ts, pairSlotLimit), and why not one more. Past the slots the models hold, a raised batch
 * reallocates their KV buffers between steps.
 */
export interface SlotLimit {
  max: number;
  /** Why max + 1 slots cannot be had: one line. */
  beyond: string;
}

/** A reallocation of the KV slots between steps, as it goes (`done` of `total` layer copies). */
export interface SlotGrowth {
  from: number;
  to: number;
  done: number;
  total: number;
}

export interface RunnerOptions {
  target: ModelSession;
  /** Needed unless the policy never drafts (`ar`). */
  draft: ModelSession | null;
  policy: SpeculationPolicy;
  batch: number;
  kmax: number;
  maxNewTokens: number;
  temperature: number;
  seed: number;
  /** Token ids that end a request (the target's EOS ids). */
  eosTokenIds: readonly number[];
  /** Rows per KV slot the models were loaded with (see slotRows); absent = not checked here. */
  maxLength?: number;
  /** The most slots a raised batch may take (absent: the slots the models were loaded with). */
  slotLimit?: SlotLimit;
  /** Hears a reallocation of the KV slots (a batch raised past them) as it goes. */
  onSlotsGrow?: (growth: SlotGrowth) => void;
  decode?: (ids: number[]) => string;
  onStep?: (event: StepEvent) => void;
  /** Each request as it finishes (before the step's onStep), so a caller can keep it at once. */
  onRequestFinished?: (result: RequestResult) => void;
}

export interface RunSummary {
  results: RequestResult[];
  steps: number;
  wallMs: number;
  /** True when stop() ended the run before every request finished. */
  stopped: boolean;
}

interface Live extends InFlight {
  index: number;
  promptTokens: readonly number[];
  arrivalMs: number;
  admittedMs: number;
  firstTokenMs: number;
  steps: number;
}

export class Runner {
  private readonly engine: StepEngine;
  private readonly queue: { item: WorkItem; index: number }[];
  private readonly inFlight: Live[] = [];
  private readonly results: RequestResult[] = [];
  private batch: number;
  private kmax: number;
  private stepIndex = 0;
  private runStart = 0;
  /** Time spent parked (paused) so far: the run clock leaves it out. */
  private parkedMs = 0;
  private parkedSince: number | null = null;
  private started = false;
  private pendingPrefillMs = 0;
  private pendingPrefillModelMs = 0;
  private paused = false;
  private stopped = false;
  private singleSteps = 0;
  private wake: (() => void) | null = null;

  constructor(
    private readonly options: RunnerOptions,
    workload: readonly WorkItem[],
  ) {
    const { target, draft, policy, batch, kmax } = options;
    const kmaxRule = kmaxProblem(kmax, batch);
    if (kmaxRule !== null) throw new Refusal(kmaxRule);
    if (policy.candidatesPerNode > 0 && draft === null) throw new Error(`policy "${policy.name}" drafts, but no draft model was given`);
    if (target.capacity < batch) throw new Error(`the target model has ${target.capacity} KV slots, batch ${batch} needs ${batch}`);
    if (draft && draft.capacity < batch) throw new Error(`the draft model has ${draft.capacity} KV slots, batch ${batch} needs ${batch}`);
    const ids = new Set<string>();
    for (const item of workload) {
      if (ids.has(item.id)) throw new Error(`request id "${item.id}" appears twice in the workload`);
      ids.add(item.id);
      if (item.promptTokens.length === 0) throw new Error(`request "${item.id}" has an empty prompt`);
      // A policy that never drafts (ar) needs no room for a tree.
      const tree = policy.candidatesPerNode > 0 ? MAX_DRAFT_DEPTH : 0;
      const positions = item.promptTokens.length + options.maxNewTokens + tree;
      if (positions > target.info.maxPositions) {
        throw new Error(
          `request "${item.id}": ${item.promptTokens.length} prompt tokens + ${options.maxNewTokens} new tokens${tree ? ` + a draft tree up to ${tree} deep` : ''} exceed the target's ${target.info.maxPositions} positions`,
        );
      }
      const rows = slotRows(item.promptTokens.length, options.maxNewTokens, kmax);
      if (options.maxLength !== undefined && rows > options.maxLength) {
        throw new Error(
          `request "${item.id}" needs ${rows} KV rows per slot (prompt ${item.promptTokens.length} + ${options.maxNewTokens} new + ${scratchHeadroom(kmax)} for the tree) but the models were loaded with ${options.maxLength}`,
        );
      }
    }
    this.engine = {
      target,
      draft: policy.candidatesPerNode === 0 ? null : draft,
      policy,
      eos: new Set(options.eosTokenIds),
      temperature: options.temperature,
      decode: options.decode,
    };
    this.batch = batch;
    this.kmax = kmax;
    this.queue = workload
      .map((item, index) => ({ item, index }))
      .sort((a, b) => (a.item.arrivalMs ?? 0) - (b.item.arrivalMs ?? 0) || a.index - b.index);
  }

  /** Requests in flight right now. */
  get active(): number {
    return this.inFlight.length;
  }

  get done(): boolean {
    return this.queue.length === 0 && this.inFlight.length === 0;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wakeUp();
  }

  /** While paused: run exactly one more step. */
  stepOnce(): void {
    this.singleSteps++;
    this.wakeUp();
  }

  /** Ends the run after the current step; requests still in flight are dropped. */
  stop(): void {
    this.stopped = true;
    this.wakeUp();
  }

  /** Applied before the next step. K_max below the batch size is refused. */
  setKnobs(knobs: Knobs): void {
    const batch = knobs.batch ?? this.batch;
    const kmax = knobs.kmax ?? this.kmax;
    const kmaxRule = kmaxProblem(kmax, batch) ?? kmaxProblem(kmax, this.inFlight.length, 'the requests still in flight');
    if (kmaxRule !== null) throw new Refusal(kmaxRule);
    const limit = this.slotLimit;
    if (batch > limit.max) throw new Refusal(`batch ${batch} is more than the ${limit.max} KV slots this pair can have: ${limit.beyond}`);
    this.batch = batch;
    this.kmax = kmax;
    this.options.policy.setKnobs?.(knobs);
  }

  /** The most slots the batch may take, and why not more. */
  get slotLimit(): SlotLimit {
    const loaded = Math.min(this.options.target.capacity, this.options.draft?.capacity ?? Infinity);
    return this.options.slotLimit ?? { max: loaded, beyond: `the models were loaded with ${loaded} KV slots and this run cannot reallocate them` };
  }

  /**
   * Runs until every request finished or stop() was called. An interactive host passes
   * `yieldBetweenSteps`: onnxruntime's run() blocks the thread while it computes, so without a
   * turn of the event loop between steps its pause, stop and knob messages would wait for the
   * whole run. `onPark` hears when the loop parks (paused) and when it steps again.
   */
  async run(options: { yieldBetweenSteps?: boolean; onPark?: (parked: boolean) => void } = {}): Promise<RunSummary> {
    this.startClock();
    while (!this.stopped && !this.done) {
      if (this.paused && this.singleSteps === 0) {
        options.onPark?.(true);
        this.parkClock(true);
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.parkClock(false);
        if (!this.paused) options.onPark?.(false);
        continue;
      }
      if (this.paused) this.singleSteps--;
      await this.next();
      if (options.yieldBetweenSteps) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (this.stopped) this.dropInFlight();
    return this.summary();
  }

  /**
   * Admits arrived requests and runs one step; waits for the next arrival when nothing is in
   * flight. Returns null when the workload is done.
   */
  async next(): Promise<StepEvent | null> {
    this.startClock();
    for (;;) {
      if (this.done) return null;
      await this.ensureSlots();
      await this.admit();
      if (this.inFlight.length > 0) break;
      const wait = (this.queue[0].item.arrivalMs ?? 0) - this.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const event = await speculativeStep(this.engine, this.inFlight, {
      index: this.stepIndex++,
      kmax: this.kmax,
      runStart: this.runStart + this.parkedMs,
      waiting: this.queue.length,
    });
    if (this.pendingPrefillMs > 0) {
      // The step's own part (the draft's deferred prefill) is inside its total already.
      event.timings.prefillMs = (event.timings.prefillMs ?? 0) + this.pendingPrefillMs;
      event.timings.totalMs += this.pendingPrefillMs;
      event.timings.modelMs = (event.timings.modelMs ?? 0) + this.pendingPrefillModelMs;
      this.pendingPrefillMs = 0;
      this.pendingPrefillModelMs = 0;
    }
    this.retire();
    this.options.onStep?.(event);
    return event;
  }

  /**
   * Stops (held) or restarts the run clock between calls to next(). A runner that takes turns with
   * others on one machine (runLockstep) holds its clock while they step, so its wall time, step
   * times and request latencies count its own steps only, as if it ran alone.
   */
  holdClock(held: boolean): void {
    if (this.started) this.parkClock(held);
  }

  summary(): RunSummary {
    const results = this.results.slice().sort((a, b) => a.index - b.index);
    return { results, steps: this.stepIndex, wallMs: this.now(), stopped: this.stopped && !this.done };
  }

  /**
   * Parks or unparks the run clock: time parked (a paused studio run) counts neither towards the
   * run's wall time nor its requests' time per token.
   */
  private parkClock(parked: boolean): void {
    if (parked && this.parkedSince === null) this.parkedSince = performance.now();
    else if (!parked && this.parkedSince !== null) {
      this.parkedMs += performance.now() - this.parkedSince;
      this.parkedSince = null;
    }
  }

  private startClock(): void {
    if (this.started) return;
    this.started = true;
    this.runStart = performance.now();
  }

  private now(): number {
    const parkedNow = this.parkedSince === null ? 0 : performance.now() - this.parkedSince;
    return performance.now() - this.runStart - this.parkedMs - parkedNow;
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /**
   * A batch raised past the slots the models hold reallocates both models' KV buffers, between
   * steps: every request in flight keeps its rows and slot. Its time is in the run's wall clock,
   * not in any step's timings (it neither drafts nor verifies). A lowered batch needs nothing:
   * admit() fills fewer places and the slots beyond stay free (kept for a later raise).
   */
  private async ensureSlots(): Promise<void> {
    const models = [this.options.target, ...(this.engine.draft ? [this.engine.draft] : [])];
    // Again until none is short: the batch may be raised once more while a reallocation yields.
    for (let to = this.batch; models.some((m) => m.capacity < to); to = this.batch) {
      const short = models.filter((m) => m.capacity < to);
      const from = Math.min(...models.map((m) => m.capacity));
      const layers = short.map(() => 0);
      const total = short.reduce((sum, m) => sum + m.info.numLayers, 0);
      const report = () => this.options.onSlotsGrow?.({ from, to, done: layers.reduce((a, b) => a + b, 0), total });
      report();
      for (const [i, model] of short.entries()) {
        await model.growSlots(to, this.options.onSlotsGrow ? (done) => ((layers[i] = done), report()) : undefined);
      }
    }
  }

  /**
   * Takes arrived requests into free places and prefills the target (prompt minus its last token).
   * The draft's prefill waits for the first step that drafts the request (step.ts): a request the
   * policy never drafts, e.g. a priced ECHO past the knee, never costs the draft its prompt.
   */
  private async admit(): Promise<void> {
    const admitted: Live[] = [];
    const now = this.now();
    while (this.inFlight.length < this.batch && this.queue.length > 0 && (this.queue[0].item.arrivalMs ?? 0) <= now) {
      const { item, index } = this.queue.shift()!;
      const prompt = item.promptTokens;
      const root = prompt[prompt.length - 1];
      const live: Live = {
        id: item.id,
        index,
        promptTokens: prompt,
        targetSlot: this.options.target.allocSlot(),
        draftSlot: this.engine.draft ? this.engine.draft.allocSlot() : -1,
        root,
        draftPending: [root],
        draftPrefix: this.draftPrefixOf(prompt),
        output: [],
        maxNewTokens: this.options.maxNewTokens,
        rng: new Rng(this.options.seed, index),
        arrivalMs: item.arrivalMs ?? 0,
        admittedMs: now,
        firstTokenMs: -1,
        steps: 0,
      };
      this.inFlight.push(live);
      admitted.push(live);
    }
    const withPrefix = admitted.filter((r) => r.promptTokens.length > 1);
    if (withPrefix.length === 0) return;
    const start = performance.now();
    // An EAGLE-3 head reads the prompt's features: queued now, read when it first drafts the request.
    const head = isDraftHead(this.engine.draft) ? this.engine.draft : null;
    const modelMs = await prefill(
      this.engine.target,
      withPrefix.map((r) => ({ slot: r.targetSlot, prefix: r.promptTokens.slice(0, -1) })),
      head ? (i, rows) => head.pushFeatures(withPrefix[i].draftSlot, rows) : undefined,
    );
    this.pendingPrefillMs += performance.now() - start;
    this.pendingPrefillModelMs += modelMs;
  }

  /**
   * The prompt tokens the draft reads before the root when it first drafts the request. A head's
   * row reads a token with the target's features of the one before it, so it starts at the
   * second token.
   */
  private draftPrefixOf(prompt: readonly number[]): number[] | null {
    if (!this.engine.draft) return null;
    const first = isDraftHead(this.engine.draft) ? 1 : 0;
    return prompt.length > first + 1 ? prompt.slice(first, -1) : null;
  }

  private retire(): void {
    const now = this.now();
    for (let i = 0; i < this.inFlight.length; i++) {
      const r = this.inFlight[i];
      r.steps++;
      if (r.firstTokenMs < 0) r.firstTokenMs = now;
      if (!r.finished) continue;
      this.release(r);
      const result: RequestResult = {
        id: r.id,
        index: r.index,
        promptTokens: r.promptTokens,
        tokens: r.output,
        finish: r.finished,
        arrivalMs: r.arrivalMs,
        admittedMs: r.admittedMs,
        firstTokenMs: r.firstTokenMs,
        finishedMs: now,
        steps: r.steps,
      };
      this.results.push(result);
      this.options.onRequestFinished?.(result);
      this.inFlight.splice(i--, 1);
    }
  }

  private release(r: Live): void {
    this.options.target.freeSlot(r.targetSlot);
    if (this.engine.draft) this.engine.draft.freeSlot(r.draftSlot);
  }

  private dropInFlight(): void {
    for (const r of this.inFlight) this.release(r);
    this.inFlight.length = 0;
  }
}

/**
 * The warm-up stops sooner once it has taken this long: a large model's forwards outweigh the
 * engine's own code, so a few of its steps are warm-up enough, and loading should not wait seconds.
 */
export const WARM_UP_MAX_MS = 500;

/**
 * Steps of a run's warm-up (warmUpDecode): 64 at batch 1, fewer for larger batches (each step runs
 * the per-request code once per request, so V8 sees it as often), never under 8. At batch 1 on the
 * demo pair a fraction of a second.
 */
export function warmUpSteps(batch: number): number {
  return Math.max(8, Math.ceil(64 / batch));
}

/**
 * Decodes up to `steps` steps (for at most about `maxMs`) of the first `options.batch` work items
 * with the run's own settings and then drops them, freeing their slots: a fresh process's first
 * steps cost more than its later ones (onnxruntime's first run of each input shape; the engine's
 * own code before V8 has compiled it), and without this they would fall on the run's first
 * requests. `options.policy` must be an instance of its own (a policy may learn from the steps it
 * sees); no event leaves the warm-up, EOS does not end it, and the models' slots are as before
 * when it returns.
 */
export async function warmUpDecode(options: RunnerOptions, workload: readonly WorkItem[], steps: number, maxMs = WARM_UP_MAX_MS): Promise<void> {
  // The items keep their ids and arrival-free prompts: a workload the run would refuse is refused here in the same words.
  const items = workload.slice(0, options.batch).map((w) => ({ id: w.id, promptTokens: w.promptTokens }));
  if (items.length === 0 || steps < 1) return;
  const { onStep: _onStep, onRequestFinished: _onRequestFinished, onSlotsGrow: _onSlotsGrow, ...quiet } = options;
  const runner = new Runner({ ...quiet, eosTokenIds: [] }, items);
  const start = performance.now();
  for (let i = 0; i < steps && !runner.done && performance.now() - start < maxMs; i++) await runner.next();
  runner.stop();
  await runner.run();
}
