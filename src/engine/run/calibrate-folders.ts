// Calibrating a pair from its folders: the one way `echo-studio calibrate` reaches the engine, as
// `prepare` (run.ts) is for a run. It tokenizes and fits the warm-up prompts to the target, loads
// the pair with the scratch rows the warm-up's whole trees need, runs calibratePair (warm-up,
// per-depth calibration, profile) and releases the pair, whatever happens.
import type { ConfidenceSignal } from '../../shared/config.js';
import type { EchoProfile } from '../calibrate/profile.js';
import { DEFAULT_TAU_RULE, type TauRule } from '../calibrate/calibration.js';
import { refuseHeadAsModel } from '../model/eagle3-config.js';
import { ModelTokenizer } from '../model/tokenizer.js';
import { loadPair, type PairOptions } from './pair.js';
import { slotRows } from './runner.js';
import { promptTokenLimit } from './session-run.js';
import { calibratePair, calibrationWorkload, warmupKmax, warmupProgressLog } from './warmup.js';
import { fitPrompts, skippedNotes, type PromptRecord } from './workload.js';

export interface FolderCalibration {
  draftDir: string;
  targetDir: string;
  /** The warm-up prompts, each run once. */
  records: readonly PromptRecord[];
  /** What the prompts are, for the notes: a file's path, or "the code prompts". */
  source: string;
  /** What the profile says it was calibrated on (a domain or the prompts file). */
  domain: string;
  /** Layers to calibrate: depths 0 … depth − 1; the last is the target depth. */
  depth: number;
  batch: number;
  maxNewTokens: number;
  delta: number;
  tauRule?: TauRule;
  significance: number;
  /** The signal the profile keeps (every signal is measured). */
  keep: ConfidenceSignal | 'auto';
  /** How the pair loads: onnxruntime threads, the weights' precisions, the draft's window. */
  load?: Pick<PairOptions, 'threads' | 'draftPrecision' | 'targetPrecision' | 'draftWindow'>;
}

/** Calibrates the pair in `draftDir` and `targetDir` on the prompts; `log` hears notes and progress. */
export async function calibrateFolders(options: FolderCalibration, log?: (line: string) => void): Promise<EchoProfile> {
  const { draftDir, targetDir, maxNewTokens } = options;
  refuseHeadAsModel(targetDir, 'the target');
  const tokenizer = ModelTokenizer.load(targetDir);
  const limits = promptTokenLimit(targetDir, { maxNewTokens });
  const fitted = fitPrompts(options.records, tokenizer, limits.limit);
  for (const note of skippedNotes(fitted, limits.limit, limits.why)) log?.(note);
  const { workload, notes } = calibrationWorkload(
    fitted.items.map((i) => ({ id: i.record.id, promptTokens: i.promptTokens })),
    options.source,
  );
  for (const note of notes) log?.(note);
  let longest = 0;
  for (const w of workload) longest = Math.max(longest, w.promptTokens.length);
  // The runner keeps scratch rows for the warm-up's K_max (its whole tree for every request).
  const maxLength = slotRows(longest, maxNewTokens, warmupKmax(options.batch, options.depth));
  const pair = await loadPair(draftDir, targetDir, { slots: options.batch, maxLength, ...options.load, onMessage: log });
  try {
    const tauRule = options.tauRule ?? DEFAULT_TAU_RULE;
    log?.(`calibrating on ${workload.length} prompts, ${maxNewTokens} tokens each, depths 0–${options.depth - 1}, δ = ${options.delta}, τ rule ${tauRule}`);
    return await calibratePair({
      target: pair.target,
      draft: pair.draft,
      workload,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength,
      depth: options.depth,
      batch: options.batch,
      maxNewTokens,
      delta: options.delta,
      tauRule,
      significance: options.significance,
      models: { draft: draftDir, target: targetDir },
      domain: options.domain,
      keep: options.keep,
      ...(log ? { onProgress: warmupProgressLog(log) } : {}),
    });
  } finally {
    await pair.release();
  }
}
