// Calibration on too little: a gated run whose warm-up finds no sweet spot runs ungated and says
// so; `calibrate` learns from each distinct prompt once, warns when they are few, and refuses a
// set with no prompt at all (an empty prompt once gave AUC 1.000).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeCalibrate } from '../../../src/cli/commands/calibrate.js';
import { register as registerRun } from '../../../src/cli/commands/run.js';
import { register as registerSweep } from '../../../src/cli/commands/sweep.js';
import { calibrationWorkload } from '../../../src/engine/run/warmup.js';
import { runCli } from '../helpers.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';

const tmp = tinyPairFolders('echo-too-little-');
const { targetDir, draftDir } = tmp;
let promptsFile: string;

beforeAll(() => {
  promptsFile = join(tmp.path, 'prompts.jsonl');
  writeFileSync(promptsFile, ['def add(x, y):', 'Once upon a time', 'x = 1'].map((p, i) => JSON.stringify({ id: `p${i}`, prompt: p })).join('\n'));
});

describe('a gated run at short outputs without a profile', () => {
  for (const policy of ['echo', 'dense', 'fixed']) {
    it(`${policy}: runs ungated and says so on stderr and in the JSON`, async () => {
      const trace = join(tmp.path, `${policy}-ungated.jsonl`);
      const { stdout, stderr } = await runCli(registerRun, [
        'run', '--policy', policy, '--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '2', '--draft', draftDir, '--target', targetDir, '--json', '--trace', trace,
      ]);
      expect(stderr).toMatch(new RegExp(`${policy}: the warm-up found no depth whose confidence separates .*; running ungated`));
      const summary = JSON.parse(stdout);
      expect(summary.ungated).toBe(true);
      expect(JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]).config.taus).toEqual({}); // the trace header says so too
      expect(summary.requests).toBe(3);
    }, 60_000);
  }

  it('sweep runs an ungated echo beside static', async () => {
    const { stdout, stderr } = await runCli(registerSweep, [
      'sweep', '--policies', 'static,echo', '--batches', '1', '--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '2', '--draft', draftDir, '--target', targetDir, '--json',
    ]);
    expect(stderr).toMatch(/running ungated/);
    expect(JSON.parse(stdout)).toBeTruthy();
  }, 60_000);
});

describe('calibration samples', () => {
  it('keeps each distinct prompt once, and warns when few are left', () => {
    const { workload, notes } = calibrationWorkload(
      [
        { id: 'a', promptTokens: [1, 2, 3] },
        { id: 'a#2', promptTokens: [1, 2, 3] },
        { id: 'copy', promptTokens: [1, 2, 3] },
        { id: 'b', promptTokens: [4] },
      ],
      'p.jsonl',
    );
    expect(workload.map((w) => w.id)).toEqual(['a', 'b']);
    expect(notes[0]).toMatch(/left 2 prompts out of the calibration, the same tokens as an earlier one .*"a#2", "copy"/);
    expect(notes[1]).toMatch(/warning: calibrating on only 2 distinct prompts; AUCs and τ_d from so few samples are unreliable/);
    expect(() => calibrationWorkload([], 'p.jsonl')).toThrow(/cannot calibrate on p\.jsonl: it has no prompt with any tokens/);
  });

  it('calibrate: a one-prompt file is calibrated once, not cycled into 24 copies, and says so', async () => {
    const one = join(tmp.path, 'one.jsonl');
    writeFileSync(one, JSON.stringify({ id: 'only', prompt: 'def add(x, y): return x + y' }));
    const lines: string[] = [];
    const flags = { prompts: one, draft: draftDir, target: targetDir, delta: 0.5, depth: 3, requests: 24, batch: 4, maxNewTokens: 16, threads: 1, out: join(tmp.path, 'one-profile.json') };
    const result = await executeCalibrate(flags, (l) => lines.push(l)).catch((err: Error) => err);
    expect(lines.join('\n')).toMatch(/one\.jsonl holds 1 prompt; calibrating on it once each, not 24/);
    expect(lines.join('\n')).toMatch(/warning: calibrating on only 1 distinct prompt/);
    if (!(result instanceof Error)) expect(result.profile.samples.prompts).toBe(1);
  }, 60_000);

  it('calibrate: refuses a file whose only prompt is empty', async () => {
    const empty = join(tmp.path, 'empty.jsonl');
    writeFileSync(empty, JSON.stringify({ id: 'e', prompt: '' }));
    const flags = { prompts: empty, draft: draftDir, target: targetDir, delta: 0.5, depth: 3, requests: 24, batch: 4, maxNewTokens: 16, threads: 1, out: join(tmp.path, 'empty-profile.json') };
    await expect(executeCalibrate(flags)).rejects.toThrow(/cannot calibrate on .*empty\.jsonl: it has no prompt with any tokens/);
  });
});
