// `echo-studio reproduce --quick` on a tiny random pair: the report folder's files, the HTML's
// sections with their figures and the paper's numbers beside them, and every claim's verdict
// computed (one of the three, with what was measured), never left as a placeholder.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register, shownPath } from '../../../src/cli/commands/reproduce.js';
import { VERDICTS, type Claim } from '../../../src/engine/reproduce/claims.js';
import { parseCsv } from '../../../src/engine/reproduce/read-report.js';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { suggestKmax } from '../../../src/engine/cost/knee.js';
import { tempDir } from '../../engine/model/helpers.js';
import { writeTinyPair, type TinyPair } from '../../host/run-fixtures.js';
import { runCli } from '../helpers.js';

const tmp = tempDir('echo-reproduce-cli-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let pair: TinyPair;

beforeAll(() => {
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  pair = writeTinyPair(tmp.path);
});
afterAll(() => {
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

describe('echo-studio reproduce', () => {
  it('writes a self-contained report whose every verdict is computed from the data', async () => {
    const out = join(tmp.path, 'report');
    const args = ['reproduce', '--quick', '--draft', pair.draftDir, '--target', pair.targetDir, '--domains', 'code,math', '--batches', '1,3', '--requests', '2', '--max-new-tokens', '4', '--out', out, '--threads', '1', '--clock', 'modelled', '--hw', 'cpu-laptop'];
    const { stdout, stderr } = await runCli(register, args);
    expect(stderr).toMatch(/expected duration: at most about \d/);
    // Timed on a modelled device, the study is budgeted by its knee too (the laptop CPU's: 7).
    expect(stderr).toContain(`K_max from its knee, ${clockFromSpec('cpu-laptop').costs.knee} tokens`);
    expect(stderr).toMatch(/\[calibration 1\/2\] code/);
    expect(stderr).toMatch(/\[throughput against batch size\] code: batches 1, 3/);
    expect(stdout).toMatch(/wrote \d+ files to .* open .*report\.html/);
    const files = readdirSync(out).sort();
    for (const name of ['report.html', 'report.json', 'claims.csv', 'table1.csv', 'throughput.csv', 'calibration.csv', 'utilisation.csv', 'serving.txt', 'fig1-throughput.svg', 'fig4-utilisation.svg', 'table1-speedup.svg', 'fig2-densities-code.svg', 'fig2-densities-math.svg', 'explain.csv', 'explain-depth.csv', 'explain-confidence.csv', 'explain-bounds.svg', 'explain-depth.svg']) {
      expect(files).toContain(name);
    }
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as { claims: Claim[]; meta: { command: string; machine: { cores: number } } };
    expect(report.meta.command).toMatch(/^echo-studio reproduce --out \S+ --draft \S+ --target \S+ .*--domains code,math --batches 1,3 .*--quick/);
    expect(report.meta.machine.cores).toBeGreaterThan(0);
    // Every claim has a verdict of the three and says what it measured and against what noise.
    expect(report.claims.map((c) => c.id)).toEqual(expect.arrayContaining(['table1-echo-static-modelled', 'fig5-echo-static-modelled', 'fig2-sweet-spots', 'table1-echo-static-wall', 'table1-echo-ddd-wall', 'fig1-gain-shrinks-wall', 'fig5-echo-static-wall', 'fig5-dense-wall', 'fig5-fixed-wall', 'fig4-utilisation-median', 'fig4-utilisation-iqr']));
    for (const c of report.claims) {
      expect(VERDICTS).toContain(c.verdict);
      expect(c.measured).toMatch(/\d/);
      expect(c.because.length).toBeGreaterThan(5);
      expect(c.uncertainty.length).toBeGreaterThan(3);
    }
    // A ratio claim's verdict follows from its measured ratio and band (recomputed here).
    const table1 = readFileSync(join(out, 'table1.csv'), 'utf8').trim().split('\n');
    expect(table1[0]).toMatch(/^domain,policy,paper_method,mat,utilisation,throughput,speedup_vs_ar,speedup_min,speedup_max,modelled_speedup_vs_ar/);
    const throughput = readFileSync(join(out, 'throughput.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
    expect(new Set(throughput.map((cells) => cells[2]))).toEqual(new Set([String(suggestKmax({ kmax: clockFromSpec('cpu-laptop').costs.knee }, 1)), String(suggestKmax({ kmax: clockFromSpec('cpu-laptop').costs.knee }, 3))]));
    expect(throughput.every((cells) => Number(cells[9]) > 0)).toBe(true); // modelled throughput in every row
    expect(table1).toHaveLength(1 + 2 * 7); // two domains × six policies and the A/A control
    expect(table1.filter((l) => l.endsWith(',false'))).toEqual([]); // lossless: every run emitted ar's tokens
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    for (const section of ['Claims', 'Figs. 2 and 6–9', 'Table 1: batch 1', 'Figs. 1 and 5', 'Where the budget goes', 'Fig. 4', 'Hand-off to serving engines']) expect(html).toContain(`<h2>${section}`);
    // Where the budget went: every drafting policy at every batch size, explained on the same
    // steps the runs took, with the oracle gate never below the run and the random gate beside it.
    const explain = parseCsv(readFileSync(join(out, 'explain.csv'), 'utf8').trim());
    const col = (name: string) => explain[0].indexOf(name);
    const explained = explain.slice(1);
    expect(explained.map((cells) => `${cells[col('batch')]}:${cells[col('policy')]}`).sort()).toEqual(['1:dense', '1:echo', '1:fixed', '1:static', '3:dense', '3:echo', '3:fixed', '3:static']);
    for (const cells of explained) {
      expect(Number(cells[col('oracle_accepted')])).toBeGreaterThanOrEqual(Number(cells[col('accepted')]));
      expect(Number(cells[col('reach')])).toBeGreaterThanOrEqual(Number(cells[col('accepted')]));
      expect(Number(cells[col('oracle_verified_tokens')])).toBeLessThanOrEqual(Number(cells[col('verified_tokens')]) + Number(cells[col('reach')]));
      expect(cells[col('candidates_seen')]).toBe('true');
      expect(Number(cells[col('steps')])).toBeGreaterThan(0);
    }
    expect(html).toMatch(/echo against static, per batch size/);
    expect(html).toMatch(/<b>Batch 3<\/b> \(K_max \d+\): echo ÷ static \d\.\d{3}/);
    expect((html.match(/<svg /g) ?? []).length).toBeGreaterThanOrEqual(5);
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/); // self-contained: nothing fetched, nothing run
    expect(html).toContain('Qwen3-235B'); // the paper's numbers beside the measured ones
    expect(html).toContain('Throughput against batch size (code, modelled)');
    // The hand-off names the study's real folders, in the mode of its drafter (a separate draft model).
    const serving = readFileSync(join(out, 'serving.txt'), 'utf8');
    expect(serving).toContain(`--model-path ${pair.targetDir} --speculative-algorithm STANDALONE --speculative-draft-model-path ${pair.draftDir} `);
    expect(serving).toMatch(/--speculative-echo-threshold [\d.]+\n/);
    expect(serving).toContain(`vllm serve ${pair.targetDir} --speculative-config '{"method":"draft_model","model":"${pair.draftDir}"`);
    // A bad flag is one clear line before anything loads.
    await expect(runCli(register, ['reproduce', '--domains', 'nope', '--out', out])).rejects.toThrow(/unknown domain "nope"/);
    writeFileSync(join(tmp.path, 'file'), '');
    await expect(runCli(register, ['reproduce', '--out', join(tmp.path, 'file')])).rejects.toThrow(/is a file; give a folder/);
    await expect(runCli(register, ['reproduce', '--cuts', 'soft', '--out', out])).rejects.toThrow(/--cuts/);
  }, 240_000);
});

describe('shownPath', () => {
  it('writes a folder under the working directory relative to it, and any other as given', () => {
    expect(shownPath('/home/me/echo/assets/models/echo-demo-draft', '/home/me/echo')).toBe('assets/models/echo-demo-draft');
    expect(shownPath('/data/models/target', '/home/me/echo')).toBe('/data/models/target');
    expect(shownPath('/home/me/echo', '/home/me/echo')).toBe('/home/me/echo');
  });
});
