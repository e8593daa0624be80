// One big trace must not stall the studio: `echo-studio serve` (a real process, with its forked
// engine host) opens a trace of 100k steps — a small recorded run's step lines repeated — while
// other browser clients keep connecting; each is answered within a second, both processes stay
// under a stated memory bound, the first client gets every step, a second open can be cancelled,
// and once every client has gone the engine host lets the file go.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseEvent, type EngineEvent, type EngineRequest } from '../../src/shared/messages.js';
import { tempDir } from '../engine/model/helpers.js';
import { missingBuild, repoRoot } from './helpers.js';
import { recordTinyTrace } from './run-fixtures.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping the big trace test: ${skipReason}`);

const STEPS = 100_000;
/**
 * Peak resident memory each process may reach while opening and replaying the trace. The trace
 * file is about 60 MB; held as parsed steps it took the engine host several times its size.
 */
const PEAK_RSS_BOUND_MB = 300;
/** How long a client that says hello may wait for its answer while the trace replays. */
const HELLO_BOUND_MS = 1000;

const tmp = tempDir('echo-big-trace-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let serve: ChildProcess | null = null;
let port = 0;
let token = '';
let tracePath = '';

/** Peak and current resident memory of a process, MB (Linux /proc). */
function memoryOf(pid: number): { peakMb: number; nowMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
  return { peakMb: kb('VmHWM') / 1024, nowMb: kb('VmRSS') / 1024 };
}

/** The engine host: the serve process's one child. */
function enginePid(): number {
  const children = readFileSync(`/proc/${serve!.pid}/task/${serve!.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  expect(children).toHaveLength(1);
  return Number(children[0]);
}

/** Whether a process has `file` open. */
function holdsOpen(pid: number, file: string): boolean {
  return readdirSync(`/proc/${pid}/fd`).some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });
}

beforeAll(async () => {
  if (skipReason) return;
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  const data = join(tmp.path, 'data');
  mkdirSync(data);
  const small = join(tmp.path, 'small.jsonl');
  const { modelsDir } = await recordTinyTrace(tmp.path, small, { batch: 1, requests: 1, maxNewTokens: 12, shape: { depth: 2, topk: 1, tokens: 2 } });
  // The header, then the recorded step lines over and over, renumbered (steps must increase).
  const lines = readFileSync(small, 'utf8').trim().split('\n');
  const templates = lines
    .map((line) => JSON.parse(line) as { type: string; step?: number; t?: number })
    .filter((record) => record.type === 'step')
    .map((record) => JSON.stringify({ ...record, step: -1, t: -2 }).replace('"step":-1', '"step":%S').replace('"t":-2', '"t":%T'));
  tracePath = join(data, 'big.jsonl');
  const body: string[] = [lines[0]];
  for (let k = 0; k < STEPS; k++) body.push(templates[k % templates.length].replace('%S', String(k)).replace('%T', String(k * 2 + 2)));
  writeFileSync(tracePath, `${body.join('\n')}\n`);

  serve = spawn(process.execPath, [join(repoRoot, 'bin', 'echo-studio.js'), 'serve', '--port', '0', '--data-dir', data, '--models-dir', modelsDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<URL>((resolve, reject) => {
    let out = '';
    serve!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /serving at (http:\/\/\S+)/.exec(out);
      if (match) resolve(new URL(match[1]));
    });
    serve!.once('exit', (code) => reject(new Error(`serve exited (${code}): ${out}`)));
  });
  port = Number(url.port);
  token = url.searchParams.get('token')!;
}, 120_000);
afterAll(async () => {
  if (serve && serve.exitCode === null) {
    const exited = new Promise((resolve) => serve!.once('exit', resolve));
    serve.kill('SIGTERM');
    await exited;
  }
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

/** A browser client that keeps no frames, only what the test asks about. */
async function connect(onEvent: (event: EngineEvent) => void = () => {}) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}`, { origin: `http://127.0.0.1:${port}` });
  const listeners = new Set<(event: EngineEvent) => void>([onEvent]);
  ws.on('message', (raw) => {
    const message = JSON.parse(raw.toString()) as EngineEvent;
    // Frames are counted, not checked (the studio's transport checks them; here it would only slow the test).
    const parsed = message.type === 'frame' ? { ok: true as const, value: message } : parseEvent(message);
    if (!parsed.ok) throw new Error(parsed.error);
    for (const listener of listeners) listener(parsed.value);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    send: (request: EngineRequest) => ws.send(JSON.stringify(request)),
    /** Resolves with the first event from now on that `match` accepts. */
    next: (match: (event: EngineEvent) => boolean) =>
      new Promise<EngineEvent>((resolve) => {
        const listener = (event: EngineEvent) => {
          if (!match(event)) return;
          listeners.delete(listener);
          resolve(event);
        };
        listeners.add(listener);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close();
      }),
  };
}

/** A fresh client says hello; resolves with how long the answer took (the status the web host sends on connect does not count). */
async function helloLatencyMs(): Promise<number> {
  const client = await connect();
  const started = performance.now();
  const answered = client.next((e) => e.type === 'status');
  client.send({ type: 'hello' });
  await answered;
  const ms = performance.now() - started;
  await client.close();
  return ms;
}

describe.skipIf(skipReason !== null)('a trace of 100k steps', () => {
  it('replays whole while other clients are answered within a second, in bounded memory, and is let go when everyone leaves', async () => {
    const engine = enginePid();
    let steps = 0;
    let lastFrame: EngineEvent | null = null;
    const progress: string[] = [];
    const first = await connect((event) => {
      if (event.type === 'frame') {
        steps += event.steps.length;
        if (event.metrics) lastFrame = event;
      }
      if (event.type === 'progress' && event.task === 'trace') progress.push(`${event.done}/${event.total}`);
    });
    // As the studio's page does: hello first (the engine host's first answer reads its models folder cold).
    const greeted = first.next((e) => e.type === 'status');
    first.send({ type: 'hello' });
    await greeted;
    const finished = first.next((e) => (e.type === 'run.state' && e.state === 'finished') || e.type === 'error');
    first.send({ type: 'trace.open', path: tracePath });

    // Other clients keep arriving while it is read and replayed.
    const latencies: number[] = [];
    let done = false;
    void finished.then(() => (done = true));
    while (!done) {
      latencies.push(await helloLatencyMs());
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await finished).toMatchObject({ type: 'run.state', state: 'finished' });
    expect(steps).toBe(STEPS);
    expect(lastFrame).toMatchObject({ metrics: { steps: STEPS } });
    expect(progress.length).toBeGreaterThan(2); // reading, then replaying
    expect(latencies.length).toBeGreaterThan(3);
    const sorted = [...latencies].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(0);
    console.log(`hello answered in ${at(0.5)} ms (median), ${at(0.9)} ms (90th percentile), at most ${at(1)} ms: ${latencies.length} clients while opening a ${STEPS}-step trace`);
    expect(Math.max(...latencies)).toBeLessThan(HELLO_BOUND_MS);

    const web = memoryOf(serve!.pid!);
    const host = memoryOf(engine);
    console.log(`peak RSS: web host ${web.peakMb.toFixed(0)} MB, engine host ${host.peakMb.toFixed(0)} MB`);
    expect(web.peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);
    expect(host.peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);

    // A second open, cancelled while it reads: the studio says so and opens nothing.
    const cancelled = first.next((e) => e.type === 'progress' && e.task === 'trace' && e.done >= e.total);
    const reading = first.next((e) => e.type === 'progress' && e.task === 'trace');
    first.send({ type: 'trace.open', path: tracePath });
    await reading;
    first.send({ type: 'trace.cancel' });
    expect(await cancelled).toMatchObject({ message: expect.stringMatching(/cancelled|stopped/) });

    // Everyone leaves: the engine host lets the trace go.
    expect(holdsOpen(engine, tracePath)).toBe(true);
    await first.close();
    const deadline = performance.now() + 5000;
    while (holdsOpen(engine, tracePath) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(holdsOpen(engine, tracePath)).toBe(false);
  }, 240_000);
});
