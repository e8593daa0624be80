// Trace replay and export through the engine host: a live run's recording, exported and opened in
// a fresh host, replays the same steps and metrics; seek rebuilds the picture at a step; a cut file
// replays up to the cut and names the bad line.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineHost } from '../../src/host/host.js';
import type { RunMetrics, StepEvent } from '../../src/shared/events.js';
import type { FrameEvent } from '../../src/shared/messages.js';
import { tempDir } from '../engine/model/helpers.js';
import { connectClient, tinyConfig, writeTinyPair } from './run-fixtures.js';

const tmp = tempDir('echo-host-trace-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let modelsDir: string;
let tracePath: string;
let liveSteps: StepEvent[];
let liveMetrics: RunMetrics;
let pair: ReturnType<typeof writeTinyPair>;

const newHost = () => {
  const host = new EngineHost({ version: 'test', modelsDir, log: () => {} });
  return { host, client: connectClient(host) };
};
const frames = (events: { type: string }[]) => events.filter((e): e is FrameEvent => e.type === 'frame');
/** Steps as a JSON transport carries them (-Infinity log q becomes null). */
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value));

beforeAll(async () => {
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  pair = writeTinyPair(tmp.path);
  modelsDir = join(tmp.path, 'models');
  mkdirSync(modelsDir);
  // One live run, exported as JSONL: the trace every test below replays.
  const { host, client } = newHost();
  client.send({ type: 'run.start', config: tinyConfig(pair, { policy: 'echo', taus: { '0': 0.2, '2': 0.3 }, requests: 4, maxNewTokens: 16 }) });
  await client.next('run.state', (e) => e.state === 'finished');
  liveSteps = client.steps();
  const last = frames(client.events).at(-1)!;
  liveMetrics = last.metrics!;
  tracePath = join(tmp.path, 'live.jsonl');
  client.send({ type: 'trace.export', path: tracePath, format: 'jsonl' });
  const done = await client.next('progress', (e) => e.task === 'export');
  expect(done.message).toContain(`exported ${liveSteps.length} steps as jsonl to ${tracePath}`);
  client.close();
  await host.shutdown();
});
afterAll(() => {
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

describe('engine host trace replay', () => {
  it('replays an opened trace with the same steps, metrics and histograms as the live run', async () => {
    expect(liveSteps.length).toBeGreaterThan(3);
    expect(liveSteps.some((s) => s.requests.some((r) => r.gates.length > 0))).toBe(true);
    const { host, client } = newHost();
    client.send({ type: 'trace.open', path: tracePath });
    await client.next('run.state', (e) => e.state === 'finished');
    expect(asJson(client.steps())).toEqual(asJson(liveSteps));
    const replayed = frames(client.events);
    expect(replayed[0].steps[0].step).toBe(0); // the studio starts clean on step 0
    expect(replayed.at(-1)!.metrics).toEqual(liveMetrics);
    expect(replayed.at(-1)!.histograms!.length).toBeGreaterThan(0);
    expect(client.events.some((e) => e.type === 'error')).toBe(false);
    client.close();
    await host.shutdown();
  });

  it('seeks: re-sends steps 0…N with the metrics as they stood at step N', async () => {
    const { host, client } = newHost();
    client.send({ type: 'trace.open', path: tracePath });
    await client.next('run.state', (e) => e.state === 'finished');
    const seekTo = 2;
    const before = client.events.length;
    client.send({ type: 'trace.seek', step: seekTo });
    const frame = await client.next('frame');
    expect(client.events.indexOf(frame)).toBeGreaterThanOrEqual(before);
    expect(frame.steps.map((s) => s.step)).toEqual([0, 1, 2]);
    expect(asJson(frame.steps)).toEqual(asJson(liveSteps.slice(0, 3)));
    expect(frame.metrics!.steps).toBe(3);
    expect(frame.metrics!.generatedTokens).toBe(liveSteps.slice(0, 3).reduce((n, s) => n + s.requests.reduce((m, r) => m + r.emitted.length, 0), 0));
    // Past the end: the whole run, with its recorded metrics.
    client.send({ type: 'trace.seek', step: 10_000 });
    const whole = await client.next('frame');
    expect(whole.steps.length).toBe(liveSteps.length);
    expect(whole.metrics).toEqual(liveMetrics);
    client.close();
    await host.shutdown();
  });

  it('gives a client that says hello later the picture at the replay position', async () => {
    const { host, client } = newHost();
    client.send({ type: 'trace.open', path: tracePath });
    await client.next('run.state', (e) => e.state === 'finished');
    client.send({ type: 'trace.seek', step: 1 });
    await client.next('frame', (f) => f.steps.length === 2);
    const late = connectClient(host);
    late.send({ type: 'hello' });
    expect((await late.next('status')).runState).toBe('finished');
    const frame = await late.next('frame');
    expect(asJson(frame.steps)).toEqual(asJson(liveSteps.slice(0, 2)));
    expect(frame.metrics!.steps).toBe(2);
    late.close();
    client.close();
    await host.shutdown();
  });

  it("seeks in a finished run's own recording, and a late client gets the run up to there, read a frame at a time", async () => {
    const { host, client } = newHost();
    client.send({ type: 'run.start', config: tinyConfig(pair, { policy: 'echo', taus: { '0': 0.2, '2': 0.3 }, requests: 4, maxNewTokens: 16 }) });
    await client.next('run.state', (e) => e.state === 'finished');
    const steps = client.steps();
    const runMetrics = frames(client.events).filter((f) => f.metrics !== undefined).at(-1)!.metrics;
    client.send({ type: 'trace.seek', step: 2 });
    const frame = await client.next('frame', (f) => f.metrics !== undefined);
    expect(frame.steps.map((s) => s.step)).toEqual([0, 1, 2]);
    expect(frame.metrics!.steps).toBe(3);
    const late = connectClient(host);
    late.send({ type: 'hello' });
    expect((await late.next('status')).runState).toBe('finished');
    const lateFrame = await late.next('frame', (f) => f.metrics !== undefined);
    expect(asJson(lateFrame.steps)).toEqual(asJson(steps.slice(0, 3)));
    // Back to the end: the whole run with the metrics it streamed live.
    client.send({ type: 'trace.seek', step: 10_000 });
    const whole = await client.next('frame', (f) => f.metrics !== undefined);
    expect(asJson(whole.steps)).toEqual(asJson(steps));
    expect(whole.metrics).toEqual(runMetrics);
    late.close();
    client.close();
    await host.shutdown();
  });

  it('skips a garbage line in the middle, names it, and replays every step after it', async () => {
    const lines = readFileSync(tracePath, 'utf8').split('\n');
    // Header, step 0, garbage where step 1 was, then the rest of the run.
    const damaged = join(tmp.path, 'garbage.jsonl');
    writeFileSync(damaged, [lines[0], lines[1], '{"type":"step", garbage', ...lines.slice(3)].join('\n'));
    const { host, client } = newHost();
    client.send({ type: 'trace.open', path: damaged });
    const opened = await client.next('progress', (e) => e.task === 'trace' && e.done === e.total && /^opened /.test(e.message ?? ''));
    expect(opened.message).toMatch(/skipped bad line 3 /);
    expect(asJson(client.steps())).toEqual(asJson([liveSteps[0], ...liveSteps.slice(2)]));
    client.close();
    await host.shutdown();
  });

  it('replays a cut trace up to the cut and names the bad line', async () => {
    const lines = readFileSync(tracePath, 'utf8').split('\n');
    // Header, steps 0 and 1, then step 2 cut mid-line (a crash while writing it).
    const cut = join(tmp.path, 'cut.jsonl');
    writeFileSync(cut, [lines[0], lines[1], lines[2], lines[3].slice(0, Math.floor(lines[3].length / 2))].join('\n'));
    const { host, client } = newHost();
    client.send({ type: 'trace.open', path: cut });
    const error = await client.next('error');
    expect(error.message).toMatch(/line 4/);
    expect(error.message).toContain('replaying the 2 steps before it');
    await client.next('run.state', (e) => e.state === 'finished');
    expect(asJson(client.steps())).toEqual(asJson(liveSteps.slice(0, 2)));

    const bad = join(tmp.path, 'not-a-trace.jsonl');
    writeFileSync(bad, '{"hello":"world"}\n');
    client.send({ type: 'trace.open', path: bad });
    expect((await client.next('error')).message).toMatch(/^cannot open trace .*not-a-trace\.jsonl: /);
    client.close();
    await host.shutdown();
  });

  it('exports the opened trace as CSV, Perfetto and Parquet', async () => {
    const { host, client } = newHost();
    client.send({ type: 'trace.export', path: join(tmp.path, 'nothing.csv'), format: 'csv' });
    expect((await client.next('error')).message).toMatch(/no run or trace/);
    client.send({ type: 'trace.open', path: tracePath });
    await client.next('run.state', (e) => e.state === 'finished');
    const csv = join(tmp.path, 'out.csv');
    client.send({ type: 'trace.export', path: csv, format: 'csv' });
    await client.next('progress', (e) => e.task === 'export');
    const rows = readFileSync(csv, 'utf8').trim().split('\r\n');
    expect(rows.length).toBe(1 + liveSteps.reduce((n, s) => n + s.requests.length, 0));
    const perfetto = join(tmp.path, 'out.perfetto.json');
    client.send({ type: 'trace.export', path: perfetto, format: 'perfetto' });
    await client.next('progress', (e) => e.task === 'export');
    expect(JSON.parse(readFileSync(perfetto, 'utf8')).traceEvents.length).toBeGreaterThan(liveSteps.length);
    const parquet = join(tmp.path, 'out');
    client.send({ type: 'trace.export', path: parquet, format: 'parquet' });
    const done = await client.next('progress', (e) => e.task === 'export');
    expect(done.message).toContain('out.steps.parquet');
    expect(existsSync(`${parquet}.steps.parquet`) && statSync(`${parquet}.steps.parquet`).size).toBeGreaterThan(0);

    // A name no file system takes is one line, not a Node stack trace with file positions.
    for (const [name, why] of [
      ['a\0b.csv', /may not hold a NUL byte/],
      [`${'x'.repeat(300)}.csv`, /name is 304 bytes long, and a file name may have at most 255/],
      [`${'y'.repeat(250)}`, /name is 264 bytes long/], // Parquet's table files add `.steps.parquet`
    ] as const) {
      client.send({ type: 'trace.export', path: join(tmp.path, name), format: name.startsWith('y') ? 'parquet' : 'csv' });
      const refused = await client.next('error');
      expect(refused.message).toMatch(why);
      expect(refused.message).not.toContain('\n');
      expect(refused.detail).toBeUndefined();
    }
    // The longest name a folder holds still exports: the temporary name beside it is cut to fit.
    const longest = join(tmp.path, `${'z'.repeat(251)}.csv`);
    client.send({ type: 'trace.export', path: longest, format: 'csv' });
    await client.next('progress', (e) => e.task === 'export');
    expect(readFileSync(longest, 'utf8')).toBe(readFileSync(csv, 'utf8'));
    client.close();
    await host.shutdown();
  });
});
