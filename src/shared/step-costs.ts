// What a run's steps cost, and what a run would have taken had its steps cost another's: the
// "sched" ratio of the sweep, the ECHO bench, `run --compare-ar`, `trace compare` and the
// studio's comparison with a kept run.
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

/** One run against another (the base), in numbers: how much faster, and why: the steps it took, and what each cost. */
export interface RunComparison {
  /** Throughput ÷ the base run's. */
  throughput: number;
  /**
   * With the same requests and generated tokens (else null): the steps each run took, mean step
   * time ÷ the base run's, and the sched ratio (this run's steps at the base run's step cost).
   * The throughput ratio is then about base steps ÷ steps ÷ the step-time ratio.
   */
  steps: { run: number; base: number; stepTime: number; sched: number } | null;
}

export function compareRuns(run: RunMetrics, base: RunMetrics): RunComparison {
  const throughput = base.throughput > 0 ? run.throughput / base.throughput : NaN;
  const sameWork = run.requests === base.requests && run.generatedTokens === base.generatedTokens;
  if (!sameWork || !run.stepTime || !base.stepTime) return { throughput, steps: null };
  return {
    throughput,
    steps: { run: run.steps, base: base.steps, stepTime: meanStepMs(run.stepTime) / meanStepMs(base.stepTime), sched: atBaselineStepCost(run, base) },
  };
}
