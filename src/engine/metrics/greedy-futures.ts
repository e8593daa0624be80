// What a greedy run's own output says the target would have produced from each step on. With
// temperature 0 the output is the target's greedy continuation whatever the policy, so the tokens
// a request emitted from a step to its end *are* the target's argmax path from that step's prefix:
// greedy verification accepts exactly the longest prefix of it that a verified tree holds. What-if
// re-scoring and the budget explanation both read the target's verdict on a node off it, including
// nodes the run never verified.
import type { StepEvent } from '../../shared/events.js';

/** Per request-step: the target's greedy path from this step on, as far as the run shows it. */
export interface RequestFuture {
  /**
   * The target's greedy tokens for the request as far as the run knows them (shared by all its
   * steps): every step's emitted tokens, except that the last step contributes its accepted
   * tokens + bonus, which can run past the output's end (EOS, length cap).
   */
  greedy: number[];
  /** Tokens the request emitted before this step: where this step's greedy path starts in `greedy`. */
  outputBefore: number;
  /** Tokens it emitted from this step to its end in the run. */
  outputLeft: number;
  /** The run shows the request finishing: outputLeft is its true remaining output. */
  finishes: boolean;
}

/** Each step's futures by request id, in step order. */
export function requestFutures(steps: ReadonlyArray<Pick<StepEvent, 'requests'>>): Map<string, RequestFuture>[] {
  const perRequest = new Map<string, { greedy: number[]; emitted: number; finishes: boolean }>();
  for (const step of steps) {
    for (const r of step.requests) {
      let req = perRequest.get(r.requestId);
      if (req === undefined) perRequest.set(r.requestId, (req = { greedy: [], emitted: 0, finishes: false }));
      // Drop the previous step's extra tokens past its emitted ones (only a final step has any).
      req.greedy.length = req.emitted;
      const verdict = [...r.accepted.map((id) => r.nodes[id].token), r.bonusToken];
      for (const token of verdict) req.greedy.push(token);
      req.emitted += r.emitted.length;
      if (r.finished) req.finishes = true;
    }
  }
  const produced = new Map<string, number>();
  return steps.map((step) => {
    const futures = new Map<string, RequestFuture>();
    for (const r of step.requests) {
      const req = perRequest.get(r.requestId)!;
      const before = produced.get(r.requestId) ?? 0;
      futures.set(r.requestId, { greedy: req.greedy, outputBefore: before, outputLeft: req.emitted - before, finishes: req.finishes });
      produced.set(r.requestId, before + r.emitted.length);
    }
    return futures;
  });
}
