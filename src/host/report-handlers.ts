// Reports in the engine host. report.open reads a folder `echo-studio reproduce` wrote and answers
// with what the studio shows of it (how it was made, each claim's verdict, the tables, the page).
// report.quick runs the quick study (`reproduce --quick`) into a new folder under the studio's
// data folder: the CLI's own command in a child process, so the study is the same one the command
// line runs, its log lines become progress, it never blocks this host's event loop, and cancelling
// it is ending that process (the report's files are written only at the very end, so a cancelled
// study leaves nothing behind). One study at a time, and none while a run is live: both would
// share the cores and the study's timings would mean nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BUNDLED_DRAFT, BUNDLED_TARGET, readReport, Refusal } from '../engine/index.js';
import type { RequestOf } from '../shared/messages.js';
import type { HandlerModule, HostContext } from './handler-context.js';
import { findPackageRoot } from './paths.js';

/** The quick study's domains when the request names none (the command's default). */
const DEFAULT_DOMAINS = ['code', 'prose', 'math'];

/** Where the studio's reports go, under its data folder. */
export const REPORTS_FOLDER = 'reports';

/** The command-line arguments of the quick study a request asks for. */
export function quickStudyArgs(request: Omit<RequestOf<'report.quick'>, 'type'>, pair: { draftDir: string; targetDir: string }, out: string): string[] {
  return [
    'reproduce',
    '--quick',
    '--out',
    out,
    '--draft',
    pair.draftDir,
    '--target',
    pair.targetDir,
    ...(request.domains ? ['--domains', request.domains.join(',')] : []),
    ...(request.batches ? ['--batches', request.batches.join(',')] : []),
    ...(request.requests !== undefined ? ['--requests', String(request.requests)] : []),
    ...(request.maxNewTokens !== undefined ? ['--max-new-tokens', String(request.maxNewTokens)] : []),
  ];
}

/**
 * The study's phases as its log announces them: loading the pair, the duration probe, then per
 * domain a calibration and Table 1, then throughput against batch size. Each announcement ends the
 * phase before it, so the bar shows phases done.
 */
const PHASE_START = /^(loading the pair|expected duration|\[)/;

/** A new, empty folder for a report made now: reports/quick-2026-12-01T19-40-12 (-2, -3… on a clash). */
function newReportFolder(dataDir: string, now = new Date()): string {
  const base = path.join(dataDir, REPORTS_FOLDER, `quick-${now.toISOString().slice(0, 19).replace(/:/g, '-')}`);
  let out = base;
  for (let k = 2; existsSync(out); k++) out = `${base}-${k}`;
  return out;
}

async function studyPair(host: HostContext, request: RequestOf<'report.quick'>): Promise<{ draftDir: string; targetDir: string }> {
  if ((request.draftDir === undefined) !== (request.targetDir === undefined)) {
    throw new Refusal('name both a draft and a target folder, or neither for the bundled demo pair');
  }
  if (request.draftDir !== undefined && request.targetDir !== undefined) {
    // Outside the folders this studio may read, or not there: one answer, before anything runs.
    return { draftDir: host.files.readable(path.resolve(host.dataDir, request.draftDir)), targetDir: host.files.readable(path.resolve(host.dataDir, request.targetDir)) };
  }
  const models = (await host.refreshStatus()).bundledModels;
  const draftDir = models.find((m) => m.name === BUNDLED_DRAFT)?.dir;
  const targetDir = models.find((m) => m.name === BUNDLED_TARGET)?.dir;
  if (draftDir === undefined || targetDir === undefined) {
    throw new Refusal(`the bundled demo pair (${BUNDLED_DRAFT}, ${BUNDLED_TARGET}) is not installed; name a draft and a target folder in the Run form`);
  }
  return { draftDir, targetDir };
}

/** The CLI's own error line, without its program-name prefix. */
function lastErrorLine(stderr: string[]): string {
  const line = [...stderr].reverse().find((l) => l.trim() !== '') ?? 'it stopped without saying why';
  return line.replace(/^(echo-studio|error): /, '').trim();
}

export const reportHandlers: HandlerModule = ({ host, study }) => {
  let child: ChildProcess | null = null;
  let cancelled = false;

  host.onShutdown(() => {
    cancelled = true;
    child?.kill('SIGTERM');
  });

  const runStudy = (args: string[], out: string, phases: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const entry = path.join(findPackageRoot(import.meta.url), 'dist', 'cli', 'main.js');
      if (!existsSync(entry)) {
        reject(new Error(`${entry} is missing: build the package first (npm run build)`));
        return;
      }
      // Inside the desktop app this process runs on Electron's binary, which runs a script as Node only when told.
      const env = process.versions.electron ? { ...process.env, ELECTRON_RUN_AS_NODE: '1' } : process.env;
      const proc = spawn(process.execPath, [entry, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env });
      child = proc;
      const stderr: string[] = [];
      let started = 0;
      let partial = '';
      proc.stderr!.setEncoding('utf8');
      proc.stderr!.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          stderr.push(line);
          if (stderr.length > 50) stderr.shift();
          if (line.trim() === '') continue;
          if (PHASE_START.test(line)) started++;
          host.progress('study', Math.min(phases - 1, Math.max(0, started - 1)), phases, line.trim());
        }
      });
      proc.on('error', reject);
      proc.on('close', (code, signal) => {
        if (partial !== '') stderr.push(partial);
        if (code === 0) resolve();
        else if (cancelled) reject(new Error('cancelled'));
        else reject(new Error(lastErrorLine(stderr) + (signal ? ` (ended by ${signal})` : '')));
      });
    });

  return {
    'report.open'({ dir }, ctx) {
      try {
        // Outside the folders this studio may read (the web host's), or not there: one answer.
        ctx.reply({ type: 'report', ...readReport(host.files.readable(path.resolve(host.dataDir, dir))) });
      } catch (err) {
        ctx.reply({ type: 'error', message: `cannot open the report: ${(err as Error).message.split('\n')[0]}` });
      }
    },

    async 'report.quick'(request, ctx) {
      const state = host.status().runState;
      if (state === 'loading' || state === 'running' || state === 'paused') {
        ctx.reply({ type: 'error', message: `cannot start the quick study while a run is ${state}: both would share the cores and its timings would mean nothing; stop the run first` });
        return;
      }
      if (study.running) {
        ctx.reply({ type: 'error', message: 'the quick study is already running: cancel it or wait for its report' });
        return;
      }
      study.running = true;
      cancelled = false;
      const domains = request.domains ?? DEFAULT_DOMAINS;
      const phases = 2 + 2 * domains.length + 1;
      let out: string | null = null;
      try {
        const pair = await studyPair(host, request);
        out = newReportFolder(host.dataDir);
        mkdirSync(path.dirname(out), { recursive: true });
        if (cancelled) throw new Error('cancelled');
        host.progress('study', 0, phases, `starting the quick study on ${path.basename(pair.draftDir)} · ${path.basename(pair.targetDir)}`);
        await runStudy(quickStudyArgs(request, pair, out), out, phases);
        const report = readReport(out);
        host.progress('study', phases, phases, `report written to ${out}`);
        ctx.reply({ type: 'report', ...report });
      } catch (err) {
        // Nothing half-written stays behind: the folder is new and only this study writes in it.
        if (out !== null) rmSync(out, { recursive: true, force: true });
        if (cancelled) {
          host.progress('study', phases, phases, 'the quick study was cancelled; no report was written');
          return;
        }
        host.progress('study', phases, phases);
        ctx.reply({ type: 'error', message: `the quick study failed: ${(err as Error).message.split('\n')[0]}` });
      } finally {
        child = null;
        study.running = false;
      }
    },

    'report.cancel'() {
      if (!study.running) throw new Refusal('no quick study is running to cancel');
      cancelled = true;
      child?.kill('SIGTERM');
    },
  };
};
