// Outputs never destroy inputs or each other: every output path is checked before any work, an
// existing file is replaced only with --force (atomically), and `run --out` keeps what finished.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { register as registerCalibrate } from '../../src/cli/commands/calibrate.js';
import { register as registerProfileHw } from '../../src/cli/commands/profile-hw.js';
import { register as registerRun } from '../../src/cli/commands/run.js';
import { register as registerTrace } from '../../src/cli/commands/trace.js';
import { checkOutputPaths, writeAtomically } from '../../src/cli/output-files.js';
import { TraceRecorder } from '../../src/engine/trace/writer.js';
import { tinyPairFolders } from '../engine/model/tiny-pair-folders.js';
import { RUN_OPTIONS, testHeader, testRun } from '../engine/trace/fixtures.js';
import { missingBuild, repoRoot } from '../host/helpers.js';
import { runCli } from './helpers.js';

const tmp = tinyPairFolders('echo-outputs-');
const { targetDir, draftDir } = tmp;
let promptsFile: string;

beforeAll(() => {
  promptsFile = join(tmp.path, 'prompts.jsonl');
  writeFileSync(promptsFile, '{"id":"a","prompt":"def add(x, y):"}\n{"id":"b","prompt":"Once upon a time"}\n');
});

const file = (name: string) => join(tmp.path, name);
const runArgs = (...extra: string[]) => ['run', '--policy', 'chain', '--prompts', promptsFile, '--requests', '2', '--max-new-tokens', '3', '--draft', draftDir, '--target', targetDir, '--json', ...extra];

describe('output paths, checked before any work', () => {
  it('refuses an existing file without --force, naming the flag, and leaves it alone', () => {
    writeFileSync(file('taken.json'), 'keep me');
    expect(() => checkOutputPaths([{ flag: '--out', path: file('taken.json') }])).toThrow(/^--out: .*taken\.json exists; pass --force to replace it$/);
    expect(() => checkOutputPaths([{ flag: '--out', path: file('taken.json') }], { force: true })).not.toThrow();
    expect(readFileSync(file('taken.json'), 'utf8')).toBe('keep me');
  });

  it('refuses a missing folder, a folder in the way, and a read-only folder', () => {
    expect(() => checkOutputPaths([{ flag: '--trace', path: file('nowhere/t.jsonl') }])).toThrow(/^--trace: the folder .*nowhere does not exist$/);
    mkdirSync(file('a-folder'));
    expect(() => checkOutputPaths([{ flag: '--out', path: file('a-folder') }], { force: true })).toThrow(/a-folder is a folder/);
    if (process.getuid?.() !== 0) {
      mkdirSync(file('read-only'));
      chmodSync(file('read-only'), 0o555);
      expect(() => checkOutputPaths([{ flag: '--out', path: file('read-only/x.json') }])).toThrow(/^--out: cannot write in the folder/);
    }
  });

  it('refuses two outputs, or an output and an input, that are one file — through links and other spellings too, even with --force', () => {
    writeFileSync(file('in.jsonl'), 'input');
    symlinkSync(file('in.jsonl'), file('link.jsonl'));
    const input = { flag: '--prompts', path: file('in.jsonl') };
    expect(() => checkOutputPaths([{ flag: '--out', path: file('link.jsonl') }], { inputs: [input], force: true })).toThrow(
      /^--out and --prompts name the same file .*an output never replaces an input$/,
    );
    expect(() => checkOutputPaths([{ flag: '--out', path: file('o.jsonl') }, { flag: '--trace', path: join(tmp.path, '.', 'o.jsonl') }])).toThrow(
      /^--trace and --out name the same file .*each output needs its own file$/,
    );
  });

  it('writes atomically: a failed write leaves the old file and no temporary behind', async () => {
    writeFileSync(file('atomic.txt'), 'old');
    await expect(
      writeAtomically(file('atomic.txt'), (temporary) => {
        writeFileSync(temporary, 'half');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readFileSync(file('atomic.txt'), 'utf8')).toBe('old');
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    await writeAtomically(file('atomic.txt'), (temporary) => writeFileSync(temporary, 'new'));
    expect(readFileSync(file('atomic.txt'), 'utf8')).toBe('new');
  });
});

describe('each command checks its outputs before it works', () => {
  it('run: --out over the prompts file, --out and --trace as one file, an existing --out: refused before loading anything', async () => {
    const prompts = readFileSync(promptsFile, 'utf8');
    await expect(runCli(registerRun, runArgs('--out', promptsFile, '--force'))).rejects.toThrow(/--out and --prompts name the same file/);
    expect(readFileSync(promptsFile, 'utf8')).toBe(prompts);
    await expect(runCli(registerRun, runArgs('--out', file('both.jsonl'), '--trace', file('both.jsonl')))).rejects.toThrow(/--trace and --out name the same file/);
    await expect(runCli(registerRun, runArgs('--out', file('missing/out.jsonl'), '--trace', file('t1.jsonl')))).rejects.toThrow(/--out: the folder .* does not exist/);
    expect(existsSync(file('t1.jsonl'))).toBe(false); // nothing started
    writeFileSync(file('old-out.jsonl'), 'previous results\n');
    await expect(runCli(registerRun, runArgs('--out', file('old-out.jsonl')))).rejects.toThrow(/--out: .*old-out\.jsonl exists; pass --force/);
    expect(readFileSync(file('old-out.jsonl'), 'utf8')).toBe('previous results\n');
    await runCli(registerRun, runArgs('--out', file('old-out.jsonl'), '--trace', file('t2.jsonl'), '--force'));
    expect(readFileSync(file('old-out.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).id)).toEqual(['a', 'b']);
    // An existing trace is replaced only with --force too, and then whole.
    await expect(runCli(registerRun, runArgs('--trace', file('t2.jsonl')))).rejects.toThrow(/--trace: .*t2\.jsonl exists; pass --force/);
    await runCli(registerRun, runArgs('--trace', file('t2.jsonl'), '--force'));
    expect(JSON.parse(readFileSync(file('t2.jsonl'), 'utf8').trim().split('\n').at(-1)!).type).toBe('summary');
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('trace export: --out onto its own input is refused, an existing --out needs --force', async () => {
    const trace = file('export-me.jsonl');
    const recorder = new TraceRecorder(trace, testHeader(RUN_OPTIONS));
    for (const e of testRun(RUN_OPTIONS)) recorder.step(e);
    recorder.finish('finished', { wallMs: 1000 });
    const before = readFileSync(trace, 'utf8');
    await expect(runCli(registerTrace, ['trace', 'export', trace, '--format', 'csv', '--out', trace, '--force'])).rejects.toThrow(/--out and the trace file name the same file/);
    expect(readFileSync(trace, 'utf8')).toBe(before);
    writeFileSync(file('export.csv'), 'old');
    await expect(runCli(registerTrace, ['trace', 'export', trace, '--format', 'csv', '--out', file('export.csv')])).rejects.toThrow(/pass --force/);
    await runCli(registerTrace, ['trace', 'export', trace, '--format', 'csv', '--out', file('export.csv'), '--force']);
    expect(readFileSync(file('export.csv'), 'utf8')).toMatch(/^step,/);
    // Parquet writes one file per table: each is checked.
    writeFileSync(file('tables.steps.parquet'), 'old');
    await expect(runCli(registerTrace, ['trace', 'export', trace, '--format', 'parquet', '--out', file('tables')])).rejects.toThrow(/tables\.steps\.parquet exists; pass --force/);
    expect(existsSync(file('tables.requests.parquet'))).toBe(false);
  });

  it('calibrate and profile-hw: a missing folder or an existing --out fails before any measurement', async () => {
    const started = performance.now();
    await expect(runCli(registerCalibrate, ['calibrate', '--draft', draftDir, '--target', targetDir, '--prompts', promptsFile, '--out', file('none/p.json')])).rejects.toThrow(/--out: the folder .* does not exist/);
    writeFileSync(file('hw.json'), '{}');
    await expect(runCli(registerProfileHw, ['profile-hw', '--target', targetDir, '--out', file('hw.json')])).rejects.toThrow(/--out: .*hw\.json exists; pass --force/);
    expect(readFileSync(file('hw.json'), 'utf8')).toBe('{}');
    await expect(runCli(registerCalibrate, ['calibrate', '--draft', draftDir, '--target', targetDir, '--prompts', promptsFile, '--out', promptsFile])).rejects.toThrow(/--out and --prompts name the same file/);
    expect(performance.now() - started).toBeLessThan(5000); // refused, not measured
  });
});

const skipReason = missingBuild();
describe.skipIf(skipReason !== null)('run --out, killed mid-run', () => {
  it('keeps one JSON line for every request that finished before the kill', async () => {
    const many = file('many.jsonl');
    writeFileSync(many, Array.from({ length: 50 }, (_, i) => `{"id":"p${i}","prompt":"x = ${i}"}`).join('\n'));
    const out = file('killed-out.jsonl');
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'bin', 'echo-studio.js'), 'run', '--policy', 'ar', '--prompts', many, '--requests', '5000', '--max-new-tokens', '64', '--draft', draftDir, '--target', targetDir, '--out', out],
      { cwd: repoRoot, env: { ...process.env, ECHO_STUDIO_CACHE: join(tmp.path, 'cache') }, stdio: 'ignore' },
    );
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    const deadline = Date.now() + 30_000; // the whole run would take minutes
    while (Date.now() < deadline && !(existsSync(out) && statSync(out).size > 0 && readFileSync(out, 'utf8').split('\n').length > 3)) {
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL'); // killed, not finished
    const lines = readFileSync(out, 'utf8').split('\n').filter((l) => l.endsWith('}'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) expect(Object.keys(JSON.parse(line))).toEqual(['id', 'prompt', 'tokens', 'text', 'finish']);
  }, 90_000);
});
