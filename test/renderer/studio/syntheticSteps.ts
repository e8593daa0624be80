// A deterministic generator of plausible ECHO step events (sparse gates, truncation, transfers,
// depth extension, width expansion, greedy-looking verification) for view tests, the visual check
// harness and the frame-time benchmark. It is not the engine: it only has the engine's shapes.
import type { DepthHistogram, RequestStep, StepEvent, TreeNode } from '../../../src/shared/events.js';
import { mulberry32 } from '../../shared/mulberry32.js';

const WORDS = (
  'the of and to in is that for it as with was on be by this are from at or an have not which but ' +
  'they one had all their there can been has if more when will would who so no out up into than ' +
  'them only could new some time these two may first then do any like my now over such our man me ' +
  'even most made after also did many before must through back years where much your way well down'
).split(' ');

export interface SyntheticOptions {
  batch: number;
  kmax: number;
  seed?: number;
  /** τ per gated depth. */
  taus?: Record<string, number>;
  baseDepth?: number;
  baseTokens?: number;
  maxDepth?: number;
  topk?: number;
  beam?: number;
  maxNewTokens?: number;
}

interface Live {
  id: string;
  ease: number;
  generated: number;
}

export class SyntheticRun {
  readonly options: Required<SyntheticOptions>;
  private readonly rand: () => number;
  private live: Live[] = [];
  private nextRequest = 0;
  private stepIndex = 0;
  private clock = 0;
  private readonly samples = new Map<number, { accepted: number[]; rejected: number[] }>();

  constructor(options: SyntheticOptions) {
    this.options = {
      seed: 7,
      taus: { '0': 0.3, '2': 0.35 },
      baseDepth: 3,
      baseTokens: 5,
      maxDepth: 7,
      topk: 3,
      beam: 2,
      maxNewTokens: 96,
      ...options,
    };
    this.rand = mulberry32(this.options.seed);
    for (let i = 0; i < this.options.batch; i += 1) this.admit();
  }

  setTaus(taus: Record<string, number>): void {
    this.options.taus = { ...this.options.taus, ...taus };
  }

  private admit(): void {
    this.live.push({ id: String(this.nextRequest++), ease: 0.35 + 0.6 * this.rand(), generated: 0 });
  }

  private word(): { token: number; text: string } {
    const token = Math.floor(this.rand() * WORDS.length);
    return { token, text: ` ${WORDS[token]}` };
  }

  /** Drafts a beam tree: top-k children per frontier node, the best `beam` nodes expand. */
  private draft(ease: number): TreeNode[] {
    const { topk, beam, maxDepth } = this.options;
    const nodes: TreeNode[] = [{ id: 0, parent: -1, depth: -1, token: 1, text: '', logq: 0, pathScore: 0, grant: 'root', verified: true }];
    let frontier = [0];
    for (let depth = 0; depth < maxDepth; depth += 1) {
      const layer: number[] = [];
      for (const parent of frontier) {
        let mass = Math.min(0.97, ease * (0.85 + 0.3 * this.rand()) * Math.pow(0.93, depth));
        for (let k = 0; k < topk; k += 1) {
          const q = k === 0 ? mass : (1 - mass) * (0.55 + 0.3 * this.rand()) * (k === 1 ? 1 : 0.5);
          if (k === 0) mass = q;
          const w = this.word();
          nodes.push({
            id: nodes.length,
            parent,
            depth,
            ...w,
            logq: Math.log(Math.max(1e-6, q)),
            pathScore: nodes[parent].pathScore + Math.log(Math.max(1e-6, q)),
            grant: 'base',
            verified: false,
          });
          layer.push(nodes.length - 1);
        }
      }
      layer.sort((a, b) => nodes[b].pathScore - nodes[a].pathScore);
      frontier = layer.slice(0, beam);
    }
    return nodes;
  }

  next(): StepEvent {
    const o = this.options;
    const budgetPerRequest = Math.floor(o.kmax / this.live.length) - 1;
    const plans = this.live.map((req) => {
      const nodes = this.draft(req.ease);
      const confidences: number[] = [];
      for (let d = 0; d < o.maxDepth; d += 1) {
        const best = Math.max(...nodes.filter((n) => n.depth === d).map((n) => n.pathScore));
        confidences.push(Math.exp(best));
      }
      const gates: RequestStep['gates'] = [];
      let stopDepth = o.maxDepth - 1;
      for (const [key, tau] of Object.entries(o.taus).sort((a, b) => Number(a[0]) - Number(b[0]))) {
        const d = Number(key);
        if (d >= o.maxDepth) continue;
        const pass = confidences[d] > tau;
        gates.push({ depth: d, confidence: confidences[d], tau, pass });
        if (!pass) {
          stopDepth = d;
          break;
        }
      }
      return { req, nodes, confidences, gates, stopDepth, truncated: stopDepth < o.maxDepth - 1 };
    });

    // Base: best nodes (parents first) within the base depth and the gate stop.
    let used = this.live.length;
    const baseUsed = new Map<string, number>();
    for (const p of plans) {
      const share = Math.min(o.baseTokens, Math.max(0, budgetPerRequest));
      const candidates = p.nodes
        .filter((n) => n.depth >= 0 && n.depth < Math.min(o.baseDepth, p.stopDepth + 1))
        .sort((a, b) => b.pathScore - a.pathScore);
      let count = 0;
      for (const n of candidates) {
        if (count >= share) break;
        if (!p.nodes[n.parent].verified) continue;
        n.verified = true;
        n.grant = 'base';
        count += 1;
      }
      baseUsed.set(p.req.id, count);
      used += count;
    }
    const released: Array<{ from: string; tokens: number }> = plans
      .filter((p) => p.truncated)
      .map((p) => ({ from: p.req.id, tokens: Math.max(0, Math.min(o.baseTokens, budgetPerRequest) - (baseUsed.get(p.req.id) ?? 0)) }))
      .filter((r) => r.tokens > 0);
    const transfers: StepEvent['transfers'] = [];
    let depthTokens = 0;
    // Priority 1: confident requests extend one layer at a time, highest confidence first.
    for (let d = o.baseDepth; d < o.maxDepth; d += 1) {
      const deepening = plans.filter((p) => !p.truncated).sort((a, b) => b.confidences[d] - a.confidences[d]);
      for (const p of deepening) {
        if (used >= o.kmax) break;
        const parentOnPath = p.nodes.filter((n) => n.depth === d - 1 && n.verified).sort((a, b) => b.pathScore - a.pathScore)[0];
        if (!parentOnPath) continue;
        const child = p.nodes.filter((n) => n.parent === parentOnPath.id).sort((a, b) => b.pathScore - a.pathScore)[0];
        if (!child) continue;
        child.verified = true;
        child.grant = 'depth';
        const payer = released.find((r) => r.tokens > 0);
        if (payer) {
          payer.tokens -= 1;
          child.paidBy = payer.from;
          const t = transfers.find((x) => x.from === payer.from && x.to === p.req.id);
          if (t) t.tokens += 1;
          else transfers.push({ from: payer.from, to: p.req.id, tokens: 1 });
        }
        used += 1;
        depthTokens += 1;
      }
    }
    // Priority 2: what is left widens truncated requests at their truncation depth.
    let widthTokens = 0;
    for (const p of plans.filter((x) => x.truncated)) {
      const extra = p.nodes
        .filter((n) => n.depth === p.stopDepth && !n.verified && p.nodes[n.parent].verified)
        .sort((a, b) => b.pathScore - a.pathScore)
        .slice(0, 2);
      for (const n of extra) {
        if (used >= o.kmax) break;
        n.verified = true;
        n.grant = 'width';
        used += 1;
        widthTokens += 1;
      }
    }

    const requests: RequestStep[] = plans.map((p) => {
      const accepted: number[] = [];
      let at = 0;
      for (;;) {
        const kids = p.nodes.filter((n) => n.parent === at && n.verified).sort((a, b) => b.pathScore - a.pathScore);
        const hit = kids.find((k) => this.rand() < Math.min(0.98, Math.exp(k.logq) * 1.08));
        if (!hit) break;
        accepted.push(hit.id);
        at = hit.id;
      }
      p.confidences.forEach((c, d) => {
        const s = this.samples.get(d) ?? { accepted: [], rejected: [] };
        (accepted.length > d ? s.accepted : s.rejected).push(c);
        this.samples.set(d, s);
      });
      const bonus = this.word();
      const emitted = [...accepted.map((id) => p.nodes[id].token), bonus.token];
      p.req.generated += emitted.length;
      const finished = p.req.generated >= o.maxNewTokens ? ('length' as const) : undefined;
      return {
        requestId: p.req.id,
        nodes: p.nodes,
        gates: p.gates,
        confidences: p.confidences,
        accepted,
        bonusToken: bonus.token,
        emitted,
        emittedText: accepted.map((id) => p.nodes[id].text).join('') + bonus.text,
        ...(finished ? { finished } : {}),
      };
    });

    const roots = this.live.length;
    const base = [...baseUsed.values()].reduce((a, b) => a + b, 0);
    const totalMs = 20 + used * 0.35 + this.rand() * 4;
    this.clock += totalMs;
    const event: StepEvent = {
      type: 'step',
      step: this.stepIndex++,
      t: this.clock,
      kmax: o.kmax,
      verifiedTokens: used,
      requests,
      timings: { draftMs: totalMs * 0.3, packMs: totalMs * 0.05, verifyMs: totalMs * 0.55, commitMs: totalMs * 0.1, totalMs },
      budget: { roots, base, depth: depthTokens, width: widthTokens, unused: o.kmax - used },
      transfers,
      paddingWaste: 0,
    };
    // Retire finished requests and admit new ones (continuous batching).
    this.live = this.live.filter((r) => r.generated < o.maxNewTokens);
    while (this.live.length < o.batch) this.admit();
    return event;
  }

  histograms(bins = 20): DepthHistogram[] {
    return [...this.samples.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([depth, s]) => {
        const edges = Array.from({ length: bins + 1 }, (_, i) => i / bins);
        const count = (values: number[]): number[] => {
          const out = new Array<number>(bins).fill(0);
          for (const v of values) out[Math.min(bins - 1, Math.floor(v * bins))] += 1;
          return out;
        };
        return { depth, edges, accepted: count(s.accepted), rejected: count(s.rejected), auc: auc(s.accepted, s.rejected) };
      });
  }
}

function auc(pos: number[], neg: number[]): number | null {
  if (pos.length < 5 || neg.length < 5) return null;
  const p = pos.slice(-200);
  const n = neg.slice(-200);
  let wins = 0;
  for (const a of p) for (const b of n) wins += a > b ? 1 : a === b ? 0.5 : 0;
  return wins / (p.length * n.length);
}
