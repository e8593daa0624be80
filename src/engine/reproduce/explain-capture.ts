// What the budget explanation needs from a run beyond its step events: every forwarded node's
// candidates, including those the policy never put in its tree (a gate's cuts live there). The
// wrapper delegates every decision to the run's policy and only keeps a reference to each step's
// trees when the step's selection is done; the candidates are copied out after the run, so the
// timed steps carry no copying (ExpansionRecorder, for traces, copies inside the step).
import type { Knobs } from '../../shared/config.js';
import type { StepEvent } from '../../shared/events.js';
import type { ExplainStep } from '../metrics/budget-explanation.js';
import type { SpeculationPolicy, StepContext } from '../policy/types.js';
import { treeExpansions } from '../trace/expansions.js';
import type { DraftTree } from '../tree.js';

export class CandidateCapture {
  private scheduled: { step: number; trees: DraftTree[] } | null = null;
  private readonly steps: { event: StepEvent; trees: DraftTree[] }[] = [];

  /** The run's policy, unchanged in behaviour. */
  wrap(inner: SpeculationPolicy): SpeculationPolicy {
    const capture = this;
    return {
      name: inner.name,
      candidatesPerNode: inner.candidatesPerNode,
      begin: (ctx: StepContext) => inner.begin(ctx),
      frontier: (depth: number, ctx: StepContext) => inner.frontier(depth, ctx),
      grow: (depth: number, ctx: StepContext) => inner.grow(depth, ctx),
      select(ctx: StepContext) {
        inner.select(ctx);
        capture.scheduled = { step: ctx.step, trees: ctx.requests.map((r) => r.tree) };
      },
      ...(inner.setKnobs ? { setKnobs: (knobs: Knobs) => inner.setKnobs!(knobs) } : {}),
    };
  }

  /** Each step event of the wrapped run, as it comes (a step no policy scheduled has no trees: ar's). */
  onStep(event: StepEvent): void {
    const trees = this.scheduled?.step === event.step ? this.scheduled.trees : [];
    this.scheduled = null;
    this.steps.push({ event, trees });
  }

  /** The run's steps with each request's candidates, for explainBudget. */
  explainSteps(): ExplainStep[] {
    return this.steps.map(({ event, trees }) => {
      const byId = new Map(trees.map((t) => [t.requestId, t]));
      return {
        ...event,
        requests: event.requests.map((r) => {
          const tree = byId.get(r.requestId);
          return tree ? { ...r, expansions: treeExpansions(tree) } : r;
        }),
      };
    });
  }
}
