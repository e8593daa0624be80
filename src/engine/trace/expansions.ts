// Recording what the draft proposed (for what-if re-scoring): wrap the run's policy, and after
// each step's schedule copy every expanded node's top-k out of the trees; annotate the step event
// with them before it goes to the trace.

import type { StepEvent } from '../../shared/events.js';
import type { Expansion, TraceStep } from '../../shared/trace-schema.js';
import { observeSelect } from '../policy/observe.js';
import type { SpeculationPolicy } from '../policy/types.js';
import type { DraftTree } from '../tree.js';

/** Every node of the tree that the draft forwarded, with its candidates (tree ids = event ids). */
export function treeExpansions(tree: DraftTree): Expansion[] {
  const out: Expansion[] = [];
  for (let node = 0; node < tree.size; node++) {
    const candidates = tree.candidates[node];
    if (candidates === null) continue;
    out.push({ node, tokens: Array.from(candidates.tokens), logq: Array.from(candidates.logq) });
  }
  return out;
}

export class ExpansionRecorder {
  private readonly byRequest = new Map<string, Expansion[]>();
  private recordedStep = -1;

  /** The run's policy, unchanged in behaviour, with a copy of the trees taken after select(). */
  wrap(inner: SpeculationPolicy): SpeculationPolicy {
    return observeSelect(inner, (ctx) => {
      this.byRequest.clear();
      this.recordedStep = ctx.step;
      for (const r of ctx.requests) this.byRequest.set(r.id, treeExpansions(r.tree));
    });
  }

  /** The event with each request's expansions attached (the event itself is not changed). */
  annotate(event: StepEvent): TraceStep {
    if (event.step !== this.recordedStep) {
      throw new Error(`expansion recorder: step ${event.step} was not scheduled through the wrapped policy (last seen: ${this.recordedStep})`);
    }
    return {
      ...event,
      requests: event.requests.map((r) => ({ ...r, expansions: this.byRequest.get(r.requestId) ?? [] })),
    };
  }
}
