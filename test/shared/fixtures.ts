// A small but complete step event, shared by tests of everything that carries frames, and the
// measured forward curves of a hardware profile, shared by the tests of a profile as the clock.
import type { StepEvent } from '../../src/shared/events.js';

/** A `profile-hw` file's measured forwards: ms against packed tokens, target and draft. */
export const SAMPLE_CURVES = {
  target: [
    { tokens: 1, ms: 10 },
    { tokens: 16, ms: 11 },
    { tokens: 64, ms: 20 },
    { tokens: 256, ms: 70 },
  ],
  draft: [
    { tokens: 1, ms: 1 },
    { tokens: 16, ms: 1.2 },
    { tokens: 64, ms: 2 },
  ],
};

export function sampleStep(step: number): StepEvent {
  return {
    type: 'step',
    step,
    t: 12.5 * (step + 1),
    kmax: 8,
    verifiedTokens: 3,
    requests: [
      {
        requestId: 'r0',
        nodes: [
          { id: 0, parent: -1, depth: -1, token: 5, logq: 0, pathScore: 0, grant: 'root', verified: true },
          { id: 1, parent: 0, depth: 0, token: 9, logq: -0.1, pathScore: -0.1, grant: 'base', verified: true },
          { id: 2, parent: 0, depth: 0, token: 7, logq: -Infinity, pathScore: -Infinity, grant: 'width', verified: false },
        ],
        gates: [{ depth: 0, confidence: 0.9, tau: 0.2, pass: true }],
        confidences: [0.9],
        accepted: [1],
        bonusToken: 11,
        emitted: [9, 11],
      },
    ],
    timings: { draftMs: 1, packMs: 0.1, verifyMs: 2, commitMs: 0.2, totalMs: 3.3 },
    budget: { roots: 1, base: 1, depth: 0, width: 1, unused: 5 },
    transfers: [],
    paddingWaste: 0,
  };
}
