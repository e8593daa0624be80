// `echo-studio trace what-if` on a real greedy run of the random pair, recorded with its
// expansions: the settings as flags, the report as JSON and text; and the --taus grammar.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatWhatIf, parseTaus, register } from '../../../src/cli/commands/trace.js';
import type { RunMetrics } from '../../../src/shared/events.js';
import { loadFixturePair, type FixturePair } from '../../engine/fixtures/pair.js';
import { KV_ROWS, recordRun } from '../../engine/trace/recorded-run.js';
import { runCli } from '../helpers.js';

const BATCH = 4;

describe('echo-studio trace what-if', () => {
  let pair: FixturePair;
  let recorded: { file: string; live: RunMetrics };

  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: BATCH, maxLength: KV_ROWS });
    const config = { batch: BATCH, requests: 6, maxNewTokens: 18, temperature: 0, seed: 1, policy: 'eagle2', kmax: 20, shape: { depth: 4, topk: 3, tokens: 4 } } as const;
    recorded = await recordRun(pair, config);
  });
  afterAll(async () => pair?.release());

  it('re-scores a recorded run with the settings as flags', async () => {
    const { stdout } = await runCli(register, ['trace', 'what-if', recorded.file, '--kmax', String(BATCH + 2), '--json']);
    const report = JSON.parse(stdout);
    expect(report.whatIf.settings).toEqual({ kmax: BATCH + 2 });
    expect(report.recorded.meanAcceptedTokens).toBe(recorded.live.meanAcceptedTokens);
    expect(formatWhatIf(report)).toMatch(/decided: \d+\/\d+ steps/);
  });

  it('parses per-depth thresholds and rejects bad ones', () => {
    expect(parseTaus('0=0.2, 5=0.35')).toEqual({ '0': 0.2, '5': 0.35 });
    expect(parseTaus('0:0.2,5:0.35')).toEqual({ '0': 0.2, '5': 0.35 }); // run --taus's grammar too
    expect(() => parseTaus('0=1.5')).toThrow(/--taus takes DEPTH:TAU,… with each τ in \[0, 1\]/);
    expect(() => parseTaus('zero=0.2')).toThrow(/--taus takes DEPTH:TAU/);
  });
});
