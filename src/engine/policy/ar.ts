// `ar`: no speculation. Every request verifies only its root; the bonus is the next token.
import type { SpeculationPolicy, StepContext } from './types.js';

export class ArPolicy implements SpeculationPolicy {
  readonly name = 'ar';
  /** 0: never drafts, so the engine leaves the draft model out entirely. */
  readonly candidatesPerNode = 0;

  begin(): void {}

  frontier(_depth: number, ctx: StepContext): ReadonlyArray<readonly number[]> {
    return ctx.requests.map(() => []);
  }

  grow(): void {}

  select(): void {}
}
