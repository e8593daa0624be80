// Recording what the draft proposed (for what-if re-scoring): wrap the run's policy, and after
// each step's schedule copy every expanded node's top-k out of the trees; annotate the step event
// with them before it goes to the trace.

import type { Knobs } from '../../shared/config.js';
import type { StepEvent } from '../../shared/events.js';
import type { Expansion, TraceStep } from '../../shared/trace-schema.js';
import type { SpeculationPolicy, StepContext } from '../policy/types.js';
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
    const recorder = this;
    return {
      name: inner.name,
      candidatesPerNode: inner.candidatesPerNode,
      begin: (ctx: StepContext) => inner.begin(ctx),
      frontier: (depth: number, ctx: StepContext) => inner.frontier(depth, ctx),
      grow: (depth: number, ctx: StepContext) => inner.grow(depth, ctx),
      select(ctx: StepContext) {
        inner.select(ctx);
        recorder.byRequest.clear();
        recorder.recordedStep = ctx.step;
        for (const r of ctx.requests) recorder.byRequest.set(r.id, treeExpansions(r.tree));
      },
      ...(inner.setKnobs ? { setKnobs: (knobs: Knobs) => inner.setKnobs!(knobs) } : {}),
    };
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
