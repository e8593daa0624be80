// The synthetic stream feeds the harness and the benchmark; it must satisfy the real schema.
import { describe, expect, it } from 'vitest';
import { StepEventSchema } from '../../../src/shared/messages.js';
import { SyntheticRun } from './syntheticSteps.js';

describe('SyntheticRun', () => {
  it('emits schema-valid steps whose budget sums to K_max and never exceeds it', () => {
    const run = new SyntheticRun({ batch: 16, kmax: 128 });
    for (let i = 0; i < 20; i += 1) {
      const step = run.next();
      expect(StepEventSchema.safeParse(step).success).toBe(true);
      const b = step.budget;
      expect(b.roots + b.base + b.depth + b.width + b.unused).toBe(step.kmax);
      expect(step.verifiedTokens).toBeLessThanOrEqual(step.kmax);
      const verified = step.requests.reduce((n, r) => n + r.nodes.filter((x) => x.verified).length, 0);
      expect(verified).toBe(step.verifiedTokens);
    }
  });
});
