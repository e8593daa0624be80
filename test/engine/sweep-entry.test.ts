// Sweep entries: a policy, its draft window, and repeats (A/A controls), parsed before any model loads.
import { describe, expect, it } from 'vitest';
import { checkSweep, parseSweepEntry, splitRepeat } from '../../src/engine/run/sweep.js';

describe('sweep entries', () => {
  it('reads a policy, a draft window and a repeat of either', () => {
    expect(parseSweepEntry('static')).toEqual({ label: 'static', policy: 'static' });
    expect(parseSweepEntry('echo@4:16')).toEqual({ label: 'echo@4:16', policy: 'echo', draftWindow: { sink: 4, recent: 16 } });
    expect(parseSweepEntry('echo@whole')).toEqual({ label: 'echo@whole', policy: 'echo', draftWindow: null });
    expect(parseSweepEntry('static#2')).toEqual({ label: 'static#2', policy: 'static', repeats: 'static' });
    expect(parseSweepEntry('echo@4:16#3')).toEqual({ label: 'echo@4:16#3', policy: 'echo', draftWindow: { sink: 4, recent: 16 }, repeats: 'echo@4:16' });
    expect(splitRepeat('eagle2')).toEqual({ repeated: 'eagle2', copy: null });
  });

  it('refuses a repeat numbered below 2, or one whose entry is not listed', () => {
    expect(() => parseSweepEntry('static#1')).toThrow(/static#1: a repeat is ENTRY#N with N ≥ 2/);
    expect(() => parseSweepEntry('static#')).toThrow(/a repeat is ENTRY#N/);
    expect(() => parseSweepEntry('nope#2')).toThrow(/unknown policy "nope"/);
    const sweep = { batches: [1], kmax: () => 8, rounds: 1 };
    expect(() => checkSweep({ ...sweep, policies: ['static', 'echo@4:16#2'] })).toThrow(/echo@4:16#2 repeats echo@4:16, which is not among the policies/);
    expect(() => checkSweep({ ...sweep, policies: ['echo@4:16', 'echo@4:16#2'] })).not.toThrow();
  });
});
