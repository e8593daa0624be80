// The `trace` CLI commands, driven through commander as the real binary does.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { register, summariseTrace } from '../../../src/cli/commands/trace.js';
import { TraceRecorder } from '../../../src/engine/trace/writer.js';
import { atBaselineStepCost } from '../../../src/shared/step-costs.js';
import type { SyntheticRunOptions } from '../../engine/metrics/synthetic-run.js';
import { RUN_OPTIONS, tempDir, testHeader, testRun } from '../../engine/trace/fixtures.js';

function recordedTrace(options: SyntheticRunOptions = RUN_OPTIONS): { file: string; dir: string } {
  const dir = tempDir();
  const file = path.join(dir, 'run.jsonl');
  const recorder = new TraceRecorder(file, testHeader(options));
  for (const e of testRun(options)) recorder.step(e);
  recorder.finish('finished', { wallMs: testRun(options).at(-1)!.t + 3 });
  return { file, dir };
}

async function cli(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  const program = new Command('echo-studio').exitOverride().configureOutput({ writeErr: (s) => (stderr += s), writeOut: (s) => (stdout += s) });
  register(program);
  try {
    await program.parseAsync(args, { from: 'user' });
  } finally {
    vi.restoreAllMocks();
  }
  return { stdout, stderr };
}

afterEach(() => vi.restoreAllMocks());

describe('echo-studio trace compare', () => {
  it('puts one run against another: throughput, the steps each took and what each step cost', async () => {
    // The same requests and tokens (every synthetic request runs to its length), drafted one layer
    // deep instead of four: more steps.
    const run = recordedTrace();
    const base = recordedTrace({ ...RUN_OPTIONS, depth: 1 });
    const report = JSON.parse((await cli('trace', 'compare', run.file, base.file, '--json')).stdout);
    const [m, b] = [report.run.metrics, report.base.metrics];
    expect(m.generatedTokens).toBe(b.generatedTokens);
    expect(m.steps).toBeLessThan(b.steps);
    expect(report.comparison.throughput).toBeCloseTo(m.throughput / b.throughput, 12);
    expect(report.comparison.steps).toMatchObject({ run: m.steps, base: b.steps });
    expect(report.comparison.steps.sched).toBeCloseTo(atBaselineStepCost(m, b), 12);
    expect(report.caveats).toEqual([]);
    const text = (await cli('trace', 'compare', run.file, base.file)).stdout;
    expect(text).toMatch(new RegExp(`steps ${m.steps} to ${b.steps}, each [\\d.]+x the time; at echo's step cost [\\d.]+x`));

    // Other work: only throughput compares, and the report says why.
    const fewer = recordedTrace({ ...RUN_OPTIONS, requests: 3 });
    const other = JSON.parse((await cli('trace', 'compare', run.file, fewer.file, '--json')).stdout);
    expect(other.comparison.steps).toBeNull();
    expect(other.caveats).toEqual([expect.stringMatching(/^different work \(5 requests, 120 tokens against 3 requests, 72 tokens\): only throughput compares$/)]);
  });
});

describe('echo-studio trace summary', () => {
  it("prints the recorded run's metrics, recomputed from the file", async () => {
    const { file } = recordedTrace();
    const recorded = JSON.parse(readFileSync(file, 'utf8').trim().split('\n').at(-1)!).metrics;
    const { stdout } = await cli('trace', 'summary', file, '--json');
    const report = JSON.parse(stdout);
    expect(report.metrics).toEqual(recorded);
    expect(report.ended).toBe(true);
    expect(report.endReason).toBe('finished');
    const text = (await cli('trace', 'summary', file)).stdout;
    expect(text).toMatch(/ended: finished/);
    expect(text).toMatch(new RegExp(`throughput\\s+${recorded.throughput.toFixed(1)} tok/s`));
    expect(text).toMatch(/mean accepted tokens\s+\d+\.\d{3} per request-step \(bonus excluded\)/);
    expect(text).toMatch(/time per step\s+drafting [\d.]+ ms · verification [\d.]+ ms · prefill [\d.]+ ms · the rest [\d.]+ ms/);
    expect(text).not.toMatch(/attention window/);
    // A run whose draft read a bounded past says so.
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const header = JSON.parse(lines[0]);
    header.models.draft = { ...header.models.draft, precision: 'int8', window: { sink: 4, recent: 16 } };
    const windowed = path.join(path.dirname(file), 'windowed.jsonl');
    writeFileSync(windowed, [JSON.stringify(header), ...lines.slice(1)].join('\n') + '\n');
    expect((await cli('trace', 'summary', windowed)).stdout).toMatch(/\n {2}draft\s+int8 weights · attention window 4:16 \(sink:recent rows\)\n/);
  });

  it('counts layers a gate cut before verification apart from the AUC, as unverified', async () => {
    const { file, dir } = recordedTrace();
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    // In the first step, the first request's gate cuts depth 0 and nothing of it is verified.
    const first = JSON.parse(lines[1]);
    const r = first.requests[0];
    r.nodes = r.nodes.map((n: { depth: number; verified: boolean }) => ({ ...n, verified: n.depth < 0 }));
    r.confidences = [];
    r.gates = [{ depth: 0, confidence: 0.01, tau: 0.5, pass: false }];
    r.accepted = [];
    r.emitted = [r.bonusToken];
    const gated = path.join(dir, 'gated.jsonl');
    writeFileSync(gated, [lines[0], JSON.stringify(first), ...lines.slice(2)].join('\n') + '\n');
    const report = JSON.parse((await cli('trace', 'summary', gated, '--json')).stdout);
    const before = JSON.parse((await cli('trace', 'summary', file, '--json')).stdout);
    const unverifiedAt0 = (h: { unverified: number[] }) => h.unverified.reduce((a, b) => a + b, 0);
    expect(unverifiedAt0(report.histograms[0])).toBe(unverifiedAt0(before.histograms[0]) + 1);
    expect((await cli('trace', 'summary', gated)).stdout).toMatch(
      new RegExp(`\\n {2}unverified layers\\s+d0 ${unverifiedAt0(report.histograms[0])}\\b.* \\(never verified: no outcome, not in the AUC\\)\\n`),
    );
    // The cut layer is neither accepted nor rejected.
    const labelled = (h: { accepted: number[]; rejected: number[] }) => [...h.accepted, ...h.rejected].reduce((a, b) => a + b, 0);
    expect(labelled(report.histograms[0])).toBe(labelled(before.histograms[0]) - 1);
  });

  it('summarises a cut file up to the cut and warns with the line', async () => {
    const { file, dir } = recordedTrace();
    const text = readFileSync(file, 'utf8');
    const cut = path.join(dir, 'cut.jsonl');
    writeFileSync(cut, text.slice(0, text.length - 40)); // inside the summary line
    const { stdout, stderr } = await cli('trace', 'summary', cut, '--json');
    const steps = testRun().length;
    expect(stderr).toMatch(new RegExp(`warning: .*cut\\.jsonl: line ${steps + 2} is cut short.*using the ${steps} steps before it`));
    expect(JSON.parse(stdout).ended).toBe(false);
    expect((await summariseTrace(cut)).metrics.steps).toBe(steps);
  });
});

describe('echo-studio trace export', () => {
  it('writes each format where --out says', async () => {
    const { file, dir } = recordedTrace();
    const parquet = await cli('trace', 'export', file, '--format', 'parquet', '--out', path.join(dir, 'tables'));
    expect(parquet.stdout.trim().split('\n').map((p) => path.basename(p))).toEqual([
      'tables.steps.parquet',
      'tables.requests.parquet',
      'tables.nodes.parquet',
      'tables.gates.parquet',
    ]);
    for (const f of parquet.stdout.trim().split('\n')) expect(readFileSync(f).subarray(0, 4).toString()).toBe('PAR1');
    await cli('trace', 'export', file, '--format', 'perfetto', '--out', path.join(dir, 'run.json'));
    expect(JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')).traceEvents.length).toBeGreaterThan(0);
    await cli('trace', 'export', file, '--format', 'csv', '--out', path.join(dir, 'run.csv'));
    expect(readFileSync(path.join(dir, 'run.csv'), 'utf8')).toMatch(/^step,t_ms,request_id/);
  });

  it('refuses an unknown format and a missing --out', async () => {
    const { file, dir } = recordedTrace();
    await expect(cli('trace', 'export', file, '--format', 'xlsx', '--out', path.join(dir, 'x'))).rejects.toThrow(/Allowed choices are parquet, perfetto, csv/);
    await expect(cli('trace', 'export', file, '--format', 'csv')).rejects.toThrow(/required option '--out <path>'/);
    expect(existsSync(path.join(dir, 'x'))).toBe(false);
  });

  it('fails with the reason when the input is not a trace', async () => {
    const dir = tempDir();
    const notTrace = path.join(dir, 'notes.jsonl');
    writeFileSync(notTrace, '{"hello":"world"}\n');
    await expect(cli('trace', 'summary', notTrace)).rejects.toThrow(/line 1 is not an echo-studio-trace header/);
  });
});
