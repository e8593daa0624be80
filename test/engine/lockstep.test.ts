import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLockstep } from '../../src/engine/run/lockstep.js';
import { createPolicy } from '../../src/engine/policy/index.js';
import { Runner, type WorkItem } from '../../src/engine/run/runner.js';
import type { StepEvent } from '../../src/shared/events.js';
import { loadFixturePair, randomPrompts, type FixturePair } from './fixtures/pair.js';

const BATCH = 3;
const KMAX = 10;

describe('runLockstep', () => {
  let pair: FixturePair;
  const workload: WorkItem[] = randomPrompts(7, 21);
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 2 * BATCH });
  });
  afterAll(async () => pair?.release());

  function runner(policy: string, onStep?: (e: StepEvent) => void): Runner {
    return new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { batch: BATCH, kmax: KMAX }),
        batch: BATCH,
        kmax: KMAX,
        maxNewTokens: 12,
        temperature: 0,
        seed: 1,
        eosTokenIds: pair.target.info.eosTokenIds,
        onStep,
      },
      workload,
    );
  }

  it('takes turns one step each; every run emits what it emits alone, on its own slots', async () => {
    const alone = { static: await runner('static').run(), chain: await runner('chain').run() };
    const turns: string[] = [];
    const [staticRun, chainRun] = await runLockstep([runner('static', () => turns.push('static')), runner('chain', () => turns.push('chain'))]);
    for (const [run, solo] of [
      [staticRun, alone.static],
      [chainRun, alone.chain],
    ] as const) {
      expect(run.results.map((r) => r.tokens)).toEqual(solo.results.map((r) => r.tokens));
      expect(run.steps).toBe(solo.steps);
    }
    // Strict alternation while both run; the one with more steps finishes alone.
    const both = Math.min(staticRun.steps, chainRun.steps);
    expect(turns.slice(0, 2 * both)).toEqual(Array.from({ length: 2 * both }, (_, i) => (i % 2 === 0 ? 'static' : 'chain')));
    expect(turns.slice(2 * both).every((t) => t === (staticRun.steps > chainRun.steps ? 'static' : 'chain'))).toBe(true);
    // Every slot was given back.
    for (const model of [pair.target, pair.draft]) {
      const slots = Array.from({ length: 2 * BATCH }, () => model.allocSlot());
      for (const slot of slots) model.freeSlot(slot);
    }
  });

  it('counts only its own steps on each run\'s clock', async () => {
    const steps = { static: [] as StepEvent[], chain: [] as StepEvent[] };
    const start = performance.now();
    const [staticRun, chainRun] = await runLockstep([runner('static', (e) => steps.static.push(e)), runner('chain', (e) => steps.chain.push(e))]);
    const elapsed = performance.now() - start;
    // Were the clocks not held during the other's turns, each would read about the whole elapsed time.
    expect(staticRun.wallMs + chainRun.wallMs).toBeLessThanOrEqual(elapsed + 1);
    for (const [run, events] of [
      [staticRun, steps.static],
      [chainRun, steps.chain],
    ] as const) {
      const own = events.reduce((sum, e) => sum + e.timings.totalMs, 0);
      expect(run.wallMs).toBeGreaterThanOrEqual(own - 1e-6);
      // Request latencies and step times are on the same clock.
      expect(events.at(-1)!.t).toBeLessThanOrEqual(run.wallMs + 1e-6);
      for (const r of run.results) expect(r.finishedMs).toBeLessThanOrEqual(run.wallMs + 1e-6);
    }
  });
});
