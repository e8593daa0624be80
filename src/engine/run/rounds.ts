// Runs compared in rounds on one loaded pair: every entry runs once per round, so that ratios can
// be paired within rounds (metrics/paired-rounds.ts). How a round's runs share the machine:
//   runs:  one whole run after another, the order rotated each round;
//   steps: all at once, taking turns one step each (runLockstep), the turn order rotated and
//          reversed (turnOrder); each run needs its own KV slots, so the pair holds batch × entries.
// Two runs of one computation one after the other differ by however the machine's speed drifted
// between them; in lockstep they share every stretch of it within a step or two.
import { runLockstep } from './lockstep.js';
import { roundOrder, turnOrder } from '../metrics/paired-rounds.js';
import type { RunSummary, Runner } from './runner.js';

export const INTERLEAVINGS = ['runs', 'steps'] as const;
export type Interleaving = (typeof INTERLEAVINGS)[number];

/**
 * KV slots a pair needs for runs compared in rounds: the largest batch, once per entry when a
 * round's runs take turns by steps (each holds its own slots).
 */
export function slotsForRounds(options: { batches: readonly number[]; policies: readonly string[]; interleave?: Interleaving }): number {
  return Math.max(...options.batches) * (options.interleave === 'steps' ? options.policies.length : 1);
}

/** A run set up and not started, and what its summary makes of it (the steps it heard are the caller's). */
export interface StartedRun<M> {
  runner: Runner;
  finish: (summary: RunSummary) => M;
}

export interface RoundsOptions<M> {
  rounds: number;
  interleave: Interleaving;
  /** Each run as it finishes (its round counts from 0). */
  onRun?: (round: number, entry: string, measured: M) => void;
}

/**
 * Every entry once per round; per entry, its rounds in order. `start` builds an entry's runner
 * (with the callbacks that measure it); it is called just before the run in `runs`, and for all
 * entries of a round before any of them steps in `steps`.
 */
export async function runRounds<M>(entries: readonly string[], options: RoundsOptions<M>, start: (entry: string) => StartedRun<M>): Promise<Map<string, M[]>> {
  const measured = new Map<string, M[]>(entries.map((entry) => [entry, []]));
  const record = (round: number, entry: string, m: M) => {
    measured.get(entry)!.push(m);
    options.onRun?.(round, entry, m);
  };
  for (let round = 0; round < options.rounds; round++) {
    if (options.interleave === 'steps') {
      const order = turnOrder(entries, round);
      const started = order.map(start);
      const summaries = await runLockstep(started.map((s) => s.runner));
      order.forEach((entry, i) => record(round, entry, started[i].finish(summaries[i])));
      continue;
    }
    for (const entry of roundOrder(entries, round)) {
      const { runner, finish } = start(entry);
      record(round, entry, finish(await runner.run()));
    }
  }
  return measured;
}
