// What the budget explanation needs from a run beyond its step events: every forwarded node's
// candidates, including those the policy never put in its tree (a gate's cuts live there). The
// wrapper delegates every decision to the run's policy and only keeps a reference to each step's
// trees when the step's selection is done; the candidates are copied out after the run, so the
// timed steps carry no copying (ExpansionRecorder, for traces, copies inside the step).
import type { StepEvent } from '../../shared/events.js';
import type { ModelledClock } from '../cost/clock.js';
import { clockPricer, explainBudget, verifySlope, wallPricer, type BudgetExplanation, type ExplainStep } from '../metrics/budget-explanation.js';
import type { SweepOptions } from '../run/sweep.js';
import { observeSelect } from '../policy/observe.js';
import type { SpeculationPolicy } from '../policy/types.js';
import { treeExpansions } from '../trace/expansions.js';
import type { DraftTree } from '../tree.js';

export class CandidateCapture {
  private scheduled: { step: number; trees: DraftTree[] } | null = null;
  private readonly steps: { event: StepEvent; trees: DraftTree[] }[] = [];

  /** The run's policy, unchanged in behaviour. */
  wrap(inner: SpeculationPolicy): SpeculationPolicy {
    return observeSelect(inner, (ctx) => {
      this.scheduled = { step: ctx.step, trees: ctx.requests.map((r) => r.tree) };
    });
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

/** One sweep entry at one batch size, its first round explained (explainBudget). */
export interface ExplanationRow {
  batch: number;
  kmax: number;
  policy: string;
  explanation: BudgetExplanation;
}

/**
 * A sweep's runs explained: `hooks()` go into the sweep's options and capture every entry's first
 * round (greedy rounds repeat the same steps), except the entries `skip` names (an A/A control);
 * `explain(batch)` then prices them on the clock in use: the modelled one, or the wall clock with
 * verification moved by the slope of verify time against verified tokens fitted over every
 * entry's steps at that batch size (they span the token counts the bounds move between).
 */
export class SweepExplainer {
  private readonly captures = new Map<number, Map<string, CandidateCapture>>();
  /** Wall clock: the fitted ms per verified token of each batch size explained. */
  readonly verifySlopes: Record<number, number> = {};

  constructor(private readonly options: { maxNewTokens: number; kmax: (batch: number) => number; clock?: ModelledClock; skip?: (entry: string) => boolean }) {}

  hooks(): Pick<SweepOptions, 'wrapPolicy' | 'onStep'> {
    return {
      wrapPolicy: (run, policy) => {
        if (run.round !== 0 || this.options.skip?.(run.entry)) return policy;
        const capture = new CandidateCapture();
        let batch = this.captures.get(run.batch);
        if (!batch) this.captures.set(run.batch, (batch = new Map()));
        batch.set(run.entry, capture);
        return capture.wrap(policy);
      },
      onStep: (run, event) => {
        if (run.round === 0) this.captures.get(run.batch)?.get(run.entry)?.onStep(event);
      },
    };
  }

  /** The batch size's captured runs explained, in the order they were listed; their captures are let go. */
  explain(batch: number): ExplanationRow[] {
    const captured = this.captures.get(batch);
    if (!captured) return [];
    this.captures.delete(batch);
    const runs = [...captured].map(([policy, capture]) => ({ policy, steps: capture.explainSteps() }));
    let price = this.options.clock ? clockPricer(this.options.clock) : undefined;
    if (!price) {
      const slope = verifySlope(runs.flatMap((r) => r.steps));
      this.verifySlopes[batch] = slope;
      price = wallPricer(slope);
    }
    return runs.map(({ policy, steps }) => ({ batch, kmax: this.options.kmax(batch), policy, explanation: explainBudget(steps, { maxNewTokens: this.options.maxNewTokens, price }) }));
  }
}
