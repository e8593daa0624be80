// Teaching mode: one plain sentence per scheduler decision in a step, in the order the engine made
// them (gates, depth extensions, width expansions, verification), after a summary of the budget
// and of the draft forwards that paid for the tree.
import type { RequestStep, StepEvent } from '../../shared/events.js';
import { formatNumber, tokenLabel, visibleText } from './tokens.js';

export type DecisionKind = 'budget' | 'draft' | 'truncate' | 'pass' | 'priced' | 'depth' | 'width' | 'verify' | 'finish';

export interface Decision {
  kind: DecisionKind;
  /** The request the decision is about; absent for step-wide sentences. */
  requestId?: string;
  text: string;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

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
    const c = formatNumber(gate.confidence);
    const tau = formatNumber(gate.tau);
    if (gate.pass) {
      out.push({
        kind: 'pass',
        requestId: req.requestId,
        text: `request ${req.requestId} passed the gate at depth ${gate.depth}: confidence ${c} > τ ${tau}, so it may keep deepening.`,
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
