import { describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../src/shared/events.js';
import { compareRuns } from '../../src/shared/step-costs.js';

const metrics = (over: Partial<RunMetrics>): RunMetrics => ({
  policy: 'x',
  steps: 97,
  requests: 256,
  generatedTokens: 8192,
  wallMs: 2800,
  throughput: 2900,
  meanAcceptedTokens: 0.4,
  meanAcceptanceLength: 1.4,
  draftUtilisation: 0.7,
  verifiedTokensPerStep: 90,
  acceptancePerPosition: [],
  paddingWaste: 0,
  tpotP50Ms: 20,
  tpotP99Ms: 30,
  ...over,
});

describe('compareRuns', () => {
  const kept = metrics({ policy: 'static', steps: 97, throughput: 2900, stepTime: { draftMs: 3.2, verifyMs: 15, prefillMs: 8.5, otherMs: 1 } });

  it('splits a throughput ratio into the steps taken and what each cost', () => {
    const run = metrics({ policy: 'echo', steps: 90, throughput: 3000, stepTime: { draftMs: 3.9, verifyMs: 15, prefillMs: 9, otherMs: 1 } });
    const c = compareRuns(run, kept);
    expect(c.throughput).toBeCloseTo(3000 / 2900, 12);
    expect(c.steps).not.toBeNull();
    expect(c.steps!.run).toBe(90);
    expect(c.steps!.base).toBe(97);
    expect(c.steps!.stepTime).toBeCloseTo(28.9 / 27.7, 12);
    // 97 steps of 27.7 ms against 90 of this run's 9 ms of prefill plus static's 19.2 ms of decoding.
    expect(c.steps!.sched).toBeCloseTo((97 * 27.7) / (90 * (9 + 19.2)), 12);
  });

  it('compares only throughput when the runs did different work or carry no time split', () => {
    const other = metrics({ policy: 'echo', generatedTokens: 4096, throughput: 1450, stepTime: kept.stepTime });
    expect(compareRuns(other, kept)).toEqual({ throughput: 0.5, steps: null });
    const untimed = metrics({ policy: 'echo', throughput: 2900 });
    expect(compareRuns(untimed, kept).steps).toBeNull();
  });
});
