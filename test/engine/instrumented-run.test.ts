import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/engine/run/instrumented-run.js';
import { createPolicy } from '../../src/engine/policy/index.js';
import type { StepEvent } from '../../src/shared/events.js';
import { loadFixturePair, randomPrompts, type FixturePair } from './fixtures/pair.js';

describe('startRun measures', () => {
  let pair: FixturePair;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 2 });
  });
  afterAll(async () => pair?.release());

  it('splits each decode step into onnxruntime calls and the engine\'s own work; steps with prefill are left out', async () => {
    const config = { batch: 2, kmax: 8, maxNewTokens: 10, temperature: 0, seed: 1 };
    const events: StepEvent[] = [];
    const run = startRun(
      { pair: { target: pair.target, draft: pair.draft }, config, policy: createPolicy('static', config), workload: randomPrompts(5, 3) },
      { onStep: (e) => events.push(e) },
    );
    const { decodeSteps, stepMs } = run.measure(await run.runner.run());
    const decode = events.filter((e) => !e.timings.prefillMs);
    // Requests join the batch as others finish: some steps prefill, the rest decode.
    expect(decode.length).toBeGreaterThan(0);
    expect(decode.length).toBeLessThan(events.length);
    expect(stepMs).toHaveLength(events.length);
    expect(decodeSteps.modelMs).toEqual(decode.map((e) => e.timings.modelMs));
    decode.forEach((e, i) => {
      expect(decodeSteps.modelMs[i]).toBeGreaterThan(0);
      expect(decodeSteps.engineMs[i]).toBeGreaterThan(0);
      expect(decodeSteps.engineMs[i] + decodeSteps.modelMs[i]).toBeCloseTo(e.timings.totalMs, 9);
    });
  });
});
