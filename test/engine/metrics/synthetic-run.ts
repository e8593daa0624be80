// Realistic StepEvent sequences for tests, from a seed: continuous batching, a drafted tree per
// request (root, two candidates per depth under the best node), a budget cap Σ(1+K_i) ≤ K_max,
// greedy-style acceptance that is likelier when the draft is confident, gates at depth 0.

import type { GrantKind, RequestStep, StepEvent, TreeNode } from '../../../src/shared/events.js';
import type { RunConfig } from '../../../src/shared/config.js';
import { mulberry32 } from '../../shared/mulberry32.js';

export interface SyntheticRunOptions {
  seed: number;
  batch: number;
  requests: number;
  maxNewTokens: number;
  depth: number;
  kmax: number;
  /** Candidates per drafted depth. */
  width?: number;
  /** Token text on nodes and emitted text (exercises CSV quoting). */
  withText?: boolean;
}

export function syntheticConfig(o: SyntheticRunOptions): RunConfig {
  return {
    policy: 'echo',
    batch: o.batch,
    kmax: o.kmax,
    requests: o.requests,
    maxNewTokens: o.maxNewTokens,
    temperature: 0,
    seed: o.seed,
    domain: 'demo',
    shape: { depth: o.depth, topk: o.width ?? 2, tokens: o.depth * (o.width ?? 2) },
    taus: { '0': 0.2 },
  };
}

const WORDS = ['the', ' cat', ',', ' "quoted"', ' line\nbreak', ' sat', ' on', ' mat', '.', ' é'];

export function syntheticRun(o: SyntheticRunOptions): StepEvent[] {
  const rand = mulberry32(o.seed);
  const width = o.width ?? 2;
  const events: StepEvent[] = [];
  const waiting = Array.from({ length: o.requests }, (_, i) => `req-${i}`);
  const active = new Map<string, { produced: number; lastToken: number }>();
  let t = 5; // prefill before the first step
  for (let step = 0; waiting.length > 0 || active.size > 0; step++) {
    let admitted = 0;
    while (active.size < o.batch && waiting.length > 0) {
      active.set(waiting.shift()!, { produced: 0, lastToken: Math.floor(rand() * 1000) });
      admitted++;
    }
    // Split the budget evenly; the cap Σ(1+K_i) ≤ kmax holds by construction.
    const perRequest = Math.floor(o.kmax / active.size) - 1;
    const requests: RequestStep[] = [];
    let verifiedTokens = 0;
    const granted = { base: 0, depth: 0 };
    for (const [requestId, state] of active) {
      const nodes: TreeNode[] = [
        { id: 0, parent: -1, depth: -1, token: state.lastToken, logq: 0, pathScore: 0, grant: 'root', verified: true },
      ];
      const confidences: number[] = [];
      let best = 0;
      let verifiedHere = 0;
      for (let d = 0; d < o.depth; d++) {
        const layerStart = nodes.length;
        for (let w = 0; w < width; w++) {
          const logq = Math.log(w === 0 ? 0.3 + 0.69 * rand() : 0.2 * rand() + 1e-3);
          const verified = verifiedHere < perRequest;
          if (verified) verifiedHere++;
          const grant: GrantKind = d === 0 ? 'base' : rand() < 0.5 ? 'base' : 'depth';
          const token = Math.floor(rand() * 1000);
          nodes.push({
            id: nodes.length,
            parent: best,
            depth: d,
            token,
            ...(o.withText ? { text: WORDS[token % WORDS.length] } : {}),
            logq,
            pathScore: nodes[best].pathScore + logq,
            grant,
            verified,
          });
        }
        best = layerStart; // the first candidate is the most likely one
        confidences.push(Math.exp(Math.max(...nodes.slice(layerStart).map((n) => n.pathScore))));
      }
      // Walk down the best chain; accept while verified, with odds rising with confidence.
      const accepted: number[] = [];
      let node = 0;
      for (let d = 0; d < o.depth; d++) {
        const child = nodes.find((n) => n.parent === node && n.depth === d && n.verified);
        if (child === undefined || rand() > 0.15 + 0.8 * confidences[d]) break;
        accepted.push(child.id);
        node = child.id;
      }
      const bonusToken = Math.floor(rand() * 1000);
      let emitted = [...accepted.map((id) => nodes[id].token), bonusToken];
      const room = o.maxNewTokens - state.produced;
      let finished: RequestStep['finished'];
      if (emitted.length >= room) {
        emitted = emitted.slice(0, room);
        finished = 'length';
      }
      state.produced += emitted.length;
      state.lastToken = emitted[emitted.length - 1];
      const gatePass = confidences[0] > 0.2;
      requests.push({
        requestId,
        nodes,
        gates: [{ depth: 0, confidence: confidences[0], tau: 0.2, pass: gatePass }],
        stop: gatePass ? { reason: 'max-depth', depth: Math.max(...nodes.map((n) => n.depth)) + 1 } : { reason: 'truncated', depth: 0 },
        confidences,
        accepted,
        bonusToken,
        emitted,
        ...(o.withText ? { emittedText: emitted.map((tok) => WORDS[tok % WORDS.length]).join('') } : {}),
        ...(finished ? { finished } : {}),
      });
      verifiedTokens += 1 + verifiedHere;
      for (const n of nodes) if (n.verified && (n.grant === 'base' || n.grant === 'depth')) granted[n.grant]++;
    }
    for (const r of requests) if (r.finished) active.delete(r.requestId);
    const timings: StepEvent['timings'] = { draftMs: 1 + rand(), packMs: 0.1 * rand(), verifyMs: 2 + 3 * rand(), commitMs: 0.2 * rand(), totalMs: 0 };
    // Prefill of requests admitted just before this step counts in the step's total.
    if (admitted > 0) timings.prefillMs = admitted * (0.5 + rand());
    timings.totalMs = (timings.prefillMs ?? 0) + timings.draftMs + timings.packMs + timings.verifyMs + timings.commitMs;
    timings.modelMs = 0.9 * (timings.draftMs + timings.verifyMs);
    t += timings.totalMs + 0.05; // a little admission time between steps
    events.push({
      type: 'step',
      step,
      t,
      kmax: o.kmax,
      verifiedTokens,
      requests,
      timings,
      budget: { roots: requests.length, base: granted.base, depth: granted.depth, width: 0, unused: o.kmax - verifiedTokens },
      transfers: step % 3 === 0 && requests.length > 1 ? [{ from: requests[0].requestId, to: requests[1].requestId, tokens: 1 }] : [],
      paddingWaste: 0.1 * rand(),
      // A draft forward per drafted layer: its expanded parents, the first with a catch-up row per request.
      draftRows: Array.from({ length: 1 + Math.max(-1, ...requests.flatMap((r) => r.nodes.map((n) => n.depth))) }, (_, d) =>
        requests.reduce((sum, r) => sum + new Set(r.nodes.filter((n) => n.depth === d).map((n) => n.parent)).size, d === 0 ? requests.length : 0),
      ),
      draftRequests: Array.from({ length: 1 + Math.max(-1, ...requests.flatMap((r) => r.nodes.map((n) => n.depth))) }, (_, d) =>
        d === 0 ? requests.length : requests.filter((r) => r.nodes.some((n) => n.depth === d)).length,
      ),
    });
  }
  return events;
}
