// Studio runs through the engine host on a tiny random pair: run.start → progress → frames →
// finished; knobs, pause, single step, resume and stop between steps; errors as one event.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineHost } from '../../src/host/host.js';
import { writeFixtureModel, writeSwappedVocabModel } from '../engine/model/fixtures.js';
import { writePassThroughHead } from '../engine/fixtures/head.js';
import { connectClient, tinyConfig, useTinyPairHost } from './run-fixtures.js';

const fixture = useTinyPairHost('echo-host-run-');
const newHost = (log?: (line: string) => void) => fixture.newHost(log);

const asJson = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('engine host runs', () => {
  it('loads the pair with progress, streams steps under the cap with histograms and metrics, and finishes', async () => {
    const { host, client } = newHost();
    const config = tinyConfig(fixture.pair, { kmax: 10 });
    client.send({ type: 'run.start', config });
    await client.next('run.state', (e) => e.state === 'loading');
    const load = await client.next('progress', (e) => e.task === 'load');
    expect(load.total).toBeGreaterThan(0);
    await client.next('run.state', (e) => e.state === 'running');
    await client.next('run.state', (e) => e.state === 'finished');

    const steps = client.steps();
    expect(steps.length).toBeGreaterThan(2);
    expect(steps.map((s) => s.step)).toEqual(steps.map((_, i) => i));
    const emitted = new Map<string, number>();
    for (const step of steps) {
      expect(step.kmax).toBe(10);
      expect(step.verifiedTokens).toBeLessThanOrEqual(10);
      expect(step.verifiedTokens).toBe(step.requests.reduce((n, r) => n + 1 + r.nodes.filter((x) => x.depth >= 0 && x.verified).length, 0));
      for (const r of step.requests) {
        expect(r.emitted.length).toBeGreaterThan(0); // every request-step makes progress
        emitted.set(r.requestId, (emitted.get(r.requestId) ?? 0) + r.emitted.length);
      }
    }
    expect([...emitted.keys()].sort()).toEqual(['p0', 'p1', 'p2', 'p3']);
    for (const n of emitted.values()) expect(n).toBeLessThanOrEqual(24);
    expect(steps.some((s) => s.requests.some((r) => r.emittedText !== undefined))).toBe(true);

    const frames = client.events.filter((e) => e.type === 'frame');
    const last = frames[frames.length - 1];
    expect(last.type === 'frame' && last.metrics?.steps).toBe(steps.length);
    expect(last.type === 'frame' && last.metrics?.generatedTokens).toBe([...emitted.values()].reduce((a, b) => a + b, 0));
    expect(last.type === 'frame' && last.histograms && last.histograms.length).toBeGreaterThan(0);
    expect(client.events.some((e) => e.type === 'error')).toBe(false);

    // The host keeps serving: a second run starts on the same host.
    client.send({ type: 'run.start', config: { ...config, requests: 1, maxNewTokens: 4 } });
    await client.next('run.state', (e) => e.state === 'running');
    await client.next('run.state', (e) => e.state === 'finished');
    client.close();
    await host.shutdown();
  });

  it("reports an echo run's warm-up as progress: prompt runs finished out of all, up to all", async () => {
    const { host, client } = newHost();
    // No τ_d and no profile: echo calibrates on a warm-up over the run's 6 prompts, once per signal.
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { policy: 'echo', requests: 2, maxNewTokens: 8 }) });
    const done = await client.next('progress', (e) => e.task === 'calibrate' && e.total === 12 && e.done === 12);
    expect(done.message).toBe('warm-up: 12 of 12 prompt runs finished');
    const counts = client.events.flatMap((e) => (e.type === 'progress' && e.task === 'calibrate' && e.total === 12 ? [e.done] : []));
    expect(counts.length).toBeGreaterThan(2);
    expect(counts).toEqual(counts.slice().sort((a, b) => a - b));
    await client.next('run.state', (e) => e.state === 'finished' || e.state === 'error');
    client.close();
    await host.shutdown();
  });

  it('raises the batch past the loaded KV slots between steps, with progress, and lowers it without a reallocation', async () => {
    const { host, client } = newHost();
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { batch: 2, kmax: 16, requests: 12, maxNewTokens: 40 }) });
    const started = await client.next('knobs');
    await client.next('run.state', (e) => e.state === 'running');
    // The memory plan's bound comes with the knobs, with the reason it stops there.
    expect(started.batchLimit!.max).toBeGreaterThan(2);
    expect(started.batchLimit!.beyond).not.toBe('');
    client.send({ type: 'run.pause' });
    await client.next('run.state', (e) => e.state === 'paused');
    client.send({ type: 'knobs.set', knobs: { batch: 8 } });
    expect((await client.next('knobs', (e) => e.batch === 8)).refused).toBeUndefined();
    const before = client.steps().length;
    client.send({ type: 'run.step' });
    const grown = await client.next('progress', (e) => e.task === 'slots' && e.done === e.total);
    expect(grown.message).toBe('reallocating the KV caches: 2 → 8 slots');
    await client.next('run.state', (e) => e.state === 'paused');
    const stepped = client.steps().slice(before);
    expect(stepped).toHaveLength(1);
    expect(stepped[0].requests.length).toBe(8);
    // Down again: no reallocation, and the places free up as requests finish.
    const slotEvents = client.events.filter((e) => e.type === 'progress' && e.task === 'slots').length;
    client.send({ type: 'knobs.set', knobs: { batch: 1 } });
    await client.next('knobs', (e) => e.batch === 1);
    client.send({ type: 'run.resume' });
    await client.next('run.state', (e) => e.state === 'finished');
    expect(client.events.filter((e) => e.type === 'progress' && e.task === 'slots')).toHaveLength(slotEvents);
    expect(client.steps().at(-1)!.requests.length).toBe(1);
    expect(client.events.some((e) => e.type === 'error')).toBe(false);
    client.close();
    await host.shutdown();
  });

  it('pauses, takes exactly one step per run.step, applies knobs from the next step, resumes and stops', async () => {
    const { host, client } = newHost();
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { kmax: 16, requests: 6, maxNewTokens: 40 }) });
    await client.next('run.state', (e) => e.state === 'running');
    client.send({ type: 'run.pause' });
    await client.next('run.state', (e) => e.state === 'paused');
    const before = client.steps().length;
    expect(before).toBeGreaterThan(0);
    expect(client.steps().every((s) => s.kmax === 16)).toBe(true);

    // A page opened now (or reloaded) gets the steps so far, then follows the run like the others.
    const late = connectClient(host);
    late.send({ type: 'hello' });
    expect((await late.next('status')).runState).toBe('paused');
    expect(asJson((await late.next('frame')).steps)).toEqual(asJson(client.steps()));

    client.send({ type: 'knobs.set', knobs: { kmax: 5 } });
    client.send({ type: 'run.step' });
    await client.next('run.state', (e) => e.state === 'paused');
    const afterOne = client.steps();
    expect(afterOne.length).toBe(before + 1);
    const stepped = afterOne[afterOne.length - 1];
    expect(stepped.kmax).toBe(5);
    expect(stepped.verifiedTokens).toBeLessThanOrEqual(5);

    // A K_max below the requests in flight is refused with the reason; the run goes on.
    client.send({ type: 'knobs.set', knobs: { kmax: 1 } });
    expect((await client.next('error')).message).toMatch(/K_max \(1\) is below/);

    // A trace cannot be opened into a live run (its frames would mix with the run's).
    client.send({ type: 'trace.open', path: join(fixture.root, 'any.jsonl') });
    expect((await client.next('error')).message).toMatch(/a run is in progress: stop it before opening a trace/);

    client.send({ type: 'run.resume' });
    await client.next('run.state', (e) => e.state === 'running');
    client.send({ type: 'run.stop' });
    await client.next('run.state', (e) => e.state === 'finished');
    const all = client.steps();
    expect(all.slice(before).every((s) => s.kmax === 5)).toBe(true);
    await late.next('run.state', (e) => e.state === 'finished'); // its own channel may lag behind
    expect(asJson(late.steps())).toEqual(asJson(all));
    late.close();
    expect(all.map((s) => s.step)).toEqual(all.map((_, i) => i));
    client.close();
    await host.shutdown();
  });

  it('applies new τ_d from the next step: the gate checks carry the new thresholds', async () => {
    const { host, client } = newHost();
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { policy: 'echo', taus: { '0': 0.2, '2': 0.3 }, requests: 6, maxNewTokens: 40 }) });
    await client.next('run.state', (e) => e.state === 'running');
    client.send({ type: 'run.pause' });
    await client.next('run.state', (e) => e.state === 'paused');
    const gatesBefore = client.steps().flatMap((s) => s.requests.flatMap((r) => r.gates));
    expect(gatesBefore.length).toBeGreaterThan(0);
    expect(new Set(gatesBefore.filter((g) => g.depth === 0).map((g) => g.tau))).toEqual(new Set([0.2]));

    client.send({ type: 'knobs.set', knobs: { taus: { '0': 0.05, '2': 0.3 } } });
    client.send({ type: 'run.step' });
    await client.next('run.state', (e) => e.state === 'paused');
    const stepped = client.steps().at(-1)!;
    const gatesAfter = stepped.requests.flatMap((r) => r.gates).filter((g) => g.depth === 0);
    expect(gatesAfter.length).toBeGreaterThan(0);
    expect(new Set(gatesAfter.map((g) => g.tau))).toEqual(new Set([0.05]));
    expect(gatesAfter.every((g) => g.pass === g.confidence > 0.05)).toBe(true);
    client.send({ type: 'run.stop' });
    await client.next('run.state', (e) => e.state === 'finished');
    // The recording notes the change at the step it took effect, so a replay shows it there.
    const recording = join(fixture.root, 'knobs.jsonl');
    client.send({ type: 'trace.export', path: recording, format: 'jsonl' });
    await client.next('progress', (e) => e.task === 'export');
    const knobLines = readFileSync(recording, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === 'knobs');
    expect(knobLines).toEqual([{ type: 'knobs', step: stepped.step, knobs: { taus: { '0': 0.05, '2': 0.3 } } }]);
    client.close();
    await host.shutdown();
  });

  it('shuts down mid-run: the loop ends after its step and the recording is removed', async () => {
    const { host, client } = newHost();
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { requests: 6, maxNewTokens: 40 }) });
    await client.next('run.state', (e) => e.state === 'running');
    await client.next('frame');
    const ours = () => readdirSync(join(tmpdir(), 'echo-studio-runs')).filter((f) => f.endsWith(`-${process.pid}.jsonl`));
    expect(ours().length).toBe(1);
    await host.shutdown();
    expect(ours()).toEqual([]);
  });

  it('reports bad configs and unusable models as one error, sets run state error, and keeps serving', async () => {
    const log: string[] = [];
    const { host, client } = newHost((line) => log.push(line));
    // Refused at the boundary by the RunConfig schema: the run never starts.
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { batch: 4, kmax: 3 }) });
    expect((await client.next('error')).message).toMatch(/K_max \(3\) is below the batch size \(4\)/);

    const missing = join(fixture.root, 'no-such-model');
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { draftDir: missing }) });
    await client.next('run.state', (e) => e.state === 'error');
    const gone = await client.next('error');
    expect(gone.message).toMatch(/^cannot start the run: /);
    expect(gone.message).toContain(missing);
    expect(gone.message).not.toContain('\n');
    expect(gone).not.toHaveProperty('detail'); // a refusal: its message is the whole story, no stack

    const otherDraft = join(fixture.root, 'other-vocab');
    writeSwappedVocabModel(otherDraft, { seed: 4, hiddenSize: 32 });
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { draftDir: otherDraft }) });
    await client.next('run.state', (e) => e.state === 'error');
    const differ = await client.next('error');
    expect(differ.message).toMatch(/draft and target vocabularies differ/);
    expect(differ).not.toHaveProperty('detail');

    // A draft folder whose config.json cannot be read (here it is a folder): the folder is at
    // fault, so the refusal names the file and carries no stack.
    const unreadable = join(fixture.root, 'config-is-a-folder');
    mkdirSync(join(unreadable, 'config.json'), { recursive: true });
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { draftDir: unreadable }) });
    await client.next('run.state', (e) => e.state === 'error');
    const unread = await client.next('error');
    expect(unread.message).toBe(`cannot start the run: ${join(unreadable, 'config.json')}: cannot be read (EISDIR)`);
    expect(unread).not.toHaveProperty('detail');

    // The bundled pair is not in this host's models folder.
    const { draftDir: _d, targetDir: _t, ...bundled } = tinyConfig(fixture.pair);
    client.send({ type: 'run.start', config: bundled });
    await client.next('run.state', (e) => e.state === 'error');
    expect((await client.next('error')).message).toMatch(/bundled demo pair \(echo-demo-draft, echo-demo-target\) is not installed/);

    client.send({ type: 'run.pause' });
    const pause = await client.next('error');
    expect(pause.message).toMatch(/no run is in progress to pause/);
    expect(pause).not.toHaveProperty('detail');
    // The host logs each refused start and request in one line, with no stack.
    expect(log).toHaveLength(5);
    expect(log[0]).toBe(gone.message);
    expect(log[2]).toBe(unread.message);
    expect(log[3]).toMatch(/^cannot start the run: the bundled demo pair .* is not installed/);
    expect(log[4]).toBe('run.pause failed: no run is in progress to pause');
    for (const line of log) expect(line).not.toContain('\n');

    client.send({ type: 'hello' });
    expect((await client.next('status')).runState).toBe('error');
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { requests: 1, maxNewTokens: 3 }) });
    await client.next('run.state', (e) => e.state === 'finished');
    client.close();
    await host.shutdown();
  });

  it('finds the bundled demo pair through the host’s model scan', async () => {
    const bundledDir = join(fixture.root, 'bundled');
    mkdirSync(bundledDir);
    const { cpSync } = await import('node:fs');
    cpSync(fixture.pair.draftDir, join(bundledDir, 'echo-demo-draft'), { recursive: true });
    cpSync(fixture.pair.targetDir, join(bundledDir, 'echo-demo-target'), { recursive: true });
    const host = new EngineHost({ version: 'test', modelsDir: bundledDir, log: () => {} });
    const client = connectClient(host);
    const { draftDir: _d, targetDir: _t, ...config } = tinyConfig(fixture.pair, { requests: 1, maxNewTokens: 4 });
    client.send({ type: 'run.start', config });
    await client.next('run.state', (e) => e.state === 'finished');
    expect(client.steps().length).toBeGreaterThan(0);
    client.close();
    await host.shutdown();
  });

  it('takes an EAGLE-3 head folder: model.open describes it, and a run drafts with it', async () => {
    const targetDir = join(fixture.root, 'head-target');
    const headDir = join(fixture.root, 'head');
    writePassThroughHead(headDir, writeFixtureModel(targetDir, { seed: 21, hiddenSize: 32, numLayers: 2 }));
    const { host, client } = newHost();
    client.send({ type: 'model.open', dir: headDir });
    const info = await client.next('progress', (e) => e.task === 'model');
    expect(info.message).toMatch(/EAGLE-3 draft head, .* parameters, 1 layer, hidden 32/);
    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { draftDir: headDir, targetDir, requests: 2, maxNewTokens: 8 }) });
    await client.next('run.state', (e) => e.state === 'finished');
    expect(client.steps().length).toBeGreaterThan(0);
    client.close();
    await host.shutdown();
  });

  it('validates a folder on model.open and describes it in one line', async () => {
    const { host, client } = newHost();
    client.send({ type: 'model.open', dir: fixture.pair.targetDir });
    const info = await client.next('progress', (e) => e.task === 'model');
    expect(info.message).toMatch(/llama, .* parameters .* 2 layers, hidden 32/);
    client.send({ type: 'model.open', dir: join(fixture.root, 'nowhere') });
    const bad = await client.next('error');
    expect(bad.message).toMatch(/^cannot use .*nowhere as a model: /);
    client.close();
    await host.shutdown();
  });
});
