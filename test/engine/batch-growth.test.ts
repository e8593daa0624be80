// The batch knob past the KV slots a pair was loaded with: raising it reallocates both models' KV
// buffers between steps (requests in flight keep their rows), lowering it frees places without a
// reload, and the run stays lossless against ar with a trace that reads back whole.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { computeRunMetrics } from '../../src/engine/metrics/run-metrics.js';
import { createPolicy } from '../../src/engine/policy/index.js';
import { Refusal } from '../../src/engine/refusal.js';
import { Runner, type SlotGrowth } from '../../src/engine/run/runner.js';
import { buildTraceHeader } from '../../src/engine/trace/header.js';
import { readTrace } from '../../src/engine/trace/read.js';
import { TraceRecorder } from '../../src/engine/trace/writer.js';
import type { Knobs, RunConfig } from '../../src/shared/config.js';
import type { StepEvent } from '../../src/shared/events.js';
import { expectConsistentEvent } from './fixtures/event-invariants.js';
import { expectSameAsAr } from './fixtures/lossless.js';
import { loadFixturePair, randomPrompts, runGreedy, type FixturePair } from './fixtures/pair.js';
import { tempDir } from './trace/fixtures.js';

const KV_ROWS = 384;
const pairs: FixturePair[] = [];
afterAll(async () => {
  for (const p of pairs) await p.release();
});

/** Steps `runner` until `steps` steps have run (or the run ends). */
async function stepTo(runner: Runner, events: StepEvent[], steps: number): Promise<void> {
  while (events.length < steps && (await runner.next()) !== null);
}

describe.each([
  { draft: 'perturbed' as const, policy: 'eagle2', schedule: [4, 32, 2] },
  { draft: 'head' as const, policy: 'echo', schedule: [2, 12, 1] },
])('batch $schedule on a pair loaded with $schedule.0 slots ($draft draft, $policy)', ({ draft, policy, schedule }) => {
  const [first, raised, lowered] = schedule;
  const requests = raised + 16;
  const config: RunConfig = { policy, batch: first, kmax: 2 * raised, requests, maxNewTokens: 12, temperature: 0, seed: 3, ...(policy === 'echo' ? { taus: { 0: 0.1, 2: 0.2 } } : {}) };
  const workload = randomPrompts(requests, 21);

  it('grows the KV slots between steps, frees places on the way down, stays lossless and replays', async () => {
    const pair = await loadFixturePair({ draft, slots: first, maxLength: KV_ROWS });
    pairs.push(pair);
    const ar = await runGreedy(pair, createPolicy('ar', { batch: first, kmax: first }), { batch: first, kmax: first, maxNewTokens: config.maxNewTokens }, workload);

    const file = path.join(tempDir(), `${draft}-batch.jsonl`);
    const recorder = new TraceRecorder(file, await buildTraceHeader({ config, draftDir: pair.draftDir, targetDir: pair.targetDir, provider: 'cpu', writer: 'test' }));
    const events: StepEvent[] = [];
    const growth: SlotGrowth[] = [];
    const runner = new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { ...config }),
        batch: first,
        kmax: config.kmax,
        maxNewTokens: config.maxNewTokens,
        temperature: 0,
        seed: config.seed,
        eosTokenIds: pair.target.info.eosTokenIds,
        maxLength: KV_ROWS,
        slotLimit: { max: raised, beyond: 'the test allows no more' },
        onSlotsGrow: (g) => growth.push(g),
        onStep: (e) => {
          expectConsistentEvent(e);
          events.push(structuredClone(e));
          recorder.step(e);
        },
      },
      workload,
    );
    const turn = (knobs: Knobs) => {
      runner.setKnobs(knobs);
      recorder.knobs(events.length, knobs); // as the studio records a change: from the next step on
    };

    await stepTo(runner, events, 3);
    expect(pair.target.capacity).toBe(first);
    turn({ batch: raised });
    await stepTo(runner, events, 6);
    // Reallocated, not reloaded: the same sessions hold more slots, and the requests admitted
    // before the raise went on in their old slots.
    expect(pair.target.capacity).toBe(raised);
    expect(pair.draft.capacity).toBe(raised);
    expect(growth[0]).toMatchObject({ from: first, to: raised, done: 0 });
    expect(growth.at(-1)!.done).toBe(growth.at(-1)!.total);
    expect(Math.max(...events.slice(3).map((e) => e.requests.length))).toBe(raised);
    turn({ batch: lowered });
    const summary = await runner.run();
    const metrics = recorder.finish('finished', { wallMs: summary.wallMs });
    // Lowering kept the buffers: no reallocation on the way down.
    expect(pair.target.capacity).toBe(raised);
    expect(growth.every((g) => g.to === raised)).toBe(true);
    // Once the requests beyond the lowered batch finished, no step runs more than it.
    const settled = events.findIndex((e, i) => i > 6 && e.requests.length <= lowered);
    expect(settled).toBeGreaterThan(0);
    for (const e of events.slice(settled)) expect(e.requests.length).toBeLessThanOrEqual(lowered);

    expect(summary.results).toHaveLength(requests);
    await expectSameAsAr(`${policy} at batch ${schedule.join(' → ')}`, summary, ar, workload, pair.target);

    const trace = await readTrace(file);
    expect(trace.error).toBeUndefined();
    expect(trace.steps).toEqual(events);
    expect(trace.knobs).toEqual([
      { type: 'knobs', step: 3, knobs: { batch: raised } },
      { type: 'knobs', step: 6, knobs: { batch: lowered } },
    ]);
    expect(computeRunMetrics(trace.steps, { policy, wallMs: metrics.wallMs }).metrics).toEqual(metrics);
  });

  it('refuses a batch past the slot limit with its reason, and keeps the old one', async () => {
    const pair = await loadFixturePair({ draft, slots: first, maxLength: KV_ROWS });
    pairs.push(pair);
    const runner = new Runner(
      { target: pair.target, draft: pair.draft, policy: createPolicy(policy, { ...config }), batch: first, kmax: config.kmax, maxNewTokens: 4, temperature: 0, seed: 1, eosTokenIds: [], maxLength: KV_ROWS, slotLimit: { max: raised, beyond: 'memory says no' } },
      workload,
    );
    expect(() => runner.setKnobs({ batch: raised + 1 })).toThrow(new Refusal(`batch ${raised + 1} is more than the ${raised} KV slots this pair can have: memory says no`));
    // Without a limit, the loaded slots are the limit, said so.
    const fixed = new Runner({ target: pair.target, draft: pair.draft, policy: createPolicy(policy, { ...config }), batch: first, kmax: config.kmax, maxNewTokens: 4, temperature: 0, seed: 1, eosTokenIds: [] }, workload);
    expect(() => fixed.setKnobs({ batch: first + 1 })).toThrow(/loaded with \d+ KV slots and this run cannot reallocate them/);
    runner.setKnobs({ batch: raised });
    await runner.next();
    expect(pair.target.capacity).toBe(raised);
  });
});
