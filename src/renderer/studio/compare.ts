// The run on screen against the run kept for comparison, in numbers: how much faster, and why:
// the steps it took, and what each step cost.
import type { RunMetrics } from '../../shared/events.js';
import { atBaselineStepCost, meanStepMs } from '../../shared/step-costs.js';

export interface RunComparison {
  /** Throughput ÷ the kept run's. */
  throughput: number;
  /**
   * With the same requests and generated tokens (else null): the steps each run took, mean step
   * time ÷ the kept run's, and the sched ratio (this run's steps at the kept run's step cost).
   * The throughput ratio is then about kept steps ÷ steps ÷ the step-time ratio.
   */
  steps: { run: number; kept: number; stepTime: number; sched: number } | null;
}

export function compareRuns(run: RunMetrics, kept: RunMetrics): RunComparison {
  const throughput = kept.throughput > 0 ? run.throughput / kept.throughput : NaN;
  const sameWork = run.requests === kept.requests && run.generatedTokens === kept.generatedTokens;
  if (!sameWork || !run.stepTime || !kept.stepTime) return { throughput, steps: null };
  return {
    throughput,
    steps: { run: run.steps, kept: kept.steps, stepTime: meanStepMs(run.stepTime) / meanStepMs(kept.stepTime), sched: atBaselineStepCost(run, kept) },
  };
}
