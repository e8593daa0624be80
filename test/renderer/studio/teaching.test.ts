import { describe, expect, it } from 'vitest';
import { teachStep } from '../../../src/renderer/studio/teaching.js';
import { formatCompared, formatProbability } from '../../../src/renderer/studio/tokens.js';
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

  it('says when a failed gate cut nothing because the cut would have bought less', () => {
    const waived = sampleRequest({ requestId: '5', gates: [{ depth: 1, confidence: 0.1, tau: 0.3, pass: false, waived: true }] });
    const said = teachStep(sampleStep(3, [waived])).filter((d) => d.requestId === '5');
    expect(said.map((d) => d.kind)).toContain('waived');
    expect(said.map((d) => d.kind)).not.toContain('truncate');
    expect(said.find((d) => d.kind === 'waived')!.text).toBe(
      'request 5 failed the gate at depth 1 (confidence 0.1 ≤ τ 0.3) but kept deepening: its best node there was worth more than anything the budget a cut frees would buy.',
    );
  });

  it('explains a truncation with confidence, τ and where the tokens went', () => {
    expect(texts).toContain('request 3 truncated at depth 2: confidence 0.21 ≤ τ 0.3; its 3 tokens went to request 7.');
    expect(texts).toContain('request 3 passed the gate at depth 0: confidence 0.9 > τ 0.3, so it may keep deepening.');
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
    expect(drafted.find((d) => d.kind === 'draft')).toEqual({
      kind: 'draft',
      text: 'Drafting took 3 draft forwards, one per layer, of 9, 3, 1 rows (13 in all); the first also fed the draft the accepted tokens it had not seen yet.',
    });
  });

  it('gives every sentence the request it is about', () => {
    expect(decisions.filter((d) => d.kind !== 'budget' && d.kind !== 'unused' && d.kind !== 'draft').every((d) => d.requestId !== undefined)).toBe(true);
  });

  it('prints a calibrated τ and a confidence with their significant digits, never as 0.00', () => {
    const tiny = sampleRequest({
      requestId: '4',
      gates: [
        { depth: 4, confidence: 0.0003, tau: 0.0004225, pass: false },
        { depth: 5, confidence: 3.1e-10, tau: 2.26e-10, pass: true },
      ],
    });
    const said = teachStep(sampleStep(3, [tiny])).map((d) => d.text);
    expect(said).toContain('request 4 truncated at depth 4: confidence 3e-4 ≤ τ 4.23e-4; it released no budget to others.');
    expect(said).toContain('request 4 passed the gate at depth 5: confidence 3.1e-10 > τ 2.26e-10, so it may keep deepening.');
  });

  it('says why K_max went unused, naming the requests and depths of each stop', () => {
    const stopped = (requestId: string, reason: NonNullable<ReturnType<typeof sampleRequest>['stop']>['reason'], depth: number) =>
      sampleRequest({ requestId, stop: { reason, depth } });
    const said = teachStep(
      sampleStep(5, [stopped('1', 'truncated', 2), stopped('2', 'truncated', 4), stopped('3', 'max-depth', 6), stopped('4', 'not-worth-its-cost', 3), stopped('5', 'no-candidates', 1)], {
        kmax: 96,
        budget: { roots: 5, base: 25, depth: 5, width: 3, unused: 58 },
      }),
    );
    expect(said[1]).toEqual({
      kind: 'unused',
      text:
        '58 of K_max 96 went unused. Why deepening stopped: gates cut 2 requests (request 1 at depth 2, request 2 at depth 4); ' +
        '1 request reached its depth limit (request 3 at depth 6); 1 request’s next layer was not worth its price (request 4 at depth 3); ' +
        '1 request had no candidates left to draft (request 5 at depth 1). Widening did not spend the rest (the step does not record why).',
    });
  });

  it('says which requests waited while a probe drafted for a few others', () => {
    const waited = (requestId: string) => sampleRequest({ requestId, stop: { reason: 'not-probed', depth: 0 } });
    const said = teachStep(sampleStep(9, [sampleRequest({ requestId: '1' }), waited('2'), waited('3')], { kmax: 40, budget: { roots: 3, base: 4, depth: 1, width: 1, unused: 31 } }));
    expect(said.find((d) => d.kind === 'unused')?.text).toContain('2 requests waited while drafting was probed on the others (request 2 at depth 0, request 3 at depth 0)');
    expect(said.find((d) => d.kind === 'given' && d.requestId === '2')?.text).toContain('drafting was probed on a few other requests first, to learn whether it pays');
  });

  it('says when K_max ran out, and when a policy records no reason for unused budget', () => {
    const full = teachStep(sampleStep(6, [sampleRequest({ requestId: '8', stop: { reason: 'no-budget', depth: 3 } })], { budget: { roots: 2, base: 8, depth: 4, width: 2, unused: 0 } }));
    expect(full.find((d) => d.kind === 'unused')?.text).toBe('All of K_max 16 was spent: 1 request ran out of budget (request 8 at depth 3).');
    const silent = teachStep(sampleStep(7, [sampleRequest()]));
    expect(silent.find((d) => d.kind === 'unused')?.text).toBe(
      '2 of K_max 16 went unused; this step records no reason (only the elastic policies — echo, dense, fixed, ddd — record why a request stopped deepening).',
    );
  });

  it('says per request what it was given, by kind, and why it stopped deepening', () => {
    const given = teachStep(sampleStep(8, [sampleRequest({ requestId: '9', stop: { reason: 'truncated', depth: 2 } })])).filter((d) => d.kind === 'given');
    // sampleRequest verifies the root, 4 base nodes, 1 depth extension and 1 width expansion.
    expect(given).toEqual([
      { kind: 'given', requestId: '9', text: 'request 9 was given 7 tokens (1 root, 4 base, 1 depth extension, 1 width expansion); it stopped deepening at depth 2: its gate at depth 2 cut it.' },
    ]);
  });

  it('says once no request waits that tokens count by steps left, and by how much for each request that ends sooner', () => {
    const drained = sampleStep(20, [sampleRequest({ requestId: '1', drainWeight: 1 }), sampleRequest({ requestId: '2', drainWeight: 0.375 })]);
    const decisions = teachStep(drained);
    expect(decisions.filter((d) => d.kind === 'drain')).toHaveLength(1);
    const given = decisions.filter((d) => d.kind === 'given').map((d) => d.text);
    expect(given[0]).not.toContain('counted');
    expect(given[1]).toContain('its tokens counted ×0.38, as it is expected to end before the slowest request');
    expect(teachStep(sampleStep(8, [sampleRequest()])).some((d) => d.kind === 'drain')).toBe(false);
  });
});

describe('formatProbability', () => {
  it('keeps three significant digits, in exponent form below 0.001', () => {
    expect([0.3, 0.0004225, 2.26e-10, 0.5, 0.123456, 0, 1].map((v) => formatProbability(v))).toEqual(['0.3', '4.23e-4', '2.26e-10', '0.5', '0.123', '0', '1']);
  });

  it('prints two different values compared in one sentence differently', () => {
    expect(formatCompared(0.31041, 0.3104)).toEqual(['0.31041', '0.3104']);
    expect(formatCompared(0.3, 0.3)).toEqual(['0.3', '0.3']);
  });
});
