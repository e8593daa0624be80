// `fixed`: ECHO with one threshold at every sweet spot instead of the depth-aware τ_d (the
// paper's fixed-threshold ablation, §5.3). Without an explicit τ it uses the mean of the τ_d, so
// the two differ only in being depth-aware.
import { tauProblem, type Knobs } from '../../shared/config.js';
import { echoBaseShape, echoLimits, fallbackTaus, gatedRules, tauMap } from './echo.js';
import { ElasticScheduler } from './echo-scheduler.js';
import type { PolicyOptions } from './types.js';
import { Refusal } from '../refusal.js';

/** τ's one range rule (config.ts), refused in its words. */
function refuseTau(tau: number): void {
  const problem = tauProblem(tau, 'fixed τ');
  if (problem !== null) throw new Refusal(problem);
}

export class FixedPolicy extends ElasticScheduler {
  constructor(options: PolicyOptions) {
    const shape = echoBaseShape(options);
    const perDepth = tauMap(options.taus ?? fallbackTaus(shape));
    const values = [...perDepth.values()];
    // No τ_d at all (a warm-up without a sweet spot): no gated depth, so the τ is never read.
    const tau = options.tau ?? (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
    refuseTau(tau);
    super('fixed', {
      shape,
      ...echoLimits(options, shape),
      gate: { signal: 'best-path', taus: new Map([...perDepth.keys()].map((d) => [d, tau])) },
      reallocate: true,
      priceCuts: options.cuts !== 'bare',
      widen: true,
      ...gatedRules(options),
    });
  }

  /** A new τ keeps the gated depths; new τ_d keep the τ and move the gates. */
  setKnobs(knobs: Knobs): void {
    const current = this.rules.gate.signal === 'best-path' ? this.rules.gate.taus : new Map<number, number>();
    const depths = knobs.taus !== undefined ? [...tauMap(knobs.taus).keys()] : [...current.keys()];
    const tau = knobs.tau ?? current.values().next().value;
    if (tau === undefined || (knobs.tau === undefined && knobs.taus === undefined)) return;
    refuseTau(tau);
    this.rules.gate = { signal: 'best-path', taus: new Map(depths.map((d) => [d, tau])) };
  }
}
