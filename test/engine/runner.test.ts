import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availablePolicies, createPolicy } from '../../src/engine/policy/index.js';
import type { ModelSession } from '../../src/engine/model/types.js';
import { Runner, warmUpDecode, type RunSummary, type WorkItem } from '../../src/engine/run/runner.js';
import type { StepEvent } from '../../src/shared/events.js';
import { expectConsistentEvent } from './fixtures/event-invariants.js';
import { expectSameAsAr } from './fixtures/lossless.js';
import { loadFixturePair, randomPrompts, runGreedy, type FixturePair } from './fixtures/pair.js';

const MAX_NEW = 20;

function runPolicy(pair: FixturePair, policy: string, batch: number, kmax: number, workload: WorkItem[], onStep?: (e: StepEvent) => void): Promise<RunSummary> {
  return runGreedy(pair, createPolicy(policy, { batch, kmax }), { batch, kmax, maxNewTokens: MAX_NEW }, workload, onStep);
}

/** Resolves `parked(n)` once a run's loop has parked (paused, no single step left) n times. */
function parkWatcher() {
  let parks = 0;
  const waiting: { n: number; resolve: () => void }[] = [];
  return {
    onPark(parked: boolean) {
      if (!parked) return;
      parks++;
      for (const w of waiting.splice(0)) (parks >= w.n ? w.resolve() : waiting.push(w));
    },
    parked: (n: number) => new Promise<void>((resolve) => (parks >= n ? resolve() : waiting.push({ n, resolve }))),
  };
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
  // Every registered policy that drafts (the ECHO family too, once registered).
  for (const policy of availablePolicies().filter((p) => p !== 'ar')) {
    for (const batch of [1, 4, 16]) for (const kmax of [batch, batch * 4 + 3, batch * 61]) cases.push([policy, batch, kmax]);
  }

  it.each(cases)('%s at batch %i, K_max %i emits exactly the tokens of ar', async (policy, batch, kmax) => {
    let accepted = 0;
    let maxVerified = 0;
    const run = await runPolicy(pair, policy, batch, kmax, workload, (e) => {
      expectConsistentEvent(e);
      maxVerified = Math.max(maxVerified, e.verifiedTokens);
      for (const r of e.requests) accepted += r.accepted.length;
    });
    expect(maxVerified).toBeLessThanOrEqual(kmax);
    await expectSameAsAr(`${policy} batch ${batch} K_max ${kmax}`, run, reference, workload, pair.target);
    // With K_max = batch nothing can be drafted; otherwise the perturbed draft must get some
    // tokens accepted — except under ddd, whose beam-mass threshold may stop a random model's
    // flat drafts before depth 0.
    if (kmax === batch) expect(accepted).toBe(0);
    else if (policy !== 'ddd') expect(accepted).toBeGreaterThan(0);
  });

  it('a warm-up decode leaves every slot free and the run after it token-identical to ar', async () => {
    let warmSteps = 0;
    const options = {
      target: pair.target,
      draft: pair.draft,
      policy: createPolicy('chain', { batch: 4, kmax: 19, chainLength: 3 }),
      batch: 4,
      kmax: 19,
      maxNewTokens: MAX_NEW,
      temperature: 0,
      seed: 1,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength: pair.target.maxLength,
      onStep: () => warmSteps++,
    };
    await warmUpDecode(options, workload, 5);
    expect(warmSteps).toBe(0); // nothing leaves the warm-up
    for (const model of [pair.target, pair.draft!]) {
      const slots = Array.from({ length: model.capacity }, () => model.allocSlot());
      for (const slot of slots) model.freeSlot(slot);
    }
    const run = await runPolicy(pair, 'chain', 4, 19, workload);
    await expectSameAsAr('chain after a warm-up', run, reference, workload, pair.target);
  });
});

describe.each(['head', 'head-subset'] as const)('lossless greedy with an EAGLE-3 head (%s)', (kind) => {
  let pair: FixturePair;
  const workload = randomPrompts(12, 7);
  let reference: RunSummary;
  let accepted = 0;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: kind, slots: 9 });
    reference = await runPolicy(pair, 'ar', 4, 4, workload);
  });
  afterAll(async () => pair?.release());

  const cases: [string, number, number][] = [];
  for (const policy of availablePolicies().filter((p) => p !== 'ar')) {
    for (const batch of [1, 8]) cases.push([policy, batch, batch * 4 + 3]);
  }
  it.each(cases)('%s at batch %i, K_max %i emits exactly the tokens of ar', async (policy, batch, kmax) => {
    const run = await runPolicy(pair, policy, batch, kmax, workload, (e) => {
      expectConsistentEvent(e);
      for (const r of e.requests) accepted += r.accepted.length;
    });
    await expectSameAsAr(`${policy} with a head, batch ${batch} K_max ${kmax}`, run, reference, workload, pair.target);
  });
  it('kept some of the head’s drafts in the runs above', () => {
    // The head agrees with its target where the target repeats itself: without kept drafts the
    // head's commit of accepted tokens would go untested.
    expect(accepted).toBeGreaterThan(0);
  });

  it('samples with a head too (temperature 0.8): every request reaches its length, the head fed at every step', async () => {
    const batch = 4;
    const kmax = 20;
    const runner = new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy('static', { batch, kmax }),
        batch,
        kmax,
        maxNewTokens: MAX_NEW,
        temperature: 0.8,
        seed: 3,
        eosTokenIds: [],
        maxLength: pair.target.maxLength,
        onStep: (e) => expectConsistentEvent(e),
      },
      workload,
    );
    const summary = await runner.run();
    for (const r of summary.results) expect(r.tokens.length).toBe(MAX_NEW);
  });
});

describe('runner behaviour on a pair whose draft is the target itself', () => {
  let pair: FixturePair;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'same', slots: 4 });
  });
  afterAll(async () => pair?.release());

  function runner(policy: string, workload: WorkItem[], options: { batch?: number; kmax?: number; eos?: number[]; maxNew?: number; onStep?: (e: StepEvent) => void } = {}) {
    const batch = options.batch ?? 2;
    const kmax = options.kmax ?? 16;
    return new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { batch, kmax }),
        batch,
        kmax,
        maxNewTokens: options.maxNew ?? MAX_NEW,
        temperature: 0,
        seed: 1,
        eosTokenIds: options.eos ?? pair.target.info.eosTokenIds,
        onStep: options.onStep,
      },
      workload,
    );
  }

  it('accepts every chain token when the draft is the target', async () => {
    const steps: StepEvent[] = [];
    await runner('chain', randomPrompts(4, 9), { onStep: (e) => steps.push(e) }).run();
    let drafted = 0;
    for (const e of steps) {
      for (const r of e.requests) {
        const verified = r.nodes.filter((n) => n.verified && n.depth >= 0).length;
        drafted += verified;
        expect(r.accepted.length).toBe(verified);
      }
    }
    expect(drafted).toBeGreaterThan(20);
    // Draft forwards as modelled clocks price them. All accepted, a request's next root layer also
    // forwards its chain's last token, which the draft never saw: two rows, or one on its first
    // step (prefill saw the prompt). Each deeper layer forwards one node per chain that deep.
    const seen = new Set<string>();
    for (const e of steps) {
      const rootRows = e.requests.reduce((sum, r) => sum + (seen.has(r.requestId) ? 2 : 1), 0);
      for (const r of e.requests) seen.add(r.requestId);
      const chains = e.requests.map((r) => r.nodes.length - 1);
      expect(e.draftRows![0]).toBe(rootRows);
      expect(e.draftRequests![0]).toBe(e.requests.length);
      for (let d = 1; d < Math.max(...chains); d++) {
        expect(e.draftRows![d]).toBe(chains.filter((c) => c > d).length);
        expect(e.draftRequests![d]).toBe(chains.filter((c) => c > d).length);
      }
    }
    expect(steps.some((e) => e.draftRows![0] === 2 * e.requests.length)).toBe(true);
  });

  it("records each step's longest committed past: a request's grows by what it emitted the step before", async () => {
    const steps: StepEvent[] = [];
    const [prompt] = randomPrompts(1, 5);
    await runner('chain', [prompt], { batch: 1, maxNew: 24, onStep: (e) => steps.push(e) }).run();
    expect(steps.length).toBeGreaterThan(3);
    // Prefill commits the prompt before its last token (a BOS may precede it): that token is the first root.
    expect(steps[0].past).toBeGreaterThanOrEqual(prompt.promptTokens.length - 1);
    expect(steps[0].past).toBeLessThanOrEqual(prompt.promptTokens.length);
    for (let s = 1; s < steps.length; s++) expect(steps[s].past).toBe(steps[s - 1].past! + steps[s - 1].requests[0].emitted.length);
  });

  it('stops a request at its first EOS token, keeping it, for every policy alike', async () => {
    const workload = randomPrompts(3, 13);
    const free = await runner('ar', workload).run();
    // Pretend the token ar emits fourth for request 0 is the end-of-sequence token.
    const eos = free.results[0].tokens[3];
    for (const policy of ['ar', 'chain', 'eagle2']) {
      const { results } = await runner(policy, workload, { eos: [eos] }).run();
      for (let i = 0; i < results.length; i++) {
        const full = free.results[i].tokens;
        const cut = full.indexOf(eos);
        expect(results[i].tokens, policy).toEqual(cut === -1 ? full : full.slice(0, cut + 1));
        expect(results[i].finish).toBe(cut === -1 ? 'length' : 'eos');
      }
    }
  });

  it('keeps at most `batch` requests in flight, admits waiting ones as others retire, honours arrival times', async () => {
    const workload = randomPrompts(6, 21).map((w, i) => ({ ...w, arrivalMs: i === 5 ? 300 : 0 }));
    let maxInFlight = 0;
    const { results } = await runner('eagle2', workload, { batch: 2, kmax: 20, maxNew: 6, onStep: (e) => (maxInFlight = Math.max(maxInFlight, e.requests.length)) }).run();
    expect(maxInFlight).toBe(2);
    expect(results.map((r) => r.id)).toEqual(workload.map((w) => w.id));
    expect(results.every((r) => r.tokens.length === 6)).toBe(true);
    expect(results[5].admittedMs).toBeGreaterThanOrEqual(300);
    // Slots were all freed: the models can hand out every slot again.
    const slots = Array.from({ length: pair.target.capacity }, () => pair.target.allocSlot());
    slots.forEach((s) => pair.target.freeSlot(s));
  });

  it("prefills the draft's prompt only for requests a step drafts, and reports it as prefill", async () => {
    const workload = randomPrompts(3, 31);
    // Tokens of each draft forward, through a session that counts them.
    const draftForwards: number[] = [];
    const draft = new Proxy(pair.draft, {
      get(target, key) {
        if (key === 'forward') {
          return (entries: Parameters<ModelSession['forward']>[0], outputs: Parameters<ModelSession['forward']>[1]) => {
            draftForwards.push(entries.reduce((sum, e) => sum + e.tokens.length, 0));
            return target.forward(entries, outputs);
          };
        }
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as ModelSession;
    const run = (kmax: number, onStep?: (e: StepEvent) => void) =>
      new Runner(
        { target: pair.target, draft, policy: createPolicy('static', { batch: 3, kmax }), batch: 3, kmax, maxNewTokens: 6, temperature: 0, seed: 1, eosTokenIds: pair.target.info.eosTokenIds, onStep },
        workload,
      ).run();
    const ar = await runner('ar', workload, { batch: 3, kmax: 3, maxNew: 6 }).run();

    // K_max = batch leaves static no draft token: the draft never runs, not even a prefill.
    const idle = await run(3);
    expect(draftForwards).toEqual([]);
    expect(idle.results.map((r) => r.tokens)).toEqual(ar.results.map((r) => r.tokens));

    // One token to spare goes to the first request: the first step prefills its prompt alone, then
    // drafts its root. That prefill is the step's prefill time, not its drafting.
    const steps: StepEvent[] = [];
    const one = await run(4, (e) => steps.push(e));
    expect(draftForwards.slice(0, 2)).toEqual([workload[0].promptTokens.length - 1, 1]);
    expect(steps[0].draftRows).toEqual([1]);
    expect(steps[0].timings.prefillMs).toBeGreaterThan(0);
    expect(one.results.map((r) => r.tokens)).toEqual(ar.results.map((r) => r.tokens));
  });

  it('runs no draft forward under ar: its steps verify the roots alone', async () => {
    const events: StepEvent[] = [];
    await runner('ar', randomPrompts(3, 8), { batch: 3, kmax: 12, maxNew: 4, onStep: (e) => events.push(e) }).run();
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(e.draftRows).toBeUndefined();
      expect(e.verifiedTokens).toBe(e.requests.length);
    }
  });

  it('leaves time spent paused out of the run clock', async () => {
    const workload = randomPrompts(2, 5);
    const free = await runner('ar', workload, { batch: 2, kmax: 4, maxNew: 4 }).run();
    const events: StepEvent[] = [];
    const r = runner('ar', workload, { batch: 2, kmax: 4, maxNew: 4, onStep: (e) => events.push(e) });
    r.pause();
    const park = parkWatcher();
    const done = r.run({ onPark: park.onPark });
    r.stepOnce();
    await park.parked(2); // parked again after one step
    await new Promise((resolve) => setTimeout(resolve, 600)); // the paused time under test
    r.resume();
    const paused = await done;
    // The parked 600 ms would dwarf a few tiny-model steps; the clocks must not contain them.
    expect(paused.wallMs).toBeLessThan(free.wallMs + 500);
    expect(events.at(-1)!.t).toBeLessThan(free.wallMs + 500);
    for (const result of paused.results) expect(result.finishedMs).toBeLessThan(free.wallMs + 500);
  });

  it('pauses, single-steps, applies knobs between steps and stops', async () => {
    const events: StepEvent[] = [];
    const r = runner('chain', randomPrompts(4, 3), { batch: 2, kmax: 12, onStep: (e) => events.push(e) });
    r.pause();
    const park = parkWatcher();
    const done = r.run({ onPark: park.onPark });
    await park.parked(1);
    expect(events.length).toBe(0);
    r.stepOnce();
    r.stepOnce();
    await park.parked(2); // parks again only once both single steps ran
    expect(events.length).toBe(2);
    expect(() => r.setKnobs({ kmax: 1 })).toThrow('K_max (1) is below the batch size (2)');
    r.setKnobs({ kmax: 4 });
    r.stepOnce();
    await park.parked(3);
    expect(events.length).toBe(3);
    expect(events[2].kmax).toBe(4);
    expect(events[2].verifiedTokens).toBeLessThanOrEqual(4);
    r.stop();
    const summary = await done;
    expect(summary.stopped).toBe(true);
    expect(summary.steps).toBe(3);
    const slots = Array.from({ length: pair.draft.capacity }, () => pair.draft.allocSlot());
    slots.forEach((s) => pair.draft.freeSlot(s));
  });
});
