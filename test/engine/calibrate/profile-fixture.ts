// A calibration profile built from hand-made per-depth calibrations, for tests that need a
// profile file or a profile's printout without a warm-up.
import type { DepthCalibration } from '../../../src/engine/calibrate/calibration';
import { buildProfile, type EchoProfile, type ProfileInputs } from '../../../src/engine/calibrate/profile';

export function profileOf(depths: readonly DepthCalibration[], overrides: Partial<ProfileInputs> = {}): EchoProfile {
  return buildProfile({
    models: { draft: 'draft-dir', target: 'target-dir' },
    domain: 'code',
    delta: 0.75,
    tauRule: 'budget',
    significance: 0.05,
    confidence: 'path-prob',
    targetDepth: Math.max(0, depths.length - 1),
    samples: { prompts: 1, steps: 1, requestSteps: 1 },
    depths,
    histograms: depths.map(() => ({ edges: [], accepted: [], rejected: [] })),
    ...overrides,
  });
}
