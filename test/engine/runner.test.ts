import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/engine/policy/index.js';
import { Runner, type RunSummary, type WorkItem } from '../../src/engine/runner.js';
import type { StepEvent } from '../../src/shared/events.js';
import { loadFixturePair, randomPrompts, type FixturePair } from './fixtures/pair.js';

const MAX_NEW = 20;

async function runPolicy(
  pair: FixturePair,
  policy: string,
  batch: number,
  kmax: number,
  workload: WorkItem[],
  onStep?: (e: StepEvent) => void,
): Promise<RunSummary> {
  const runner = new Runner(
    {
      target: pair.target,
      draft: pair.draft,
      policy: createPolicy(policy, { batch, kmax }),
      batch,
      kmax,
      maxNewTokens: MAX_NEW,
      temperature: 0,
      seed: 1,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength: 192,
      onStep,
    },
    workload,
  );
  return runner.run();
}

/** The gap between the target's two largest logits after `context`. */
async function topTwoGap(pair: FixturePair, context: number[]): Promise<number> {
  const slot = pair.target.allocSlot();
  try {
    const parents = Int32Array.from(context, (_, j) => j - 1);
    const out = await pair.target.forward([{ slot, tokens: context, parents }], { logitsRows: [context.length - 1] });
    const sorted = Array.from(out.logits!).sort((a, b) => b - a);
    return sorted[0] - sorted[1];
  } finally {
    pair.target.freeSlot(slot);
  }
}

describe('lossless greedy on a random pair with a perturbed draft', () => {
  let pair: FixturePair;
  const workload = randomPrompts(16, 5);
  let reference: RunSummary;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 17 });
    reference = await runPolicy(pair, 'ar', 4, 4, workload);
  });
  afterAll(async () => pair?.release());

  const cases: [string, number, number][] = [];
  for (const policy of ['chain', 'static', 'eagle2']) {
    for (const batch of [1, 4, 16]) for (const kmax of [batch, batch * 4 + 3, batch * 61]) cases.push([policy, batch, kmax]);
  }

  it.each(cases)('%s at batch %i, K_max %i emits exactly the tokens of ar', async (policy, batch, kmax) => {
    let accepted = 0;
    let maxVerified = 0;
    const run = await runPolicy(pair, policy, batch, kmax, workload, (e) => {
      maxVerified = Math.max(maxVerified, e.verifiedTokens);
      for (const r of e.requests) accepted += r.accepted.length;
    });
    expect(maxVerified).toBeLessThanOrEqual(kmax);
    expect(run.results.map((r) => r.id)).toEqual(reference.results.map((r) => r.id));
    for (let i = 0; i < run.results.length; i++) {
      const got = run.results[i].tokens;
      const want = reference.results[i].tokens;
      const j = firstDifference(got, want);
      if (j === -1) continue;
      // Only a numerical tie of the target's top two logits may flip a greedy choice.
      const context = [...workload[i].promptTokens, ...want.slice(0, j)];
      expect(await topTwoGap(pair, context), `${policy} request ${i} differs at token ${j}`).toBeLessThan(1e-4);
    }
    // With K_max = batch nothing can be drafted; otherwise the perturbed draft must get some tokens accepted.
    if (kmax > batch) expect(accepted).toBeGreaterThan(0);
    else expect(accepted).toBe(0);
  });
});

function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}
