// Measured cost: forward time of a model against packed token count on this machine, as the
// engine would pay it (a Super-Tree spread over several requests' KV slots, each with some
// committed context, asking for one argmax per row). Feeds fitKnee and `--hw measured`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ForwardEntry, ModelSession } from '../model/types.js';
import { AttentionWindowSchema, formatAttentionWindow, longerCurvesSchema, oneRequestCurvesSchema, TimedPointsSchema, WeightPrecisionSchema, type AttentionWindow, type WeightPrecision } from '../../shared/config.js';
import type { TimedPoint } from './knee.js';
import { jsonErrorPosition } from '../json-error.js';
import { Refusal } from '../refusal.js';

export const DEFAULT_TOKEN_COUNTS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512];

export interface MeasureOptions {
  tokenCounts?: readonly number[];
  /** Timed forwards per token count; the median is kept. */
  repeats?: number;
  /** Requests the packed tokens are spread over (KV slots used). */
  slots: number;
  /** Committed context rows per slot before timing. */
  context: number;
  /** Each point once its median is known (after the last repeat: the sizes are timed in turns). */
  onPoint?: (point: TimedPoint) => void;
  /** After each round of the sizes: `done` of `total` rounds (the untimed one first). */
  onRound?: (done: number, total: number) => void;
}

/** Rows a slot needs for a measurement: context plus its share of the largest forward. */
export function rowsNeeded(options: Pick<MeasureOptions, 'tokenCounts' | 'slots' | 'context'>): number {
  const counts = options.tokenCounts ?? DEFAULT_TOKEN_COUNTS;
  return options.context + Math.ceil(Math.max(...counts) / options.slots) + 1;
}

export async function measureForwardCurve(session: ModelSession, options: MeasureOptions): Promise<TimedPoint[]> {
  const { context, slots, tokenCounts, onPoint, ...rest } = options;
  const series = [{ context, slots, tokenCounts: tokenCounts ?? DEFAULT_TOKEN_COUNTS }];
  const [[points]] = await measureForwardCurves([session], { ...rest, series, ...(onPoint ? { onPoint: (_m, _s, p) => onPoint(p) } : {}) });
  return points;
}

/** One curve to time: `tokenCounts` rows spread over up to `slots` requests, each with `context` committed rows. */
export interface CurveSeries {
  context: number;
  slots: number;
  tokenCounts: readonly number[];
}

/**
 * Each model's forward-time curve for each series (a context and a spread of rows over
 * requests), timed in turns: every round runs each size of each series of each model once, and a
 * point is the median of its rounds. On a machine whose speed drifts (this project's build
 * machine swung a one-token forward between 4.1 and 7.0 ms in two profiles taken a minute
 * apart), timing a size's repeats back to back, a context's sizes together or one model after the
 * other let a slow minute raise one stretch of a curve alone: a profile read 5.4 ms for one token
 * at 64 rows of context and 7.1 at 128, where one request's forward took 4.5-5.2 ms at both, and
 * one timed the EAGLE-3 head's forwards in a slow half-minute at 0.135 of the target's one-token
 * forward where the same head, timed beside it, takes about 0.07. In turns, a slow minute reaches
 * every point alike. Each series has its own slots in each model. Within a round a series' sizes
 * go largest first: smallest first, a one-row draft forward followed a 512-row one and read
 * 0.57-0.69 ms where two rows read 0.39-0.43. Returns the curves by model, then by series.
 */
export async function measureForwardCurves(
  models: readonly ModelSession[],
  options: Pick<MeasureOptions, 'repeats' | 'onRound'> & { series: readonly CurveSeries[]; onPoint?: (model: number, series: number, point: TimedPoint) => void },
): Promise<TimedPoint[][][]> {
  const repeats = options.repeats ?? 5;
  const held: { session: ModelSession; slot: number }[] = [];
  try {
    // Per model, per series: one timed forward per size.
    const runs: (() => Promise<number>)[][][] = [];
    for (const session of models) {
      const perSeries: (() => Promise<number>)[][] = [];
      runs.push(perSeries);
      for (const { context, slots: count, tokenCounts } of options.series) {
        const slots: number[] = [];
        for (let s = 0; s < count; s++) {
          slots.push(session.allocSlot());
          held.push({ session, slot: slots[s] });
        }
        await commitContext(session, slots, context);
        perSeries.push(tokenCounts.map((n) => timedForward(session, slots, n)));
      }
    }
    // One untimed forward of every size first, largest first: the allocator's arena, the thread
    // pool and the KV pages settle before any size is timed (timed cold, the first sizes measured
    // ran up to 2-3x their later time).
    for (const perSeries of runs) for (const sizes of perSeries) for (const run of [...sizes].reverse()) await run();
    options.onRound?.(1, repeats + 1);
    const times = runs.map((perSeries) => perSeries.map((sizes) => sizes.map((): number[] => [])));
    for (let r = 0; r < repeats; r++) {
      for (const [m, perSeries] of runs.entries()) {
        for (const [s, sizes] of perSeries.entries()) for (let i = sizes.length - 1; i >= 0; i--) times[m][s][i].push(await sizes[i]());
      }
      options.onRound?.(r + 2, repeats + 1);
    }
    return times.map((perSeries, m) =>
      perSeries.map((sizes, s) =>
        sizes.map((samples, i) => {
          samples.sort((x, y) => x - y);
          const point = { tokens: options.series[s].tokenCounts[i], ms: samples[Math.floor(samples.length / 2)] };
          options.onPoint?.(m, s, point);
          return point;
        }),
      ),
    );
  } finally {
    for (const { session, slot } of held) session.freeSlot(slot);
  }
}

/**
 * A chain of `length` tokens for `slot`, each row's parent the row before: every row attends to
 * the past and its ancestors, as a tree's do. Pseudo-random tokens from `seed` on: a forward's
 * cost does not depend on which tokens they are.
 */
function chainEntry(session: ModelSession, slot: number, length: number, seed: number): ForwardEntry {
  const vocab = Math.max(1, session.info.vocabSize - 1);
  return {
    slot,
    tokens: Int32Array.from({ length }, (_, i) => ((i + seed) * 7919 + 13) % vocab),
    parents: Int32Array.from({ length }, (_, i) => i - 1),
  };
}

/** `context` committed rows in each slot, in one forward. */
async function commitContext(session: ModelSession, slots: readonly number[], context: number): Promise<void> {
  if (context <= 0) return;
  await session.forward(slots.map((slot, s) => chainEntry(session, slot, context, 31 * s)), {});
  for (const slot of slots) session.commit(slot, Array.from({ length: context }, (_, i) => i));
}

/** A forward of `n` rows spread over up to `slots.length` requests, a chain per request, timed; its rows are cleared after. */
function timedForward(session: ModelSession, slots: readonly number[], n: number): () => Promise<number> {
  const used = Math.min(n, slots.length);
  const entries = slots.slice(0, used).map((slot, s) => chainEntry(session, slot, Math.floor(n / used) + (s < n % used ? 1 : 0), 101 * s));
  const rows = Array.from({ length: n }, (_, i) => i);
  return async () => {
    const start = performance.now();
    await session.forward(entries, { topkRows: rows, topk: 1 });
    const ms = performance.now() - start;
    for (const { slot } of entries) session.clearScratch(slot);
    return ms;
  };
}

/**
 * What each of a step's first draft forwards costs beyond the warm time the curves give it. A
 * step's draft forwards follow the target's verification, which streams the target's weights
 * through the caches and leaves the draft's cold, and they warm again over several forwards: on
 * the bundled pair, one thread, the EAGLE-3 head's one-row forwards after a target forward took
 * 0.74, 0.47, 0.41, 0.40 and 0.33 ms against 0.29 ms back to back (about 0.9 ms a step of five),
 * the small draft's 0.35, 0.27, 0.25, 0.24, 0.24 against 0.22. The curves time each size back to
 * back, warm. Timed here as a step runs them: rounds of `forwards` one-row draft forwards on one
 * request at `context` rows of past, every other round after a target forward of `verifyTokens`
 * rows; per position the median after the target's less the median without, never below 0 and
 * never rising from one position to the next.
 */
export async function measureDraftAfterTarget(
  target: ModelSession,
  draft: ModelSession,
  options: { context: number; verifyTokens: number; forwards: number; repeats?: number },
): Promise<number[]> {
  const repeats = options.repeats ?? 15;
  const { verifyTokens, forwards } = options;
  const targetSlot = target.allocSlot();
  const draftSlot = draft.allocSlot();
  try {
    await commitContext(target, [targetSlot], options.context);
    await commitContext(draft, [draftSlot], options.context);
    const verify = chainEntry(target, targetSlot, verifyTokens, 101);
    const verifyRows = Array.from({ length: verifyTokens }, (_, i) => i);
    const round = async (afterTarget: boolean): Promise<number[]> => {
      if (afterTarget) {
        await target.forward([verify], { argmaxRows: verifyRows });
        target.clearScratch(targetSlot);
      }
      const times: number[] = [];
      for (let f = 0; f < forwards; f++) {
        const start = performance.now();
        await draft.forward([chainEntry(draft, draftSlot, 1, 211 + f)], { topkRows: [0], topk: 1 });
        times.push(performance.now() - start);
        draft.clearScratch(draftSlot);
      }
      return times;
    };
    const after: number[][] = [];
    const warm: number[][] = [];
    // Interleaved, so that drift on a busy machine reaches both alike; one untimed pair first.
    for (let r = 0; r <= repeats; r++) {
      const [a, w] = [await round(true), await round(false)];
      if (r === 0) continue;
      after.push(a);
      warm.push(w);
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const extra: number[] = [];
    for (let f = 0; f < forwards; f++) {
      const ms = median(after.map((t) => t[f])) - median(warm.map((t) => t[f]));
      extra.push(Math.max(0, Math.min(ms, extra[f - 1] ?? Infinity)));
    }
    return extra;
  } finally {
    target.freeSlot(targetSlot);
    draft.freeSlot(draftSlot);
  }
}

/** A profile's curve: at least three sizes, enough for its knee (fitKnee). */
const PointsSchema = TimedPointsSchema.min(3);

export const HardwareProfileSchema = z.object({
  kind: z.literal('echo-hw-profile'),
  version: z.literal(1),
  createdAt: z.string(),
  host: z.object({ cpu: z.string(), threads: z.number().int().min(0).nullable(), provider: z.string() }),
  models: z.object({ draft: z.string(), target: z.string() }),
  /** The draft's weights when timed (profiles from before it was recorded: float32). */
  draftPrecision: WeightPrecisionSchema.default('float32'),
  /** The target's weights when timed (`--target-precision`; profiles from before it was recorded: float32). */
  targetPrecision: WeightPrecisionSchema.default('float32'),
  /** The draft's attention window when timed (`--draft-window`); absent = its whole past. */
  draftWindow: AttentionWindowSchema.optional(),
  slots: z.number().int().min(1),
  context: z.number().int().min(0),
  target: PointsSchema,
  draft: PointsSchema,
  /** What a step's first draft forwards cost beyond the curve's warm time, in order (measureDraftAfterTarget; older profiles: not timed, read as none). */
  draftAfterTargetMs: z.array(z.number().min(0)).optional(),
  /** The same forwards with every row in one request, at `context` (oneRequestCurvesSchema; older profiles: read off the spread curves). */
  oneRequest: oneRequestCurvesSchema(PointsSchema).optional(),
  /** The same forwards timed at longer pasts (longerCurvesSchema). */
  longer: longerCurvesSchema(PointsSchema)
    .refine((levels) => levels.every((l, i) => i === 0 || l.context > levels[i - 1].context), 'longer contexts must rise')
    .optional(),
}).refine((p) => !p.longer?.length || p.longer[0].context > p.context, { message: 'longer contexts must be past the base context', path: ['longer'] });
export type HardwareProfile = z.infer<typeof HardwareProfileSchema>;

export function parseHardwareProfile(json: unknown, source = 'hardware profile'): HardwareProfile {
  const result = HardwareProfileSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new Refusal(`${source}: not a valid hardware profile: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return result.data;
}

/**
 * Where a hardware profile was measured unlike the run it is to price, one line each: rows spread
 * over fewer requests than the run packs (a separate draft's root layer costs more over more
 * requests, so it would be priced too low), a target or draft timed with other weights, a draft
 * timed with another window, or other models than the run's (by folder name; an EAGLE-3 head
 * priced by a draft model's curve among them: profile-hw --draft HEAD times the head).
 */
export function profileMismatches(
  profile: HardwareProfile,
  run: { batch: number; draftPrecision: WeightPrecision; targetPrecision?: WeightPrecision; draftWindow?: AttentionWindow; draftKind?: 'model' | 'head'; models?: { draft: string; target: string } },
): string[] {
  const notes: string[] = [];
  // Folders are compared by name: a profile records the paths it was given, relative or not.
  const name = (dir: string) => path.basename(path.resolve(dir));
  if (run.models && name(run.models.target) !== name(profile.models.target)) {
    notes.push(`note: the hardware profile timed the target ${name(profile.models.target)} and this run's is ${name(run.models.target)}: its times and prices are another model's (profile-hw --target ${run.models.target})`);
  }
  if (run.models && name(run.models.draft) !== name(profile.models.draft)) {
    // profile-hw times a head as runs draft with it (--draft HEAD); a draft model's curve prices a head's forward low.
    const what = run.draftKind === 'head' ? ` drafts with the EAGLE-3 head ${name(run.models.draft)}` : `'s is ${name(run.models.draft)}`;
    notes.push(`note: the hardware profile timed the draft ${name(profile.models.draft)} and this run${what}: its drafting is priced and modelled as another model's (profile-hw --draft ${run.models.draft})`);
  }
  if (profile.slots < run.batch) {
    notes.push(
      `note: the hardware profile spread its rows over ${profile.slots} requests and this run packs up to ${run.batch}: ` +
        `draft and target forwards over more requests cost more, so the times and prices it gives them are low (profile-hw --slots ${run.batch})`,
    );
  }
  const targetPrecision = run.targetPrecision ?? 'float32';
  if (profile.targetPrecision !== targetPrecision) {
    notes.push(
      `note: the hardware profile timed the target in ${profile.targetPrecision} and this run loads it in ${targetPrecision} (profile-hw --target-precision ${targetPrecision})`,
    );
  }
  if (profile.draftPrecision !== run.draftPrecision) {
    notes.push(
      `note: the hardware profile timed the draft in ${profile.draftPrecision} and this run loads it in ${run.draftPrecision} (profile-hw --draft-precision ${run.draftPrecision})`,
    );
  }
  const window = (w?: AttentionWindow) => (w ? formatAttentionWindow(w) : 'none');
  if (window(profile.draftWindow) !== window(run.draftWindow)) {
    const fix = run.draftWindow ? `profile-hw --draft-window ${window(run.draftWindow)}` : 'profile-hw without --draft-window';
    notes.push(`note: the hardware profile timed the draft with attention window ${window(profile.draftWindow)} and this run gives it ${window(run.draftWindow)} (${fix})`);
  }
  return notes;
}

/** Reads a `profile-hw --out` file (for `run --clock modelled --hw measured --hw-profile FILE`). */
export function loadHardwareProfile(path: string): HardwareProfile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Refusal(`cannot read hardware profile ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Refusal(`${path}: not JSON${jsonErrorPosition(err)}`);
  }
  return parseHardwareProfile(json, path);
}
