// Where a run of `echo`, `dense` or `fixed` gets its τ_d: explicit --taus win, then a profile
// file, else a warm-up calibration on the first prompts of the run's prompt source, as many as
// `calibrate` takes by default (said out loud, since it costs time and runs on the run's prompts).
import { isGatedPolicy, type ConfidenceSignal, type RunConfig } from '../../shared/config.js';
import type { ModelSession } from '../model/types.js';
import type { WorkItem } from './runner.js';
import type { AcceptanceTable } from '../calibrate/acceptance.js';
import type { ChildCounts } from '../calibrate/child-acceptance.js';
import { DEFAULT_DELTA } from '../calibrate/calibration.js';
import { loadProfile, profileGates, signalAucs, type EchoProfile } from '../calibrate/profile.js';
import { calibratePair, calibrationWorkload, NoSweetSpotError } from './warmup.js';
import { Refusal } from '../refusal.js';


/**
 * Warm-up size used when a gated run has no profile: `calibrate`'s defaults. Eight prompts of 24
 * tokens (the size before) often kept the wrong signal and noise-fitted τ_d: `echo` at batch 1
 * on code ran at 0.84–0.86 × `static`, against 0.98–1.01 with a 24-prompt profile.
 */
export const AUTO_WARMUP = { prompts: 24, maxNewTokens: 32, depth: 8, batch: 8 } as const;

/** A gated policy with neither --taus nor a profile: it calibrates on a warm-up first. */
export function needsWarmup(config: RunConfig): boolean {
  return isGatedPolicy(config.policy) && config.taus === undefined && config.profile === undefined;
}

export interface ResolvedGates {
  taus: Record<string, number>;
  denseTaus: Record<string, number>;
  /** The signal the τ_d are in, which the policy must gate with. */
  confidence: ConfidenceSignal;
  /** Measured acceptance by depth and confidence (for the draft price); none with --taus. */
  acceptance?: AcceptanceTable;
  /** The warm-up's samples of a node's acceptance given its parent's (the value model's start). */
  childAcceptance?: ChildCounts;
  /** `ungated`: the warm-up found no sweet spot, so no depth is gated (the run says so). */
  source: 'flags' | 'profile' | 'warm-up' | 'ungated';
  profile?: EchoProfile;
}

export interface GateResolution {
  config: RunConfig;
  target: ModelSession;
  draft: ModelSession;
  workload: readonly WorkItem[];
  /** The prompts a warm-up calibrates on (default: the run's workload); the first AUTO_WARMUP.prompts are used. */
  warmupWorkload?: readonly WorkItem[];
  eosTokenIds: readonly number[];
  maxLength?: number;
  models: { draft: string; target: string };
  log?: (line: string) => void;
  /** A warm-up's progress: prompt runs finished and in all (see WarmupOptions.onProgress). */
  onProgress?: (finished: number, total: number) => void;
}

/** Null for policies that do not gate by τ_d (everything but echo, dense, fixed). */
export async function resolveGates(r: GateResolution): Promise<ResolvedGates | null> {
  const { config } = r;
  if (!isGatedPolicy(config.policy)) return null;
  if (config.taus !== undefined) return { taus: config.taus, denseTaus: {}, confidence: config.confidence ?? 'path-prob', source: 'flags' };
  if (config.profile !== undefined) {
    const profile = await loadProfile(config.profile);
    if (config.confidence !== undefined && config.confidence !== profile.confidence) {
      throw new Refusal(
        `${config.profile} holds τ_d for the ${profile.confidence} signal; gating ${config.confidence} confidences with them would be meaningless (recalibrate with --confidence ${config.confidence}, or drop --confidence)`,
      );
    }
    if (profile.targetPrecision !== r.target.info.precision) {
      r.log?.(
        `note: ${config.profile} was calibrated with the target in ${profile.targetPrecision} and this run loads it in ${r.target.info.precision}: its τ_d were fitted to the other target's acceptances (calibrate --target-precision ${r.target.info.precision})`,
      );
    }
    return { ...profileGates(profile), source: 'profile', profile };
  }
  const source = r.warmupWorkload && r.warmupWorkload.length > 0 ? r.warmupWorkload : r.workload;
  const warmup = calibrationWorkload(
    source.slice(0, AUTO_WARMUP.prompts).map((w, i) => ({ id: `warmup-${i}`, promptTokens: w.promptTokens })),
    'the run\'s prompts',
  );
  for (const note of warmup.notes) r.log?.(note);
  const workload = warmup.workload;
  // No longer than the run itself, so the KV rows the pair was loaded with suffice.
  const maxNewTokens = Math.min(AUTO_WARMUP.maxNewTokens, config.maxNewTokens);
  const start = performance.now();
  r.log?.(
    `${config.policy}: no --profile given: calibrating τ_d on a warm-up (the first ${workload.length} prompts, ${maxNewTokens} tokens each) first; run \`echo-studio calibrate\` once and pass --profile to skip this`,
  );
  let profile;
  try {
    profile = await calibratePair({
      target: r.target,
      draft: r.draft,
      workload,
      eosTokenIds: r.eosTokenIds,
      maxLength: r.maxLength,
      depth: AUTO_WARMUP.depth,
      batch: Math.min(AUTO_WARMUP.batch, r.target.capacity, r.draft.capacity),
      maxNewTokens,
      delta: DEFAULT_DELTA,
      models: r.models,
      domain: config.promptsFile ?? config.domain ?? 'unknown',
      // A signal the run names is the only one measured; without one, each is (a second short
      // warm-up) and the one that separates best on this pair is kept, as `calibrate` does.
      ...(config.confidence ? { signals: [config.confidence], keep: config.confidence } : { keep: 'auto' as const }),
      ...(r.onProgress ? { onProgress: r.onProgress } : {}),
    });
  } catch (err) {
    if (!(err instanceof NoSweetSpotError)) throw err;
    // Short outputs or an unrelated pair: nothing to gate on. The run goes on without gates
    // (every layer the budget allows is drafted) rather than failing, and says so.
    r.log?.(`${config.policy}: the warm-up found no depth whose confidence separates accepted from rejected drafts (AUC ${err.aucs}); running ungated: no depth is truncated by a τ_d (calibrate on more or longer prompts and pass --profile to gate)`);
    return { taus: {}, denseTaus: {}, confidence: config.confidence ?? 'path-prob', source: 'ungated' };
  }
  const gates = profileGates(profile);
  const list = Object.entries(gates.taus)
    .map(([d, t]) => `d${d}:${t}`)
    .join(' ');
  r.log?.(
    `${config.policy}: warm-up calibration took ${((performance.now() - start) / 1000).toFixed(1)} s; ${profile.confidence} signal (mean AUC ${signalAucs(profile)}), sweet spots ${list}`,
  );
  return { ...gates, source: 'warm-up', profile };
}
