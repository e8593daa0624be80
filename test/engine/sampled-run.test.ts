// End to end on a real (random-weight) pair: with temperature > 0, the first token the engine
// emits for a fixed prompt follows the target's softmax(logits / T), whatever tree the policy drafts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/engine/policy/index.js';
import { Runner } from '../../src/engine/run/runner.js';
import { targetProbabilities } from '../../src/engine/verify/sampling.js';
import { expectConsistentEvent } from './fixtures/event-invariants.js';
import { loadFixturePair, type FixturePair } from './fixtures/pair.js';
import { chiSquareFit } from './verify/stats.js';

const T = 0.6;
const PROMPT = [40, 71, 33, 90, 52];
const REQUESTS = 1600;
const BATCH = 16;

describe('sampled runs keep the target distribution', () => {
  let pair: FixturePair;
  let expected: Float64Array;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'same', slots: BATCH });
    const slot = pair.target.allocSlot();
    const out = await pair.target.forward(
      [{ slot, tokens: PROMPT, parents: PROMPT.map((_, j) => j - 1) }],
      { logitsRows: [PROMPT.length - 1] },
    );
    pair.target.freeSlot(slot);
    expected = new Float64Array(pair.target.info.vocabSize);
    targetProbabilities(out.logits!, T, expected);
  });
  afterAll(async () => pair?.release());

  it.each(['chain', 'eagle2'])('%s: first emitted token ~ target softmax', async (policy) => {
    const counts = new Float64Array(expected.length);
    let stepsWithAcceptance = 0;
    const runner = new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { batch: BATCH, kmax: BATCH * 8 }),
        batch: BATCH,
        kmax: BATCH * 8,
        maxNewTokens: 3,
        temperature: T,
        seed: 2024,
        eosTokenIds: pair.target.info.eosTokenIds,
        onStep: (e) => {
          expectConsistentEvent(e);
          for (const r of e.requests) if (r.accepted.length > 0) stepsWithAcceptance++;
        },
      },
      Array.from({ length: REQUESTS }, (_, i) => ({ id: `s${i}`, promptTokens: PROMPT })),
    );
    const { results } = await runner.run();
    for (const r of results) counts[r.tokens[0]]++;
    const fit = chiSquareFit(counts, expected);
    expect(fit.statistic, JSON.stringify(fit)).toBeLessThanOrEqual(fit.critical);
    // The draft proposals must actually have been accepted some of the time for this to test anything.
    expect(stepsWithAcceptance).toBeGreaterThan(REQUESTS / 10);
  });
});
