// How often the target takes a drafted node once it has taken the node's parent, measured: by the
// node's rank among its parent's candidates and by its own draft confidence (the draft's
// probability of that one step, in the run's signal). Every verified node whose parent was
// accepted is a labelled sample — the warm-up's and then every step's of the run itself — so the
// estimate starts from the calibration and keeps learning. What the elastic scheduler ranks nodes
// by (docs/echo.md, "One step of the scheduler", 3).
//
// Why these two features: the scheduler used to value a top candidate by its layer's measured
// continuation (shared by every parent of the layer) and a runner-up by a fixed decay per rank,
// blind to how sure the draft was of that one candidate; rank and the candidate's own probability
// together predict its acceptance better on the demo pair (the numbers are in docs/echo.md).
import { stepScore, type DraftTree } from '../tree.js';
import type { ConfidenceSignal } from '../../shared/config.js';
import { nonDecreasing } from './acceptance.js';

/** Lower edges of the confidence bins (the last bin runs to 1): finer where the demo draft's steps bunch. */
export const CONFIDENCE_EDGES: readonly number[] = [0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9];

/** Ranks 0, 1, 2 each have their own estimate; 3 and later share the last. */
export const RANK_GROUPS = 4;

/**
 * Pseudo-samples a bin's rate is shrunk by towards its rank's rate, and a rank's rate towards its
 * prior: a bin seen three times says little, one seen a hundred times says much.
 */
export const BIN_PRIOR_SAMPLES = 8;
export const RANK_PRIOR_SAMPLES = 8;

/**
 * A rank's rate before anything is measured: `static`'s per-rank prior (0.6 for the top
 * candidate, then ×0.35 per rank).
 */
export function rankPriorRate(rank: number): number {
  return 0.6 * 0.35 ** Math.min(rank, RANK_GROUPS - 1);
}

/** Samples per rank group and confidence bin: [rank group][bin]. Plain data, so a profile can store it. */
export interface ChildCounts {
  accepted: number[][];
  seen: number[][];
}

export function emptyChildCounts(): ChildCounts {
  const zeros = () => Array.from({ length: RANK_GROUPS }, () => new Array<number>(CONFIDENCE_EDGES.length).fill(0));
  return { accepted: zeros(), seen: zeros() };
}

/** The bin of a confidence in [0, 1]. */
export function confidenceBin(confidence: number): number {
  let bin = 0;
  while (bin < CONFIDENCE_EDGES.length - 1 && confidence >= CONFIDENCE_EDGES[bin + 1]) bin++;
  return bin;
}

/** A node's own confidence: its parent's candidate at `rank`, in the signal's one-step score. */
export function stepConfidence(logq: ArrayLike<number>, rank: number, signal: ConfidenceSignal): number {
  return Math.exp(stepScore(logq, rank, signal));
}

/**
 * The conditional acceptance estimate, learning as it is told outcomes. Deterministic: the same
 * samples in the same order give the same estimates.
 */
export class ChildAcceptance {
  private readonly counts: ChildCounts;
  /** rates[rank group][bin], rebuilt when samples arrived since. */
  private rates: number[][] | null = null;
  /** ceiling() and expectedChances(n) of the same samples (a step reads them per layer and per node). */
  private highest: number | null = null;
  private chancesByCount = new Map<number, number[]>();

  constructor(
    readonly signal: ConfidenceSignal,
    start?: ChildCounts,
  ) {
    const counts = emptyChildCounts();
    if (start) {
      if (start.accepted.length !== RANK_GROUPS || start.seen.length !== RANK_GROUPS) {
        throw new Error(`child acceptance counts need ${RANK_GROUPS} rank groups, got ${start.seen.length}`);
      }
      for (let g = 0; g < RANK_GROUPS; g++) {
        if (start.seen[g].length !== CONFIDENCE_EDGES.length || start.accepted[g].length !== CONFIDENCE_EDGES.length) {
          throw new Error(`child acceptance counts need ${CONFIDENCE_EDGES.length} confidence bins per rank`);
        }
        for (let b = 0; b < CONFIDENCE_EDGES.length; b++) {
          counts.accepted[g][b] = start.accepted[g][b];
          counts.seen[g][b] = start.seen[g][b];
        }
      }
    }
    this.counts = counts;
  }

  /** One labelled sample: a node at `rank` with confidence `confidence`, accepted or not, its parent accepted. */
  record(rank: number, confidence: number, accepted: boolean): void {
    const g = Math.min(rank, RANK_GROUPS - 1);
    const b = confidenceBin(confidence);
    this.counts.seen[g][b]++;
    if (accepted) this.counts.accepted[g][b]++;
    this.rates = null;
    this.highest = null;
    this.chancesByCount.clear();
  }

  /**
   * A verified tree's samples: every verified node whose parent the target accepted (the root
   * always is), labelled by whether it was accepted itself. Under greedy verification a node is
   * accepted iff its token is the target's choice at its parent, whichever siblings were verified.
   */
  observe(tree: DraftTree, accepted: readonly number[]): void {
    const taken = new Set<number>([0, ...accepted]);
    for (let id = 1; id < tree.size; id++) {
      if (!tree.verified[id] || !taken.has(tree.parent[id])) continue;
      const cands = tree.candidates[tree.parent[id]];
      if (!cands) continue;
      this.record(tree.rank[id], stepConfidence(cands.logq, tree.rank[id], this.signal), taken.has(id));
    }
  }

  /** P(accepted | parent accepted) for the candidate at `rank` with confidence `confidence`. */
  estimate(rank: number, confidence: number): number {
    this.rates ??= this.fit();
    return this.rates[Math.min(rank, RANK_GROUPS - 1)][confidenceBin(confidence)];
  }

  /** The highest chance any candidate is given: the most a child can keep of its parent's value. */
  ceiling(): number {
    this.rates ??= this.fit();
    this.highest ??= Math.max(...this.rates.map((row) => Math.max(...row)));
    return this.highest;
  }

  /**
   * How often the candidate at each rank 0 … n − 1 is taken once its parent is, over every
   * confidence seen (shrunk to its prior like every rate, and scaled down to sum to 1 at most: one
   * child is taken): what the children of a node not yet expanded are expected to keep of its value.
   */
  expectedChances(n: number): readonly number[] {
    let known = this.chancesByCount.get(n);
    if (!known) {
      const chances = Array.from({ length: n }, (_, rank) => this.rankRate(Math.min(rank, RANK_GROUPS - 1)));
      const total = chances.reduce((a, b) => a + b, 0);
      known = total > 1 ? chances.map((c) => c / total) : chances;
      this.chancesByCount.set(n, known);
    }
    return known;
  }

  /** A copy of the samples so far. */
  snapshot(): ChildCounts {
    return { accepted: this.counts.accepted.map((row) => [...row]), seen: this.counts.seen.map((row) => [...row]) };
  }

  /** Samples so far. */
  get samples(): number {
    return this.counts.seen.reduce((n, row) => n + row.reduce((a, b) => a + b, 0), 0);
  }

  /** A rank group's rate over every confidence, shrunk to its prior. */
  private rankRate(g: number): number {
    const accepted = this.counts.accepted[g].reduce((a, b) => a + b, 0);
    const seen = this.counts.seen[g].reduce((a, b) => a + b, 0);
    return (accepted + RANK_PRIOR_SAMPLES * rankPriorRate(g)) / (seen + RANK_PRIOR_SAMPLES);
  }

  /**
   * Per rank: its rate shrunk to its prior, each seen bin's shrunk to that rate, then made
   * non-decreasing in confidence over the seen bins (a surer draft is never read as a lower
   * chance); a bin never seen reads the nearest seen bin below it (above it, at the low end), or
   * the rank's rate when none is. Unseen bins take no part in the fit: they would pull the seen
   * ones towards the prior.
   */
  private fit(): number[][] {
    return this.counts.seen.map((seen, g) => {
      const accepted = this.counts.accepted[g];
      const rankRate = this.rankRate(g);
      const bins = seen.flatMap((s, b) => (s > 0 ? [b] : []));
      if (bins.length === 0) return seen.map(() => rankRate);
      const fitted = nonDecreasing(
        bins.map((b) => (accepted[b] + BIN_PRIOR_SAMPLES * rankRate) / (seen[b] + BIN_PRIOR_SAMPLES)),
        bins.map((b) => seen[b] + BIN_PRIOR_SAMPLES),
      );
      const rates = new Array<number>(seen.length);
      let k = 0;
      for (let b = 0; b < seen.length; b++) {
        while (k + 1 < bins.length && bins[k + 1] <= b) k++;
        rates[b] = fitted[k];
      }
      return rates;
    });
  }
}
