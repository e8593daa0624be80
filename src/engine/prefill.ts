// Prefill: a prompt's tokens before its last one, forwarded as a chain and committed, so that the
// first step starts from the last prompt token as its root.
import type { ForwardEntry, ModelSession } from './model/types';

/** One slot's prompt prefix: every token before the root. */
export interface PromptPrefix {
  slot: number;
  prefix: readonly number[];
}

/** Forwards each prefix as a chain in one packed forward and commits it; returns onnxruntime ms. */
export async function prefill(model: ModelSession, prompts: readonly PromptPrefix[]): Promise<number> {
  const entries: ForwardEntry[] = prompts.map(({ slot, prefix }) => {
    const parents = new Int32Array(prefix.length);
    for (let j = 0; j < prefix.length; j++) parents[j] = j - 1;
    return { slot, tokens: prefix, parents };
  });
  const result = await model.forward(entries, {});
  for (const { slot, prefix } of prompts) model.commit(slot, Array.from({ length: prefix.length }, (_, j) => j));
  return result.runMs;
}
