// Small hand-built step events whose expected drawing is easy to state.
import type { RequestStep, StepEvent, TreeNode } from '../../../src/shared/events.js';

export function node(id: number, parent: number, depth: number, extra: Partial<TreeNode> = {}): TreeNode {
  return {
    id,
    parent,
    depth,
    token: 100 + id,
    text: ` t${id}`,
    logq: -0.1 * id,
    pathScore: -0.1 * id * (depth + 1),
    grant: parent < 0 ? 'root' : 'base',
    verified: true,
    ...extra,
  };
}

/**
 * root 0 ─ 1 ─ 3 ─ 5 (depth ext.)
 *        │   └ 4
 *        └ 2 ─ 6
 *            └ 7 (pruned)
 * accepted 1, 3: 2 and 4 are rejected siblings, 5 is rejected (parent 3 accepted),
 * 6 is unreached (parent 2 rejected), 7 was never verified.
 */
export function sampleRequest(overrides: Partial<RequestStep> = {}): RequestStep {
  return {
    requestId: '3',
    nodes: [
      node(0, -1, -1, { text: '', logq: 0, pathScore: 0 }),
      node(1, 0, 0, { pathScore: -0.1 }),
      node(2, 0, 0, { pathScore: -1.2 }),
      node(3, 1, 1, { pathScore: -0.3 }),
      node(4, 1, 1, { pathScore: -2.0 }),
      node(5, 3, 2, { pathScore: -0.6, grant: 'depth', paidBy: '7' }),
      node(6, 2, 1, { pathScore: -1.5, grant: 'width' }),
      node(7, 2, 1, { pathScore: -2.5, verified: false }),
    ],
    gates: [
      { depth: 0, confidence: 0.9, tau: 0.3, pass: true },
      { depth: 2, confidence: 0.55, tau: 0.35, pass: true },
    ],
    confidences: [0.9, 0.74, 0.55],
    accepted: [1, 3],
    bonusToken: 42,
    emitted: [101, 103, 42],
    emittedText: ' t1 t3 bonus',
    ...overrides,
  };
}

export function sampleStep(step: number, requests: RequestStep[], overrides: Partial<StepEvent> = {}): StepEvent {
  return {
    type: 'step',
    step,
    t: 100 * (step + 1),
    kmax: 16,
    verifiedTokens: 14,
    requests,
    timings: { draftMs: 10, packMs: 1, verifyMs: 20, commitMs: 2, totalMs: 50 },
    budget: { roots: 2, base: 8, depth: 3, width: 1, unused: 2 },
    transfers: [],
    paddingWaste: 0,
    ...overrides,
  };
}
