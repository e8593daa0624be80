// The report's explanation of echo against static: what it names as the cost where echo misses.
import { describe, expect, it } from 'vitest';
import type { Bound, BudgetExplanation } from '../../../src/engine/metrics/budget-explanation.js';
import { diagnose } from '../../../src/output/report/explain-section.js';

function bound(emitted: number, ms: number): Bound {
  return { accepted: emitted / 2, verifiedTokens: emitted, emitted, ms, throughput: emitted / (ms / 1000), acceptedPerVerified: 0.5 };
}

/** A run that emitted `emitted` tokens in `ms`, `draftMs` of them drafting; gates with its random bound when given. */
function run(emitted: number, ms: number, draftMs: number, random?: number): BudgetExplanation {
  return {
    steps: 10, requestSteps: 40, candidatesSeen: true, unknownVerdicts: 0, drafted: 100, verifiedDraft: 50, acceptedDraft: 25, reach: 40, byDepth: [], byConfidence: [],
    draft: { forwards: 20, forwardsPerStep: 2, ms: draftMs, share: draftMs / ms },
    gates: random === undefined ? null : { checks: 40, passes: 30, waived: 0, keepRate: 0.75, keptAccepted: 20, falseKeeps: 10, falseCuts: 3, rightCuts: 7, unknown: 0, lostTokens: 2, keptRejectedNodes: 12 },
    actual: bound(emitted, ms),
    oracle: bound(emitted * 1.2, ms),
    random: random === undefined ? null : bound(emitted, random),
    freeDrafting: bound(emitted, ms - draftMs),
    hostMsPerStep: null,
  };
}

const row = (policy: string, explanation: BudgetExplanation) => ({ batch: 8, kmax: 24, policy, explanation });

describe("echo against static in the report", () => {
  it('names drafting when it is what makes echo slower per token', () => {
    const text = diagnose(8, row('echo', run(100, 1200, 300, 1150)), row('static', run(100, 1000, 100)), { ratio: 0.9, band: 0.02 }, 'ms');
    expect(text).toMatch(/a miss/);
    expect(text).toMatch(/Why it misses: drafting: echo's drafting costs \+20\.0 % of static's time per token, the rest \+0\.0 %/);
    // echo (100 tokens in 1.2 s) is slower than a random gate at its keep rate (1.15 s).
    expect(text).toMatch(/the confidence signal buys −4\.2 %/);
    expect(text).toMatch(/its gates do no better than a random gate at the same keep rate/);
  });

  it("says what the engine's own work outside the forwards cost each a step on the wall, where the steps recorded it", () => {
    const timed = (host: number | null) => ({ ...run(100, 1000, 100), hostMsPerStep: host });
    expect(diagnose(8, row('echo', timed(0.71)), row('static', timed(0.07)), { ratio: 0.95, band: 0.02 }, 'ms')).toMatch(
      /Outside onnxruntime's run\(\) calls the engine worked 0\.71 ms a step on the wall for echo and 0\.07 for static/,
    );
    expect(diagnose(8, row('echo', timed(null)), row('static', timed(0.07)), { ratio: 0.95, band: 0.02 }, 'ms')).not.toMatch(/Outside onnxruntime/);
  });

  it('names the tokens its steps buy when drafting costs the same, and says nothing of a miss where echo wins', () => {
    expect(diagnose(8, row('echo', run(100, 1200, 100, 1300)), row('static', run(100, 1000, 100)), { ratio: 0.85, band: 0 }, 'ms')).toMatch(/Why it misses: the tokens its steps buy: the rest of echo's time per token .* is \+20\.0 % of static's, drafting \+0\.0 %\.$/);
    const win = diagnose(8, row('echo', run(120, 1000, 100, 1100)), row('static', run(100, 1000, 100)), { ratio: 1.2, band: 0.02 }, 'ms');
    expect(win).not.toMatch(/miss/);
    expect(win).toMatch(/echo ÷ static 1\.200 \(rounds' median; 1\.200 on the explained steps\)/);
  });

  it('says when both ran the same steps, so that echo\'s fewer request-steps shortened nothing', () => {
    const drained = run(100, 1000, 100, 1100);
    drained.requestSteps = 32;
    const text = diagnose(64, row('echo', drained), row('static', run(100, 1000, 100)), { ratio: 1.0, band: 0 }, 'ms');
    expect(text).toMatch(/Both ran 10 steps: the batch's slowest request sets that count, so echo's \+25\.0 % more tokens a request-step \(32 request-steps against 40\) do not shorten the run here: what echo gains is cheaper steps, not fewer/);
    expect(diagnose(8, row('echo', run(100, 1000, 100, 1100)), row('static', run(100, 1000, 100)), { ratio: 1.0, band: 0 }, 'ms')).not.toMatch(/Both ran/);
  });

  it('calls a ratio inside the A/A band a miss with no gain beyond noise, and gates that cut nothing inactive', () => {
    const quiet = run(100, 1000, 100, 1000);
    quiet.gates = { ...quiet.gates!, passes: 40, keepRate: 1 };
    const text = diagnose(8, row('echo', quiet), row('static', run(100, 1000, 100)), { ratio: 1.01, band: 0.03 }, 'ms');
    expect(text).toMatch(/a miss<\/b>: within the A\/A band 1 ± 0\.030, no gain beyond noise/);
    expect(text).toMatch(/Its gates kept every one of their 40 checks .*the confidence signal decided nothing here/);
    expect(text).toMatch(/its gates did not act\.$/);
  });
});
