// Runs that take turns, one step each: the fairest comparison a shared machine allows. Two runs
// of the same policy one after the other differ by however the machine's speed drifted between
// them (±2–4 % over minutes on a busy 2-core machine). Runs in lockstep, on one loaded pair with a
// KV slot per request of every run, share every stretch of that drift within a step or two. Each
// runner holds its clock while the others step, so its wall time, step times and request
// latencies count its own steps only. What it cannot remove is the work of one run evicting the
// other's data from the caches between turns; every run pays that alike.
import type { RunSummary, Runner } from './runner.js';

/**
 * Steps each unfinished runner once, in the order given, until all are done; returns their
 * summaries in that order. The runners must not share KV slots (each allocates its own).
 */
export async function runLockstep(runners: readonly Runner[]): Promise<RunSummary[]> {
  for (;;) {
    const turns = runners.filter((runner) => !runner.done);
    if (turns.length === 0) break;
    for (const runner of turns) {
      runner.holdClock(false);
      await runner.next();
      runner.holdClock(true);
    }
  }
  return runners.map((runner) => runner.summary());
}
