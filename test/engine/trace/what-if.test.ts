// What-if re-scoring on real greedy runs of the random pair, recorded with their expansions (the
// `trace what-if` command on such a run: test/cli/commands/trace-what-if.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceContents } from '../../../src/engine/trace/parse.js';
import { rescoreTrace } from '../../../src/engine/trace/what-if.js';
import { gateOutcome, type RunMetrics } from '../../../src/shared/events.js';
import { loadFixturePair, type FixturePair } from '../fixtures/pair.js';
import { KV_ROWS, recordRun } from './recorded-run.js';

const BATCH = 4;

describe('what-if re-scoring', () => {
  let pair: FixturePair;
  const runs = new Map<string, { trace: TraceContents; live: RunMetrics; file: string }>();
  const base = { batch: BATCH, requests: 6, maxNewTokens: 18, temperature: 0, seed: 1 } as const;

  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: BATCH, maxLength: KV_ROWS });
    runs.set('eagle2', await recordRun(pair, { ...base, policy: 'eagle2', kmax: 20, shape: { depth: 4, topk: 3, tokens: 4 } }));
    runs.set('chain', await recordRun(pair, { ...base, policy: 'chain', kmax: 16, chainLength: 3 }));
    runs.set(
      'echo',
      await recordRun(pair, { ...base, policy: 'echo', kmax: 14, taus: { '0': 0.3, '2': 0.2 }, shape: { depth: 3, topk: 3, tokens: 5 }, maxDepth: 5, maxWidth: 3 }),
    );
  });
  afterAll(async () => pair?.release());

  for (const policy of ['eagle2', 'chain', 'echo']) {
    it(`reproduces the recorded ${policy} run exactly under its own settings`, () => {
      const { trace, live } = runs.get(policy)!;
      expect(trace.error).toBeUndefined();
      expect(trace.steps[0].requests[0].expansions?.length).toBeGreaterThan(0);
      const r = rescoreTrace(trace);
      expect(r.decidedSteps).toBe(trace.steps.length);
      expect(r.undecidedRequestSteps).toBe(0);
      r.steps.forEach((s, i) => {
        const recorded = trace.steps[i];
        expect(s.verifiedTokens).toBe(recorded.verifiedTokens);
        expect(s.requests.map((q) => q.acceptedLength)).toEqual(recorded.requests.map((q) => q.accepted.length));
        expect(s.requests.map((q) => q.emittedLength)).toEqual(recorded.requests.map((q) => q.emitted.length));
      });
      expect(r.metrics).toEqual({
        meanAcceptedTokens: live.meanAcceptedTokens,
        meanAcceptanceLength: live.meanAcceptanceLength,
        draftUtilisation: live.draftUtilisation,
        acceptancePerPosition: live.acceptancePerPosition,
        verifiedTokensPerStep: live.verifiedTokensPerStep,
      });
      // The synthetic pair accepts some drafts, so this compares real numbers, not zeros.
      expect(live.meanAcceptedTokens).toBeGreaterThan(0);
    });
  }

  it('records how many requests waited at each step: ECHO weighs its tokens by it once none do', () => {
    const waiting = runs.get('echo')!.trace.steps.map((s) => s.waiting);
    expect(waiting[0]).toBe(base.requests - BATCH);
    expect(waiting.at(-1)).toBe(0);
    for (let i = 1; i < waiting.length; i++) expect(waiting[i]!).toBeLessThanOrEqual(waiting[i - 1]!);
    // Each request's weight is on the step's record once none wait, the slowest one's 1; none before.
    for (const step of runs.get('echo')!.trace.steps) {
      const weights = step.requests.map((r) => r.drainWeight);
      if (step.waiting! > 0) expect(weights.every((w) => w === undefined)).toBe(true);
      else expect(Math.max(...weights.map((w) => w!))).toBe(1);
    }
  });

  it('re-scores a smaller K_max from the recorded trees, within the cap', () => {
    const { trace } = runs.get('eagle2')!;
    const r = rescoreTrace(trace, { kmax: BATCH + 2 });
    expect(r.decidedSteps).toBe(trace.steps.length); // a smaller tree only needs recorded expansions
    for (const s of r.steps) expect(s.verifiedTokens).toBeLessThanOrEqual(BATCH + 2);
    expect(r.metrics.verifiedTokensPerStep).toBeLessThan(rescoreTrace(trace).metrics.verifiedTokensPerStep);
  });

  it('re-scores ECHO under other thresholds, deciding what the recording covers', () => {
    const { trace } = runs.get('echo')!;
    const strict = rescoreTrace(trace, { taus: { '0': 0.95, '2': 0.95 } });
    expect(strict.settings).toEqual({ taus: { '0': 0.95, '2': 0.95 } });
    expect(strict.steps).toHaveLength(trace.steps.length);
    for (const s of strict.steps) {
      if (s.decided) expect(s.verifiedTokens).toBeLessThanOrEqual(s.kmax);
      else expect(s.reason).toMatch(/which the recording did not draft|candidates per node/);
    }
    // A request truncated at depth 0 never expanded its depth-0 nodes; letting it through the
    // gate makes it deepen into nodes the recording lacks, so that step must be undecided.
    const truncatedAtRoot = trace.steps.findIndex((s) => s.requests.some((r) => r.gates.some((g) => g.depth === 0 && gateOutcome(g) === 'truncate')));
    expect(truncatedAtRoot).toBeGreaterThanOrEqual(0);
    const lenient = rescoreTrace(trace, { taus: { '0': 0, '2': 0 } });
    expect(lenient.steps[truncatedAtRoot].decided).toBe(false);
    expect(lenient.steps[truncatedAtRoot].reason).toMatch(/\(depth 1\), which the recording did not draft/);
  });

  it('says which steps it cannot decide when a schedule drafts past the recording', () => {
    const { trace } = runs.get('chain')!;
    const r = rescoreTrace(trace, { chainLength: 6, kmax: 28 });
    const undecided = r.steps.filter((s) => !s.decided);
    expect(undecided.length).toBeGreaterThan(0);
    expect(undecided[0].reason).toMatch(/would expand the node at path \[[\d,]+\] \(depth 3\), which the recording did not draft/);
    expect(r.decidedSteps + undecided.length).toBe(trace.steps.length);
  });

  it('refuses sampled runs and traces without expansions', () => {
    const { trace } = runs.get('chain')!;
    const sampled = { ...trace, header: { ...trace.header, config: { ...trace.header.config, temperature: 0.7 } } };
    expect(() => rescoreTrace(sampled)).toThrow(/needs a greedy run \(temperature 0\); this trace ran at temperature 0\.7/);
    const plain = { ...trace, header: { ...trace.header, recordCandidates: false } };
    expect(() => rescoreTrace(plain)).toThrow(/recorded without candidate expansions/);
  });
});
