// Prefill: a prompt's tokens before its last one, forwarded as a chain and committed, so that the
// first step starts from the last prompt token as its root.
import type { ForwardEntry, ModelSession } from './model/types.js';

/** One slot's prompt prefix: every token before the root. */
export interface PromptPrefix {
  slot: number;
  prefix: readonly number[];
}

/**
 * Forwards each prefix as a chain in one packed forward and commits it; returns onnxruntime ms.
 * With `onFeatures` (a target an EAGLE-3 head drafts for) it also hands over each prompt's
 * features, one row per prefix token.
 */
export async function prefill(
  model: ModelSession,
  prompts: readonly PromptPrefix[],
  onFeatures?: (index: number, rows: Float32Array) => void,
): Promise<number> {
  const entries: ForwardEntry[] = prompts.map(({ slot, prefix }) => {
    const parents = new Int32Array(prefix.length);
    for (let j = 0; j < prefix.length; j++) parents[j] = j - 1;
    return { slot, tokens: prefix, parents };
  });
  const total = prompts.reduce((sum, p) => sum + p.prefix.length, 0);
  const result = await model.forward(entries, onFeatures ? { featureRows: Array.from({ length: total }, (_, i) => i) } : {});
  if (onFeatures) {
    const width = model.info.featureWidth ?? 0;
    if (!result.features) throw new Error(`${model.info.dir} returned no features for the EAGLE-3 head`);
    let row = 0;
    prompts.forEach(({ prefix }, i) => {
      onFeatures(i, result.features!.subarray(row * width, (row + prefix.length) * width));
      row += prefix.length;
    });
  }
  for (const { slot, prefix } of prompts) model.commit(slot, Array.from({ length: prefix.length }, (_, j) => j));
  return result.runMs;
}
