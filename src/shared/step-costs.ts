// What a run's steps cost, and what a run would have taken had its steps cost another's: the
// "sched" ratio of the sweep, the ECHO bench and the studio's comparison.
import type { RunMetrics, StepTimeSplit } from './events.js';

/** A run's steps: their number and their mean time split, as RunMetrics has them. */
export type StepCosts = Pick<RunMetrics, 'steps' | 'stepTime'>;

/** Mean wall time of one step, prefill included. */
export function meanStepMs(t: StepTimeSplit): number {
  return t.draftMs + t.verifyMs + t.prefillMs + t.otherMs;
}

/**
 * The "sched" ratio: the run's throughput over the baseline's if each of the run's steps had cost
 * what the baseline's did (drafting, verification and the rest), its own prefill as it was. Both
 * runs generate the same tokens, so that is the baseline's time over the run's priced so: what
 * taking fewer (or more) steps buys, apart from what each step costs the run on this machine.
 * NaN when either run has no time split.
 */
export function atBaselineStepCost(run: StepCosts, base: StepCosts): number {
  if (!run.stepTime || !base.stepTime) return NaN;
  const baseDecode = meanStepMs(base.stepTime) - base.stepTime.prefillMs;
  return (base.steps * meanStepMs(base.stepTime)) / (run.steps * (run.stepTime.prefillMs + baseDecode));
}
