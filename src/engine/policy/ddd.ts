// `ddd`: dynamic depth decoding (Brown et al. 2024) under the same cap: every request deepens
// its tree while the draft's beam still holds probability mass, i.e. while
// log Σ_{beam} exp(S) ≥ threshold, checked at every depth; a layer below the threshold is not
// verified. No budget moves between requests and nothing is widened: what the base shares leave
// of K_max only pays for depth past the base shape.
import { echoBaseShape, echoLimits } from './echo.js';
import { ElasticScheduler } from './echo-scheduler.js';
import type { PolicyOptions } from './types.js';
import { Refusal } from '../refusal.js';

/** log(0.25): stop once the beam's paths together are less likely than one in four. */
export const DEFAULT_DDD_THRESHOLD = Math.log(0.25);

export class DddPolicy extends ElasticScheduler {
  constructor(options: PolicyOptions) {
    const shape = echoBaseShape(options);
    const logThreshold = options.dddThreshold ?? DEFAULT_DDD_THRESHOLD;
    if (!(logThreshold <= 0)) throw new Refusal(`ddd threshold ${logThreshold} must be a log-probability (≤ 0)`);
    super('ddd', {
      shape,
      ...echoLimits(options, shape),
      gate: { signal: 'beam-mass', logThreshold },
      reallocate: false,
      priceCuts: false,
      widen: false,
    });
  }
}
