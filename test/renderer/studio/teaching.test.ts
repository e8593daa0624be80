import { describe, expect, it } from 'vitest';
import { teachStep } from '../../../src/renderer/studio/teaching.js';
import { node, sampleRequest, sampleStep } from './fixtures.js';

describe('teachStep', () => {
  const truncated = sampleRequest({
    requestId: '3',
    gates: [
      { depth: 0, confidence: 0.9, tau: 0.3, pass: true },
      { depth: 2, confidence: 0.21, tau: 0.3, pass: false },
    ],
    nodes: [node(0, -1, -1), node(1, 0, 0), node(2, 1, 1), node(3, 2, 2, { grant: 'width', text: ' cat' }), node(4, 2, 2, { grant: 'width', text: ' dog' })],
    accepted: [1, 2],
    emittedText: ' t1 t2 sat',
  });
  const confident = sampleRequest({
    requestId: '7',
    nodes: sampleRequest().nodes.map((n) => (n.grant === 'depth' ? { ...n, paidBy: '3' } : n)),
  });
  const step = sampleStep(12, [truncated, confident], {
    transfers: [{ from: '3', to: '7', tokens: 3 }],
    budget: { roots: 2, base: 8, depth: 3, width: 2, unused: 1 },
    kmax: 16,
    verifiedTokens: 15,
  });
  const decisions = teachStep(step);
  const texts = decisions.map((d) => d.text);

  it('opens with the budget split of the step', () => {
    expect(texts[0]).toBe(
      'Step 12: 15 of K_max 16 tokens verified in one target forward — 2 roots, 8 base, 3 depth extension, 2 width expansion, 1 unused.',
    );
  });

  it('explains a truncation with confidence, τ and where the tokens went', () => {
    expect(texts).toContain('request 3 truncated at depth 2: confidence 0.21 ≤ τ 0.30; its 3 tokens went to request 7.');
    expect(texts).toContain('request 3 passed the gate at depth 0: confidence 0.90 > τ 0.30, so it may keep deepening.');
  });

  it('names who paid for a depth extension and what a width expansion added', () => {
    expect(texts).toContain('request 7 deepened to depth 2 with 1 extra token, paid by request 3 (1).');
    const selfPaid = teachStep(sampleStep(0, [sampleRequest({ requestId: '7' })])).map((d) => d.text);
    expect(selfPaid).toContain('request 7 deepened to depth 2 with 1 extra token, paid by the unused pool (1).');
    expect(texts).toContain('request 3 widened at depth 2 with 2 next-best candidates (" cat", " dog").');
  });

  it('reports accepted tokens and the bonus per request, and a finished request', () => {
    expect(texts).toContain('request 3 accepted 2 of 4 verified draft tokens (" t1" " t2"), plus the bonus token " sat".');
    const finished = teachStep(sampleStep(1, [sampleRequest({ finished: 'eos' })]));
    expect(finished.at(-1)).toEqual({ kind: 'finish', requestId: '3', text: 'request 3 finished (end of sequence).' });
  });

  it('explains a request the price stopped, and nothing for other stops', () => {
    const priced = sampleRequest({ requestId: '5', stop: { reason: 'not-worth-its-cost', depth: 3 } });
    const said = teachStep(sampleStep(2, [priced, sampleRequest({ requestId: '6', stop: { reason: 'max-depth', depth: 4 } })]));
    expect(said.filter((d) => d.kind === 'priced')).toEqual([
      {
        kind: 'priced',
        requestId: '5',
        text: 'request 5 stopped deepening before depth 3: that layer would add less than its cost (a draft forward, or verification past the knee).',
      },
    ]);
  });

  it('says how many draft forwards the step took and of how many rows, when the engine recorded them', () => {
    expect(texts.some((t) => t.startsWith('Drafting'))).toBe(false);
    const drafted = teachStep({ ...step, draftRows: [9, 3, 1] });
    expect(drafted[1]).toEqual({
      kind: 'draft',
      text: 'Drafting took 3 draft forwards, one per layer, of 9, 3, 1 rows (13 in all); the first also fed the draft the accepted tokens it had not seen yet.',
    });
  });

  it('gives every sentence the request it is about', () => {
    expect(decisions.filter((d) => d.kind !== 'budget' && d.kind !== 'draft').every((d) => d.requestId !== undefined)).toBe(true);
  });
});
