// Watching a run's policy without changing it: traces record each step's expansions, and the
// budget explanation keeps each step's trees, both right after the policy chose what to verify.
import type { Knobs } from '../../shared/config.js';
import type { SpeculationPolicy, StepContext } from './types.js';

/** `inner`, unchanged in behaviour, calling `observe` after each select() with that step's context. */
export function observeSelect(inner: SpeculationPolicy, observe: (ctx: StepContext) => void): SpeculationPolicy {
  return {
    name: inner.name,
    candidatesPerNode: inner.candidatesPerNode,
    begin: (ctx: StepContext) => inner.begin(ctx),
    frontier: (depth: number, ctx: StepContext) => inner.frontier(depth, ctx),
    grow: (depth: number, ctx: StepContext) => inner.grow(depth, ctx),
    select(ctx: StepContext) {
      inner.select(ctx);
      observe(ctx);
    },
    ...(inner.afterVerify ? { afterVerify: (ctx: StepContext, accepted: ReadonlyArray<readonly number[]>) => inner.afterVerify!(ctx, accepted) } : {}),
    ...(inner.setKnobs ? { setKnobs: (knobs: Knobs) => inner.setKnobs!(knobs) } : {}),
  };
}
