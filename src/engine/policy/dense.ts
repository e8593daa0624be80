// `dense`: ECHO with a gate at every depth (the paper's dense-gating ablation, §5.3). Depths the
// profile has no τ for take the τ of the nearest gated depth above them (the root's if none).
import type { Knobs } from '../../shared/config.js';
import { echoBaseShape, echoLimits, fallbackTaus, gatedRules, tauMap } from './echo.js';
import { ElasticScheduler } from './echo-scheduler.js';
import type { PolicyOptions } from './types.js';

export function denseTaus(known: ReadonlyMap<number, number>, maxDepth: number): Map<number, number> {
  if (known.size === 0) return new Map(); // no τ at all (a warm-up without a sweet spot): ungated
  const depths = [...known.keys()].sort((a, b) => a - b);
  const out = new Map<number, number>();
  for (let d = 0; d < maxDepth; d++) {
    const above = depths.filter((k) => k <= d);
    out.set(d, known.get(above.length > 0 ? above[above.length - 1] : depths[0])!);
  }
  return out;
}

export class DensePolicy extends ElasticScheduler {
  constructor(options: PolicyOptions) {
    const shape = echoBaseShape(options);
    const limits = echoLimits(options, shape);
    const known = tauMap({ ...(options.taus ?? fallbackTaus(shape)), ...(options.denseTaus ?? {}) });
    super('dense', {
      shape,
      ...limits,
      gate: { signal: 'best-path', taus: denseTaus(known, limits.maxDepth) },
      reallocate: true,
      priceCuts: options.cuts !== 'bare',
      widen: true,
      ...gatedRules(options),
    });
  }

  setKnobs(knobs: Knobs): void {
    if (knobs.taus !== undefined) {
      this.rules.gate = { signal: 'best-path', taus: denseTaus(tauMap(knobs.taus), this.rules.maxDepth) };
    }
  }
}
