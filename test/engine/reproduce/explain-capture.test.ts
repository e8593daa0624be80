// The budget explanation's capture on a real greedy run of the random pair: the wrapped run takes
// exactly the steps of the plain one (trees, grants, verdicts), and the candidates it keeps are
// those the trace recorder copies inside the step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainBudget } from '../../../src/engine/metrics/budget-explanation.js';
import { createPolicy } from '../../../src/engine/policy/index.js';
import { CandidateCapture } from '../../../src/engine/reproduce/explain-capture.js';
import { ExpansionRecorder } from '../../../src/engine/trace/expansions.js';
import type { RunConfig } from '../../../src/shared/config.js';
import type { StepEvent } from '../../../src/shared/events.js';
import type { TraceStep } from '../../../src/shared/trace-schema.js';
import { loadFixturePair, type FixturePair } from '../fixtures/pair.js';
import { greedyRunner, KV_ROWS } from '../trace/recorded-run.js';

const BATCH = 4;
const config: RunConfig = { policy: 'echo', batch: BATCH, requests: 6, maxNewTokens: 16, temperature: 0, seed: 1, kmax: 14, taus: { '0': 0.3, '2': 0.2 }, shape: { depth: 3, topk: 3, tokens: 5 }, maxDepth: 5, maxWidth: 3 };

/** A step without its clock readings: what the policy decided and the target verified. */
const decisions = (e: StepEvent) => ({ ...e, t: 0, timings: null });

describe('candidate capture', () => {
  let pair: FixturePair;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: BATCH, maxLength: KV_ROWS });
  });
  afterAll(async () => pair?.release());

  it("leaves the run as it was and sees the candidates the trace recorder copies, cut ones included", async () => {
    const plain: StepEvent[] = [];
    await greedyRunner(pair, config, createPolicy('echo', { ...config }), (e) => plain.push(e), 7).run();
    const capture = new CandidateCapture();
    const watched: StepEvent[] = [];
    await greedyRunner(pair, config, capture.wrap(createPolicy('echo', { ...config })), (e) => (watched.push(e), capture.onStep(e)), 7).run();
    const recorder = new ExpansionRecorder();
    const recorded: TraceStep[] = [];
    await greedyRunner(pair, config, recorder.wrap(createPolicy('echo', { ...config })), (e) => recorded.push(recorder.annotate(e)), 7).run();

    expect(watched.map(decisions)).toEqual(plain.map(decisions));
    const steps = capture.explainSteps();
    expect(steps.map((s) => s.requests.map((r) => r.expansions))).toEqual(recorded.map((s) => s.requests.map((r) => r.expansions)));

    const x = explainBudget(steps, { maxNewTokens: config.maxNewTokens });
    // The explanation counts the run's own accepted tokens, and the drafts held at least as many.
    expect(x.actual.accepted).toBe(plain.reduce((a, s) => a + s.requests.reduce((b, r) => b + r.accepted.length, 0), 0));
    expect(x.reach).toBeGreaterThanOrEqual(x.actual.accepted);
    expect(x.oracle.accepted).toBeGreaterThanOrEqual(x.actual.accepted);
    expect(x.oracle.verifiedTokens).toBeLessThanOrEqual(x.actual.verifiedTokens + x.reach);
    // echo puts only granted nodes in its tree: candidates outside it are seen only through the capture.
    expect(x.drafted).toBeGreaterThan(x.byDepth.reduce((a, d) => a + d.verified, 0));
    expect(x.gates!.checks).toBe(plain.reduce((a, s) => a + s.requests.reduce((b, r) => b + r.gates.length, 0), 0));
  }, 120_000);
});
