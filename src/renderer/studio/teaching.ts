// Teaching mode: one plain sentence per scheduler decision in a step, in the order the engine made
// them (gates, depth extensions, width expansions, verification), after a summary of the budget,
// why any of it went unused, and the draft forwards that paid for the tree; then per request what
// it was given and why it stopped deepening. Every reason is read from the step event (its
// requests' `stop`), never guessed: where the event records none, the sentence says so.
import type { DeepeningStop, DeepeningStopReason, GrantKind, RequestStep, StepEvent } from '../../shared/events.js';
import { formatCompared, plural, tokenLabel, visibleText } from './tokens.js';

export type DecisionKind = 'budget' | 'unused' | 'drain' | 'draft' | 'given' | 'truncate' | 'pass' | 'waived' | 'priced' | 'depth' | 'width' | 'verify' | 'finish';

export interface Decision {
  kind: DecisionKind;
  /** The request the decision is about; absent for step-wide sentences. */
  requestId?: string;
  text: string;
}


function listPayers(counts: Map<string, number>, pool: number): string {
  const parts = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([id, n]) => `request ${id} (${n})`);
  if (pool > 0) parts.push(`the unused pool (${pool})`);
  if (parts.length <= 1) return parts[0] ?? 'the unused pool';
  return `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

function gateSentences(step: StepEvent, req: RequestStep): Decision[] {
  const out: Decision[] = [];
  const given = step.transfers.filter((t) => t.from === req.requestId);
  for (const gate of req.gates) {
    const [c, tau] = formatCompared(gate.confidence, gate.tau);
    if (gate.pass) {
      out.push({
        kind: 'pass',
        requestId: req.requestId,
        text: `request ${req.requestId} passed the gate at depth ${gate.depth}: confidence ${c} > τ ${tau}, so it may keep deepening.`,
      });
      continue;
    }
    if (gate.waived) {
      out.push({
        kind: 'waived',
        requestId: req.requestId,
        text: `request ${req.requestId} failed the gate at depth ${gate.depth} (confidence ${c} ≤ τ ${tau}) but kept deepening: its best node there was worth more than anything the budget a cut frees would buy.`,
      });
      continue;
    }
    const tokens = given.reduce((sum, t) => sum + t.tokens, 0);
    const receivers = [...new Set(given.map((t) => t.to))];
    const where =
      tokens === 0
        ? 'it released no budget to others'
        : `its ${plural(tokens, 'token')} went to ${receivers.map((r) => `request ${r}`).join(', ')}`;
    out.push({
      kind: 'truncate',
      requestId: req.requestId,
      text: `request ${req.requestId} truncated at depth ${gate.depth}: confidence ${c} ≤ τ ${tau}; ${where}.`,
    });
  }
  // A cost stop has no gate check to explain it: say what the price decided.
  if (req.stop?.reason === 'not-worth-its-cost') {
    out.push({
      kind: 'priced',
      requestId: req.requestId,
      text: `request ${req.requestId} stopped deepening before depth ${req.stop.depth}: that layer would add less than its cost (a draft forward, or verification past the knee).`,
    });
  }
  return out;
}

function growthSentences(req: RequestStep): Decision[] {
  const out: Decision[] = [];
  const depthNodes = req.nodes.filter((n) => n.verified && n.grant === 'depth');
  if (depthNodes.length > 0) {
    const payers = new Map<string, number>();
    let pool = 0;
    for (const n of depthNodes) {
      if (n.paidBy !== undefined && n.paidBy !== req.requestId) payers.set(n.paidBy, (payers.get(n.paidBy) ?? 0) + 1);
      else pool += 1;
    }
    const deepest = Math.max(...depthNodes.map((n) => n.depth));
    out.push({
      kind: 'depth',
      requestId: req.requestId,
      text: `request ${req.requestId} deepened to depth ${deepest} with ${plural(depthNodes.length, 'extra token')}, paid by ${listPayers(payers, pool)}.`,
    });
  }
  const widthNodes = req.nodes.filter((n) => n.verified && n.grant === 'width');
  if (widthNodes.length > 0) {
    const depths = [...new Set(widthNodes.map((n) => n.depth))].sort((a, b) => a - b);
    const tokens = widthNodes.slice(0, 4).map(tokenLabel).join(', ');
    out.push({
      kind: 'width',
      requestId: req.requestId,
      text: `request ${req.requestId} widened at depth ${depths.join(', ')} with ${plural(widthNodes.length, 'next-best candidate')} (${tokens}${widthNodes.length > 4 ? ', …' : ''}).`,
    });
  }
  return out;
}

/** Why a request stopped deepening, as the end of a sentence ("… stopped deepening at depth 2: <this>"). */
const STOP_WORDS: Record<DeepeningStopReason, (depth: number) => string> = {
  truncated: (d) => `its gate at depth ${d} cut it`,
  'max-depth': (d) => `depth ${d} is past its depth limit (the max depth, or the last layer its remaining tokens can use)`,
  'no-budget': (d) => `no budget was left for depth ${d}`,
  'no-candidates': (d) => `the draft had no candidates left for depth ${d}`,
  'not-worth-its-cost': (d) => `depth ${d} was not worth its price`,
  'not-probed': () => `drafting was probed on a few other requests first, to learn whether it pays`,
};

/** How the step-wide sentence groups stops: who they were, by reason, in the engine's order. */
const STOP_GROUPS: ReadonlyArray<{ reason: DeepeningStopReason; words: (n: number) => string }> = [
  { reason: 'truncated', words: (n) => `gates cut ${plural(n, 'request')}` },
  { reason: 'max-depth', words: (n) => `${plural(n, 'request')} reached ${n === 1 ? 'its' : 'their'} depth limit` },
  { reason: 'not-worth-its-cost', words: (n) => `${n === 1 ? '1 request’s' : `${n} requests’`} next layer was not worth its price` },
  { reason: 'not-probed', words: (n) => `${plural(n, 'request')} waited while drafting was probed on the others` },
  { reason: 'no-candidates', words: (n) => `${plural(n, 'request')} had no candidates left to draft` },
  { reason: 'no-budget', words: (n) => `${plural(n, 'request')} ran out of budget` },
];

const LISTED_PER_REASON = 6;

function listStops(stops: ReadonlyArray<{ requestId: string; stop: DeepeningStop }>): string {
  const shown = stops.slice(0, LISTED_PER_REASON).map(({ requestId, stop }) => `request ${requestId} at depth ${stop.depth}`);
  const more = stops.length - shown.length;
  return shown.join(', ') + (more > 0 ? ` and ${more} more` : '');
}

/**
 * Why K_max was not all spent (or, when it was, who ran out of it), from the requests' stops.
 * Widening spends what the deepening left; the event does not record why it stopped, so the
 * sentence says only that it did not spend the rest.
 */
function unusedSentence(step: StepEvent): Decision | null {
  const stopped = step.requests.filter((r): r is RequestStep & { stop: DeepeningStop } => r.stop !== undefined);
  const unused = step.budget.unused;
  const groups = STOP_GROUPS.map(({ reason, words }) => {
    const stops = stopped.filter((r) => r.stop.reason === reason).map((r) => ({ requestId: r.requestId, stop: r.stop }));
    return stops.length === 0 ? '' : `${words(stops.length)} (${listStops(stops)})`;
  }).filter((part) => part !== '');
  if (unused <= 0) {
    const outOfBudget = stopped.filter((r) => r.stop.reason === 'no-budget');
    if (outOfBudget.length === 0) return null;
    return {
      kind: 'unused',
      text: `All of K_max ${step.kmax} was spent: ${plural(outOfBudget.length, 'request')} ran out of budget (${listStops(outOfBudget.map((r) => ({ requestId: r.requestId, stop: r.stop })))}).`,
    };
  }
  const head = `${unused} of K_max ${step.kmax} went unused`;
  if (stopped.length === 0) {
    return { kind: 'unused', text: `${head}; this step records no reason (only the elastic policies — echo, dense, fixed, ddd — record why a request stopped deepening).` };
  }
  const silent = step.requests.length - stopped.length;
  return {
    kind: 'unused',
    text:
      `${head}. Why deepening stopped: ${groups.join('; ')}` +
      (silent > 0 ? `; ${plural(silent, 'request')} recorded no stop` : '') +
      '. Widening did not spend the rest (the step does not record why).',
  };
}

const GRANT_WORDS: ReadonlyArray<{ kind: GrantKind; label: string }> = [
  { kind: 'root', label: 'root' },
  { kind: 'base', label: 'base' },
  { kind: 'depth', label: 'depth extension' },
  { kind: 'width', label: 'width expansion' },
];

/** What the request was given this step, by grant kind, and why it stopped deepening where it did. */
function givenSentence(req: RequestStep): Decision {
  const counts = new Map<GrantKind, number>();
  for (const n of req.nodes) if (n.verified) counts.set(n.grant, (counts.get(n.grant) ?? 0) + 1);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const parts = GRANT_WORDS.filter(({ kind }) => (counts.get(kind) ?? 0) > 0).map(({ kind, label }) => `${counts.get(kind)} ${label}`);
  const why = req.stop ? `; it stopped deepening at depth ${req.stop.depth}: ${STOP_WORDS[req.stop.reason](req.stop.depth)}` : '';
  const weighed =
    req.drainWeight !== undefined && req.drainWeight < 1 ? `; its tokens counted ×${req.drainWeight.toFixed(2)}, as it is expected to end before the slowest request` : '';
  return {
    kind: 'given',
    requestId: req.requestId,
    text: `request ${req.requestId} was given ${plural(total, 'token')} (${parts.join(', ')})${why}${weighed}.`,
  };
}

function verifySentence(req: RequestStep): Decision {
  const drafted = req.nodes.filter((n) => n.verified && n.parent >= 0).length;
  const byId = new Map(req.nodes.map((n) => [n.id, n]));
  const acceptedText = req.accepted
    .map((id) => byId.get(id))
    .filter((n) => n !== undefined)
    .map((n) => tokenLabel(n))
    .join(' ');
  const bonusNode = req.nodes.find((n) => n.token === req.bonusToken && n.text !== undefined);
  const bonus = bonusNode ? tokenLabel(bonusNode) : bonusTextFromEmitted(req) ?? `#${req.bonusToken}`;
  const what = req.accepted.length > 0 ? ` (${acceptedText})` : '';
  return {
    kind: 'verify',
    requestId: req.requestId,
    text: `request ${req.requestId} accepted ${req.accepted.length} of ${plural(drafted, 'verified draft token')}${what}, plus the bonus token ${bonus}.`,
  };
}

/** The bonus token's text: what the emitted text has beyond the accepted tokens' texts. */
function bonusTextFromEmitted(req: RequestStep): string | undefined {
  if (req.emittedText === undefined) return undefined;
  const byId = new Map(req.nodes.map((n) => [n.id, n]));
  const prefix = req.accepted.map((id) => byId.get(id)?.text ?? '').join('');
  if (!req.emittedText.startsWith(prefix)) return undefined;
  return `"${visibleText(req.emittedText.slice(prefix.length))}"`;
}

/** Every decision of the step as a sentence. */
export function teachStep(step: StepEvent): Decision[] {
  const b = step.budget;
  const out: Decision[] = [
    {
      kind: 'budget',
      text:
        `Step ${step.step}: ${step.verifiedTokens} of K_max ${step.kmax} tokens verified in one target forward — ` +
        `${b.roots} roots, ${b.base} base, ${b.depth} depth extension, ${b.width} width expansion, ${b.unused} unused.`,
    },
  ];
  const unused = unusedSentence(step);
  if (unused) out.push(unused);
  if (step.requests.some((r) => r.drainWeight !== undefined)) {
    out.push({
      kind: 'drain',
      text:
        'No request waits to join, so the run ends with its slowest request: each request’s tokens counted by its steps left ' +
        '(remaining tokens over the tokens it emits a step) against the most in the batch.',
    });
  }
  const rows = step.draftRows;
  if (rows !== undefined && rows.length > 0) {
    const total = rows.reduce((a, b) => a + b, 0);
    out.push({
      kind: 'draft',
      text:
        `Drafting took ${plural(rows.length, 'draft forward')}, one per layer, of ${rows.join(', ')} rows (${total} in all); ` +
        `the first also fed the draft the accepted tokens it had not seen yet.`,
    });
  }
  for (const req of step.requests) out.push(...gateSentences(step, req));
  for (const req of step.requests) out.push(...growthSentences(req));
  for (const req of step.requests) out.push(givenSentence(req));
  for (const req of step.requests) {
    out.push(verifySentence(req));
    if (req.finished !== undefined) {
      out.push({
        kind: 'finish',
        requestId: req.requestId,
        text: `request ${req.requestId} finished (${req.finished === 'eos' ? 'end of sequence' : 'reached max new tokens'}).`,
      });
    }
  }
  return out;
}
